//go:build cuda

package nn

import (
	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cuda/glue"
	"github.com/gops-dev/gops/internal/cuda/kernels"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// nn's side of the CUDA twins' plumbing (internal/cuda/glue), as gops/cuda.go:
// the kernels' PTX, withCUDA, which gives an op spec its twin, and the
// launch code's helpers. Each family's launch code is in its own *_cuda.go
// file, its kernels in internal/cuda/kernels/nn/*.cu, its descriptor in gpu.go. Unlike gops'
// kernels, nn's index with 64 bits: every integer kernel argument is a long
// long.

// gpuModules are the PTX modules of internal/cuda/kernels/nn, registered
// as gopsnn0, gopsnn1, ... (gops' are "gops0", ...).
var gpuModules = &glue.Module{Pkg: "nn", Name: "gopsnn", PTX: kernels.PTX("nn")}

func init() { gpuModules.Register() }

// gpuCall is one CUDADo: its device, the op's float dtype (Dt), temporary
// buffers and launches.
type gpuCall = glue.Call

// gpuKernel is a family's CUDA twin: its launch, in the family's *_cuda.go
// file, is the glue.Launcher that runs its kernels.
type gpuKernel interface {
	launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error
}

// withCUDA gives spec its CUDA twin k (glue's Module.WithCUDA).
func withCUDA(spec ad.OpSpec, k gpuKernel) ad.OpSpec {
	spec.CUDA = gpuModules.Twin(spec.Name, spec.Shape, spec.OutputDtype, k.launch)
	return spec
}

// fill writes v into the n elements of the op's float dtype at p.
func fill(c *gpuCall, sfx string, p cu.DevicePtr, v float64, n int) error {
	return c.Launch("layout_fill"+sfx, n, p, c.Float(v), n)
}

// ptr is a value's device pointer.
func ptr(v gorgonia.Value) cu.DevicePtr { return glue.Ptr(v) }

// size is a value's number of elements (1 for a scalar).
func size(v gorgonia.Value) int { return glue.Size(v) }
