//go:build cuda

package gops

import (
	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cuda/glue"
)

// gops' side of the CUDA twins (internal/cuda/glue), as nn/cuda.go: its
// kernels registered with Gorgonia and withCUDA, which gives an op spec
// the twin its descriptor (a glue.Kernel) launches. Each family's
// descriptor is declared beside its op, its Launch is its *_cuda.go file,
// its kernels are internal/cuda/kernels/gops/*.cu (64-bit indices: every
// integer argument a long long).

// gpuModules are the PTX modules of internal/cuda/kernels/gops, registered
// with Gorgonia as gops0, gops1, ... (glue.Register).
var gpuModules = glue.Register("gops", "gops")

// withCUDA gives spec its CUDA twin, glue's Module.Twin of k's Launch.
func withCUDA(spec ad.OpSpec, k glue.Kernel) ad.OpSpec {
	spec.CUDA = gpuModules.Twin(spec.Name, spec.Shape, spec.OutputDtype, k.Launch)
	return spec
}

// fusedFocal: SigmoidFocalLoss's fused kernels have no CUDA twins, so the
// cuda build builds the loss from elementwise ops that do (focal.go).
const fusedFocal = false
