package gops

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// PSRoIAlignOpts are the parameters of PSRoIAlign, named as in
// torchvision.ops.ps_roi_align.
type PSRoIAlignOpts struct {
	// OutputSize is the (height, width) of each pooled output, in bins.
	// The input's channels must be a multiple of OutputSize[0]·OutputSize[1].
	OutputSize [2]int
	// SpatialScale multiplies box coordinates (image pixels) to give input
	// coordinates (feature-map pixels), for example 1/16 for a stride-16
	// feature map. 0 means 1.
	SpatialScale float64
	// SamplingRatio is the number of sample points per bin side. <= 0 means
	// adaptive: ceil(roi size / output size) per box and side.
	SamplingRatio int
}

// PSRoIAlign pools each box of boxes from input with bilinear sampling and
// position-sensitive channels, as torchvision.ops.ps_roi_align (R-FCN's
// position-sensitive RoI pooling, with RoIAlign's sampling).
//
// input is [N, C, H, W] with C a multiple of PH·PW (PH, PW = OutputSize);
// boxes is [K, 5] with rows (batch_index, x1, y1, x2, y2) in image
// coordinates, in input's dtype (float32 or float64). The result is
// [K, C/(PH·PW), PH, PW]: output channel c of bin (i, j) averages the
// bilinear samples of input channel c·PH·PW + i·PW + j in that bin.
//
// Geometry is torchvision's: coordinates times SpatialScale in the input's
// dtype, always shifted by -0.5 pixel (roi_align's aligned=True), no roi
// size clamp, SamplingRatio² samples per bin or an adaptive grid, and
// roi_align's bilinear boundary rule.
//
// The result is linear in input and differentiable w.r.t. input to every
// order (use Grad). It is not differentiable w.r.t. boxes: Grad returns an
// error when a gradient would have to flow into boxes.
//
// Differences from torchvision: a bin without samples (a box of zero or
// negative size with adaptive sampling) gives 0 where torchvision gives NaN
// (0/0); a batch index that is not an integer in [0, N), or a non-finite
// coordinate, is a run-time error naming the box (torchvision reads out of
// bounds); an adaptive grid beyond 2²⁴ samples per box is an error. K = 0
// gives an empty [0, C/(PH·PW), PH, PW] result.
//
// Errors when the node is built: input not 4-D or with H or W of 0, C not a
// multiple of PH·PW, boxes not [K, 5], dtypes differ or are not
// float32/float64, OutputSize not positive or beyond 2²⁴ bins,
// SamplingRatio beyond 2²⁴ samples per box, SpatialScale negative or not
// finite.
func PSRoIAlign(input, boxes *gorgonia.Node, opts PSRoIAlignOpts) (*gorgonia.Node, error) {
	g, err := newPSGeom("PSRoIAlign", input, boxes, opts.OutputSize, opts.SpatialScale)
	if err != nil {
		return nil, err
	}
	if err := checkSamplingRatio("PSRoIAlign", opts.SamplingRatio, opts.OutputSize); err != nil {
		return nil, err
	}
	g.SamplingRatio = opts.SamplingRatio
	return Apply(psForwardSpec(&psRoIAlignKernels, g), input, boxes)
}

// PSRoIPoolOpts are the parameters of PSRoIPool, named as in
// torchvision.ops.ps_roi_pool.
type PSRoIPoolOpts struct {
	// OutputSize is the (height, width) of each pooled output, in bins.
	// The input's channels must be a multiple of OutputSize[0]·OutputSize[1].
	OutputSize [2]int
	// SpatialScale multiplies box coordinates (image pixels) to give input
	// coordinates (feature-map pixels). 0 means 1.
	SpatialScale float64
}

// PSRoIPool average-pools each box of boxes from input with
// position-sensitive channels, as torchvision.ops.ps_roi_pool (R-FCN's
// position-sensitive RoI pooling).
//
// input is [N, C, H, W] with C a multiple of PH·PW (PH, PW = OutputSize);
// boxes is [K, 5] with rows (batch_index, x1, y1, x2, y2) in image
// coordinates, in input's dtype (float32 or float64). The result is
// [K, C/(PH·PW), PH, PW]: output channel c of bin (i, j) is the mean of
// input channel c·PH·PW + i·PW + j over that bin.
//
// Geometry: each coordinate times SpatialScale, computed in the input's
// dtype, is rounded half away from zero (C's round); the roi spans
// s = max(end - start, 1) pixels per side; bin (i, j) covers rows
// [floor(i·s/PH), ceil((i+1)·s/PH)) after the start (s/PH in the input's
// dtype), clipped to [0, H], and likewise columns; an empty bin gives 0.
//
// The result is linear in input and differentiable w.r.t. input to every
// order (use Grad). Box coordinates are rounded, so the result is piecewise
// constant in boxes: Grad gives boxes a zero gradient.
//
// Difference from torchvision, whose forward and backward disagree: its
// forward clips bins at H-1 and W-1 (dropping the last row and column of
// the input), its backward at H and W, and the backward rounds coordinates
// in float32 even for float64 input, so its gradient is not the derivative
// of its forward. PSRoIPool clips at [0, H] and [0, W] (as roi_pool) and
// rounds once, in the input's dtype, in both directions: value and gradient
// are consistent. Its value equals torchvision's for every box none of whose
// bins reaches the last row or column, and its gradient equals torchvision's
// wherever the float32 rounding does not change a coordinate. As the other
// RoI ops, a batch index that is not an integer in [0, N), or a non-finite
// coordinate, is a run-time error naming the box; rounded coordinates are
// clamped to ±2⁴⁰. K = 0 gives an empty result.
//
// Errors when the node is built: input not 4-D or with H or W of 0, C not a
// multiple of PH·PW, boxes not [K, 5], dtypes differ or are not
// float32/float64, OutputSize not positive or beyond 2²⁴ bins, SpatialScale
// negative or not finite.
func PSRoIPool(input, boxes *gorgonia.Node, opts PSRoIPoolOpts) (*gorgonia.Node, error) {
	g, err := newPSGeom("PSRoIPool", input, boxes, opts.OutputSize, opts.SpatialScale)
	if err != nil {
		return nil, err
	}
	return Apply(psForwardSpec(&psRoIPoolKernels, g), input, boxes)
}

