package gops

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RoIAlignOpts are the parameters of RoIAlign, named as in
// torchvision.ops.roi_align.
type RoIAlignOpts struct {
	// OutputSize is the (height, width) of each pooled output, in bins.
	OutputSize [2]int
	// SpatialScale multiplies box coordinates (image pixels) to give
	// input coordinates (feature-map pixels), for example 1/16 for a
	// stride-16 feature map. 0 means 1.
	SpatialScale float64
	// SamplingRatio is the number of sample points per bin side. <= 0 means
	// adaptive: ceil(roi size / output size) per box and side.
	SamplingRatio int
	// Aligned shifts box coordinates by -0.5 pixel so that a box's corners
	// fall on pixel centres (and does not clamp the roi size to 1).
	Aligned bool
}

// RoIAlign pools each box of boxes from input with bilinear sampling, as
// torchvision.ops.roi_align (Mask R-CNN's RoIAlign).
//
// input is [N, C, H, W]; boxes is [K, 5] with rows (batch_index, x1, y1, x2,
// y2) in image coordinates, in input's dtype (float32 or float64). The
// result is [K, C, OutputSize[0], OutputSize[1]].
//
// The result is linear in input and differentiable to every order w.r.t.
// input and boxes, mixed input×box and x×y terms included (use ad.Grad;
// torchvision gives boxes no gradient). Box gradients follow the sample
// points, which are affine in the box coordinates, through the bilinear
// interpolation. Where the function has kinks, the conventions are: the
// cells, the adaptive grid size (SamplingRatio <= 0), the averaging count,
// the unaligned max(size, 1) clamp and the inside/outside decisions are
// piecewise constant (derivative 0; a clamped roi size, size < 1, gives
// d/d(y1) = spatial_scale and d/d(y2) = 0 for every sample, likewise x); a
// sample coordinate clamped by torchvision's y <= 0 → 0 rule or its last-row
// (last-column) rule has derivative 0 in that coordinate; a sample exactly
// on an integer takes the derivative of the cell floor() selects (the
// right-sided one). The batch-index column gets a zero gradient. Box
// gradients are computed only when ad.Grad needs them; their kernels have
// CUDA twins (roialignbox_cuda.go), built and linked but not yet run on a
// GPU.
//
// Semantics are torchvision's in every detail (roi size clamp when not
// aligned, the boundary rule of the bilinear interpolation, adaptive
// sampling grid, averaging count), except where torchvision fails: a batch
// index that is not an integer in [0, N), or a non-finite coordinate, is a
// run-time error naming the box (torchvision reads out of bounds); an
// inverted box with Aligned and adaptive sampling pools to zeros
// (torchvision throws a vector-size error). K = 0 gives an empty
// [0, C, PH, PW] result.
//
// A box whose sampling grid would exceed 2²⁴ points (adaptive sampling of
// an enormous box) is a run-time error; sample points whose coordinates
// overflow to a non-finite value sample nothing.
//
// Errors when the node is built: input not 4-D or with H or W of 0, boxes
// not [K, 5], dtypes differ or are not float32/float64, OutputSize not
// positive or beyond 2²⁴ bins, SamplingRatio beyond 2²⁴ samples per box,
// SpatialScale negative, not finite, or (for float32) beyond float32's
// range.
func RoIAlign(input, boxes *gorgonia.Node, opts RoIAlignOpts) (*gorgonia.Node, error) {
	const name = "RoIAlign"
	s, err := checkRoINodes(name, input, boxes)
	if err != nil {
		return nil, err
	}
	if err := checkOutputSize(name, opts.OutputSize); err != nil {
		return nil, err
	}
	if err := checkSamplingRatio(name, opts.SamplingRatio, opts.OutputSize); err != nil {
		return nil, err
	}
	scale, err := spatialScaleOrOne(name, opts.SpatialScale, input.Dtype())
	if err != nil {
		return nil, err
	}
	g := &cpu.RoIAlignGeom{
		N: s[0], C: s[1], H: s[2], W: s[3],
		PH: opts.OutputSize[0], PW: opts.OutputSize[1],
		Scale: scale, SamplingRatio: opts.SamplingRatio, Aligned: opts.Aligned,
	}
	f, _ := roiAlignSpecs(g)
	return ad.Apply(f, input, boxes)
}

// roiAlignSpecs is RoIAlign F(X, boxes) -> Y and its transpose
// Fᵀ(G, boxes) -> shape of X (the adjoint of F in X), a linear pair: each
// is the other's backward. They are member F_00 of the box family
// (roialignbox.go), which gives their box gradients.
func roiAlignSpecs(g *cpu.RoIAlignGeom) (f, ft ad.OpSpec) {
	shape, tshape := roiPairShapes("RoIAlign", tensor.Shape{g.N, g.C, g.H, g.W},
		func(k int) tensor.Shape { return tensor.Shape{k, g.C, g.PH, g.PW} })
	f = ad.OpSpec{
		Name:        "RoIAlign",
		Params:      roiAlignParams(g),
		InputDims:   []int{4, 2},
		OutputDims:  4,
		Shape:       shape,
		Kernel:      boxKernels(g, cpu.RoIAlignForward[float32], cpu.RoIAlignForward[float64]),
		BackwardFor: boxFamilyBackward(roiAlignMembers(g), 0, 0, false),
	}
	ft = f
	ft.Name, ft.Shape = "RoIAlignTranspose", tshape
	ft.Kernel = boxKernels(g, cpu.RoIAlignTranspose[float32], cpu.RoIAlignTranspose[float64])
	ft.BackwardFor = boxFamilyBackward(roiAlignMembers(g), 0, 0, true)
	return ad.LinearPair(withCUDA(f, roiAlignGPU{g, false}), withCUDA(ft, roiAlignGPU{g, true}))
}

// roiAlignParams describes RoIAlign's geometry for op hashes and printouts.
func roiAlignParams(g *cpu.RoIAlignGeom) string {
	return fmt.Sprintf("input=(%d,%d,%d,%d), output_size=(%d,%d), spatial_scale=%v, sampling_ratio=%d, aligned=%t",
		g.N, g.C, g.H, g.W, g.PH, g.PW, g.Scale, g.SamplingRatio, g.Aligned)
}

// roiAlignGPU is what the CUDA twins of RoIAlign and its transpose need
// (roialign_cuda.go).
type roiAlignGPU struct {
	g         *cpu.RoIAlignGeom
	transpose bool
}

// boxKernels is the ad.Kernel of a RoI op's CPU kernel k(g, data, boxes,
// out), for inputs (data, boxes).
func boxKernels[G any](g G, k32 func(G, []float32, []float32, []float32) error, k64 func(G, []float64, []float64, []float64) error) ad.Kernel {
	return ad.Floats(boxKernel(g, k32), boxKernel(g, k64))
}

func boxKernel[G any, T ad.Float](g G, k func(G, []T, []T, []T) error) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error { return k(g, in[0].Data, in[1].Data, out.Data) }
}
