//go:build !cuda

package nn

import "github.com/gops-dev/gops/ad"

// withCUDA gives spec its CUDA twin, described by gpu (the op's descriptor,
// declared beside it), in the cuda build (cuda.go); here it returns spec as
// it is.
func withCUDA(spec ad.OpSpec, gpu any) ad.OpSpec { return spec }

// fusedBatchNorm says that training BatchNorm runs as fused ops
// (batchnormfused.go), which have no CUDA twins: the cuda build keeps the
// composed graph.
const fusedBatchNorm = true