// newPSGeom is newPoolGeom plus the channel rule of the position-sensitive
// ops.
func newPSGeom(name string, input, boxes *gorgonia.Node, size [2]int, scale float64) (*PoolGeom, error) {
	g, err := newPoolGeom(name, input, boxes, size, scale)
	if err != nil {
		return nil, err
	}
	if nb := g.PH * g.PW; g.C%nb != 0 {
		return nil, fmt.Errorf("gops: %s: input channels %d must be a multiple of OutputSize[0]·OutputSize[1] = %d", name, g.C, nb)
	}
	return g, nil
}

// psKernels are the two kernels of a position-sensitive op, F and its
// transpose Fᵀ, for both dtypes.
type psKernels struct {
	name string
	// roundsBoxes: the op rounds box coordinates, so it is piecewise
	// constant in boxes and their gradient is zero (boxes are not a
	// differentiable input). Otherwise Grad reports a missing gradient.
	roundsBoxes  bool
	fwd32, adj32 func(g *PoolGeom, a, boxes, out []float32) error
	fwd64, adj64 func(g *PoolGeom, a, boxes, out []float64) error
}

var (
	psRoIAlignKernels = psKernels{"PSRoIAlign", false,
		PSRoIAlignForward[float32], PSRoIAlignTranspose[float32],
		PSRoIAlignForward[float64], PSRoIAlignTranspose[float64]}
	psRoIPoolKernels = psKernels{"PSRoIPool", true,
		PSRoIPoolForward[float32], PSRoIPoolTranspose[float32],
		PSRoIPoolForward[float64], PSRoIPoolTranspose[float64]}
)

// psOutShape is the forward's result shape [K, C/(PH·PW), PH, PW].
func (g *PoolGeom) psOutShape(k int) tensor.Shape {
	return tensor.Shape{k, g.C / (g.PH * g.PW), g.PH, g.PW}
}

// psForwardSpec is the forward op F(X, boxes) -> Y; its backward applies
// psTransposeSpec.
func psForwardSpec(ks *psKernels, g *PoolGeom) OpSpec {
	return OpSpec{
		Name:       ks.name,
		Params:     g.Params(),
		gpu:        gpuPSRoI{g: g, align: !ks.roundsBoxes},
		InputDims:  []int{4, 2},
		OutputDims: 4,
		DiffWRT:    []bool{true, !ks.roundsBoxes},
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !in[0].Eq(g.inputShape()) {
				return nil, fmt.Errorf("gops: %s: input shape %v, want %v", ks.name, in[0], g.inputShape())
			}
			if len(in[1]) != 2 || in[1][1] != 5 {
				return nil, fmt.Errorf("gops: %s: boxes must be [K, 5], got %v", ks.name, in[1])
			}
			return g.psOutShape(in[1][0]), nil
		},
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) {
			return dispatch2(in[0], in[1],
				func(x, b []float32) (*tensor.Dense, error) {
					out, data := newTensor[float32](g.psOutShape(len(b) / 5)...)
					return out, ks.fwd32(g, x, b, data)
				},
				func(x, b []float64) (*tensor.Dense, error) {
					out, data := newTensor[float64](g.psOutShape(len(b) / 5)...)
					return out, ks.fwd64(g, x, b, data)
				})
		},
		Backward: func(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			dx, err := Apply(psTransposeSpec(ks, g), grad, in[1])
			return gorgonia.Nodes{dx, nil}, err
		},
	}
}

// psTransposeSpec is Fᵀ(G, boxes) -> shape of X, the adjoint of F in X; its
// backward applies psForwardSpec.
func psTransposeSpec(ks *psKernels, g *PoolGeom) OpSpec {
	name := ks.name + "Transpose"
	return OpSpec{
		Name:       name,
		Params:     g.Params(),
		gpu:        gpuPSRoI{g: g, align: !ks.roundsBoxes, transpose: true},
		InputDims:  []int{4, 2},
		OutputDims: 4,
		DiffWRT:    []bool{true, !ks.roundsBoxes},
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if len(in[1]) != 2 || in[1][1] != 5 || !in[0].Eq(g.psOutShape(in[1][0])) {
				return nil, fmt.Errorf("gops: %s: grad %v and boxes %v do not match [K, %d, %d, %d] and [K, 5]", name, in[0], in[1], g.C/(g.PH*g.PW), g.PH, g.PW)
			}
			return g.inputShape(), nil
		},
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) {
			return dispatch2(in[0], in[1],
				func(gr, b []float32) (*tensor.Dense, error) {
					out, data := newTensor[float32](g.inputShape()...)
					return out, ks.adj32(g, gr, b, data)
				},
				func(gr, b []float64) (*tensor.Dense, error) {
					out, data := newTensor[float64](g.inputShape()...)
					return out, ks.adj64(g, gr, b, data)
				})
		},
		Backward: func(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			dg, err := Apply(psForwardSpec(ks, g), grad, in[1])
			return gorgonia.Nodes{dg, nil}, err
		},
	}
}
