//go:build !cuda

package gops

import "github.com/gops-dev/gops/ad"

// withCUDA gives spec its CUDA twin, described by gpu (the op's descriptor,
// declared beside it), in the cuda build (cuda.go); here it returns spec as
// it is.
func withCUDA(spec ad.OpSpec, gpu any) ad.OpSpec { return spec }

// fusedFocal says whether SigmoidFocalLoss uses its fused CPU kernels
// (focal.go); the cuda build keeps the formula in elementwise ops, whose
// CUDA twins run on the GPU.
const fusedFocal = true
