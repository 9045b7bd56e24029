package gops

import (
	"fmt"

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
// The result is linear in input and differentiable w.r.t. input to every
// order (use Grad). It is not differentiable w.r.t. boxes: Grad returns an
// error when a gradient would have to flow into boxes.
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
// SpatialScale negative or not finite.
func RoIAlign(input, boxes *gorgonia.Node, opts RoIAlignOpts) (*gorgonia.Node, error) {
	const name = "RoIAlign"
	if err := checkFloatNode(name, "input", input, 4); err != nil {
		return nil, err
	}
	if err := checkBoxesNode(name, input, boxes); err != nil {
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
	s := input.Shape()
	if s[2] == 0 || s[3] == 0 {
		return nil, fmt.Errorf("gops: %s: input %v has no pixels (H or W is 0)", name, s)
	}
	g := &RoIAlignGeom{
		N: s[0], C: s[1], H: s[2], W: s[3],
		PH: opts.OutputSize[0], PW: opts.OutputSize[1],
		Scale: scale, SamplingRatio: opts.SamplingRatio, Aligned: opts.Aligned,
	}
	return Apply(roiAlignSpec(g), input, boxes)
}

func (g *RoIAlignGeom) params() string {
	return fmt.Sprintf("input=(%d,%d,%d,%d), output_size=(%d,%d), spatial_scale=%v, sampling_ratio=%d, aligned=%t",
		g.N, g.C, g.H, g.W, g.PH, g.PW, g.Scale, g.SamplingRatio, g.Aligned)
}

// roiAlignSpec is the forward op F(X, boxes) -> Y.
func roiAlignSpec(g *RoIAlignGeom) OpSpec {
	return OpSpec{
		Name:       "RoIAlign",
		Params:     g.params(),
		gpu:        gpuRoIAlign{g: g},
		InputDims:  []int{4, 2},
		OutputDims: 4,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !in[0].Eq(tensor.Shape{g.N, g.C, g.H, g.W}) {
				return nil, fmt.Errorf("gops: RoIAlign: input shape %v, want %v", in[0], tensor.Shape{g.N, g.C, g.H, g.W})
			}
			if len(in[1]) != 2 || in[1][1] != 5 {
				return nil, fmt.Errorf("gops: RoIAlign: boxes must be [K, 5], got %v", in[1])
			}
			return tensor.Shape{in[1][0], g.C, g.PH, g.PW}, nil
		},
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) {
			return dispatch2(in[0], in[1], func32(g.forward32), func64(g.forward64))
		},
		Backward: func(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			dx, err := Apply(roiAlignTransposeSpec(g), grad, in[1])
			return gorgonia.Nodes{dx, nil}, err
		},
	}
}

// roiAlignTransposeSpec is Fᵀ(G, boxes) -> shape of X, the adjoint of F in X.
func roiAlignTransposeSpec(g *RoIAlignGeom) OpSpec {
	return OpSpec{
		Name:       "RoIAlignTranspose",
		Params:     g.params(),
		gpu:        gpuRoIAlign{g: g, transpose: true},
		InputDims:  []int{4, 2},
		OutputDims: 4,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if len(in[1]) != 2 || in[1][1] != 5 || !in[0].Eq(tensor.Shape{in[1][0], g.C, g.PH, g.PW}) {
				return nil, fmt.Errorf("gops: RoIAlignTranspose: grad %v and boxes %v do not match [K, %d, %d, %d] and [K, 5]", in[0], in[1], g.C, g.PH, g.PW)
			}
			return tensor.Shape{g.N, g.C, g.H, g.W}, nil
		},
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) {
			return dispatch2(in[0], in[1], func32(g.transpose32), func64(g.transpose64))
		},
		Backward: func(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			dg, err := Apply(roiAlignSpec(g), grad, in[1])
			return gorgonia.Nodes{dg, nil}, err
		},
	}
}

func (g *RoIAlignGeom) forward32(x, b []float32) (*tensor.Dense, error) { return roiAlignFwd(g, x, b) }
func (g *RoIAlignGeom) forward64(x, b []float64) (*tensor.Dense, error) { return roiAlignFwd(g, x, b) }
func (g *RoIAlignGeom) transpose32(y, b []float32) (*tensor.Dense, error) {
	return roiAlignAdj(g, y, b)
}
func (g *RoIAlignGeom) transpose64(y, b []float64) (*tensor.Dense, error) {
	return roiAlignAdj(g, y, b)
}

func roiAlignFwd[T Float](g *RoIAlignGeom, x, boxes []T) (*tensor.Dense, error) {
	out, data := newTensor[T](len(boxes)/5, g.C, g.PH, g.PW)
	return out, RoIAlignForward(g, x, boxes, data)
}

func roiAlignAdj[T Float](g *RoIAlignGeom, y, boxes []T) (*tensor.Dense, error) {
	out, data := newTensor[T](g.N, g.C, g.H, g.W)
	return out, RoIAlignTranspose(g, y, boxes, data)
}
