package nn

import "github.com/gops-dev/gops/ad"

// fillTwin gives an op of ad.EmptyResult (the result of an op on an input
// without elements, filled with v) its CUDA twin, in the cuda build.
func fillTwin(spec ad.OpSpec, v float64) ad.OpSpec { return withCUDA(spec, fillGPU{v}) }

// The CUDA twin's descriptor (launch code in the *_cuda.go files; withCUDA
// ignores it in the CPU build).

// fillGPU is a result filled with v (the *Empty ops of ad.EmptyResult)
// (layout_cuda.go).
type fillGPU struct{ v float64 }
