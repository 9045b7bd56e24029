//go:build cuda

package gops

import (
	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cuda/glue"
	"github.com/gops-dev/gops/internal/cuda/kernels"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// gops' side of the CUDA twins' plumbing (internal/cuda/glue): the kernels'
// PTX, withCUDA, which gives an op spec its twin, and the launch code's
// helpers. Each family's launch code is in its own *_cuda.go file, its
// kernels in internal/cuda/kernels/gops/*.cu. The kernels index with 64
// bits: every integer argument is a long long, as nn's.

// gpuModules are the PTX modules of internal/cuda/kernels/gops, registered
// as gops0, gops1, ...
var gpuModules = &glue.Module{Pkg: "gops", Name: "gops", PTX: kernels.PTX("gops")}

func init() { gpuModules.Register() }

// withCUDA gives spec its CUDA twin (glue's Module.WithCUDA): k.launch,
// in the family's *_cuda.go file, runs the kernels (a glue.Launcher).
func withCUDA(spec ad.OpSpec, k gpuKernel) ad.OpSpec {
	spec.CUDA = gpuModules.Twin(spec.Name, spec.Shape, spec.OutputDtype, k.launch)
	return spec
}

type (
	gpuKernel interface {
		launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error
	}
	gpuCall = glue.Call // one CUDADo: its device, buffers and launches
)

// download copies a device value's elements to the host.
func download[E any](c *gpuCall, v gorgonia.Value) ([]E, error) {
	return glue.Download[E](c, ptr(v), glue.Size(v))
}

// ptr is a value's device pointer.
func ptr(v gorgonia.Value) cu.DevicePtr { return glue.Ptr(v) }

// int64s is idx as the kernels' long long index tables.
func int64s(idx []int) []int64 {
	t := make([]int64, len(idx))
	for i, v := range idx {
		t[i] = int64(v)
	}
	return t
}
