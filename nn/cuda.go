//go:build cuda

package nn

import (
	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cuda/glue"
)

// nn's side of the CUDA twins (internal/cuda/glue), as gops/cuda.go: its
// kernels registered with Gorgonia and withCUDA, which gives an op spec
// the twin its descriptor (a glue.Kernel) launches. Each family's
// descriptor is declared beside its op, its Launch is its *_cuda.go file,
// its kernels are internal/cuda/kernels/nn/*.cu (64-bit indices: every
// integer argument a long long).

// gpuModules are the PTX modules of internal/cuda/kernels/nn, registered
// with Gorgonia as gopsnn0, gopsnn1, ... (glue.Register).
var gpuModules = glue.Register("nn", "gopsnn")

// withCUDA gives spec its CUDA twin, glue's Module.Twin of k's Launch.
func withCUDA(spec ad.OpSpec, k glue.Kernel) ad.OpSpec {
	spec.CUDA = gpuModules.Twin(spec.Name, spec.Shape, spec.OutputDtype, k.Launch)
	return spec
}

// fusedBatchNorm says that training BatchNorm runs as fused ops
// (batchnormfused.go), which have no CUDA twins: here it keeps the
// composed graph (batchNormComposed), whose ops have them.
const fusedBatchNorm = false
