//go:build cuda

package gops

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cuda/glue"
	"github.com/gops-dev/gops/internal/cuda/kernels"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// gops' side of the CUDA twins' plumbing (internal/cuda/glue): the kernels'
// PTX, withCUDA, which gives an op spec its twin, and the launch code's
// helpers. Each family's launch code is in its own *_cuda.go file, its
// kernels in internal/cuda/kernels/gops/*.cu. gops' kernels index with a C int: every integer
// argument is one, checked to fit int32 by gpuCall.Launch and fitInt32.

// gpuModules are the PTX modules of internal/cuda/kernels/gops, registered
// as gops0, gops1, ...
var gpuModules = &glue.Module{Pkg: "gops", Name: "gops", PTX: kernels.PTX("gops")}

func init() { gpuModules.Register() }

// withCUDA gives spec its CUDA twin (glue's Module.WithCUDA): k.launch,
// in the family's *_cuda.go file, runs the kernels (a glue.Launcher).
func withCUDA(spec ad.OpSpec, k gpuKernel) ad.OpSpec { return gpuModules.WithCUDA(spec, k.launch) }

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

// intSize is a size the kernels index with a C int.
type intSize struct {
	what string
	v    int
}

// fitInt32 checks that the inputs, the output and the given sizes fit the
// kernels' int (int32): H·W planes, packed box grids and bins, index arrays.
func fitInt32(c *gpuCall, in []gorgonia.Value, out gorgonia.Value, sizes ...intSize) error {
	for i, v := range in {
		sizes = append(sizes, intSize{fmt.Sprintf("input %d (%v)", i, v.Shape()), v.Shape().TotalSize()})
	}
	sizes = append(sizes, intSize{fmt.Sprintf("the result (%v)", out.Shape()), out.Shape().TotalSize()})
	for _, s := range sizes {
		if s.v < 0 || s.v > math.MaxInt32 {
			return fmt.Errorf("gops: %s: %s: %d elements exceed the CUDA kernels' int range", c.Name, s.what, s.v)
		}
	}
	return nil
}

func unsafePtr[E any](s []E) unsafe.Pointer { return unsafe.Pointer(&s[0]) }
