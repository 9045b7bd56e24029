//go:build cuda

package gops

import (
	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cuda/glue"
	"github.com/gops-dev/gops/internal/cuda/kernels"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// gops' side of the CUDA twins (internal/cuda/glue), as nn/cuda.go: its
// kernels registered with Gorgonia, and withCUDA, which gives an op spec
// the twin its descriptor launches. Each family's descriptor is declared
// beside its op, its launch code is its *_cuda.go file, its kernels are
// internal/cuda/kernels/gops/*.cu (64-bit indices: every integer argument
// a long long).

// gpuModules are the PTX modules of internal/cuda/kernels/gops, every one
// the folder holds (package kernels embeds them by pattern), registered as
// gops0, gops1, ...
var gpuModules = &glue.Module{Pkg: "gops", Name: "gops", PTX: kernels.PTX("gops")}

func init() { gpuModules.Register() }

// gpuCall is one CUDADo: its device, the op's float dtype (Dt), temporary
// buffers and launches.
type gpuCall = glue.Call

// gpuKernel is an op's CUDA descriptor, declared beside the op: its launch,
// in the family's *_cuda.go file, is the glue.Launcher that runs its
// kernels.
type gpuKernel interface {
	launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error
}

// withCUDA gives spec its CUDA twin, glue's Module.Twin of k's launch.
func withCUDA(spec ad.OpSpec, k gpuKernel) ad.OpSpec {
	spec.CUDA = gpuModules.Twin(spec.Name, spec.Shape, spec.OutputDtype, k.launch)
	return spec
}

// ptr is a value's device pointer.
func ptr(v gorgonia.Value) cu.DevicePtr { return glue.Ptr(v) }
