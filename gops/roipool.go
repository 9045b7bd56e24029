package gops

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RoIPoolOpts are the parameters of RoIPool, named as in
// torchvision.ops.roi_pool.
type RoIPoolOpts struct {
	// OutputSize is the (height, width) of each pooled output, in bins.
	OutputSize [2]int
	// SpatialScale multiplies box coordinates (image pixels) to give input
	// coordinates (feature-map pixels), for example 1/16 for a stride-16
	// feature map. 0 means 1.
	SpatialScale float64
}

// RoIPool max-pools each box of boxes from input, as torchvision.ops.roi_pool
// (Fast R-CNN's RoI pooling).
//
// input is [N, C, H, W]; boxes is [K, 5] with rows (batch_index, x1, y1, x2,
// y2) in image coordinates, in input's dtype (float32 or float64). The
// result is [K, C, OutputSize[0], OutputSize[1]].
//
// Geometry is torchvision's: each coordinate times SpatialScale, computed in
// the input's dtype, is rounded half away from zero (C's round); the roi
// spans s = max(end - start + 1, 1) pixels per side; bin (i, j) covers rows
// [floor(i·s/PH), ceil((i+1)·s/PH)) after the start (s/PH in the input's
// dtype), clipped to [0, H], and likewise columns. Each output is the
// maximum of its bin; the first maximum in row-major order wins ties; an
// empty bin gives 0 and no gradient.
//
// RoIPool is built as idx = argmax (computed once, no gradient), Y =
// gather(input, idx); the gradient is a scatter-add of the upstream gradient
// at idx, whose own gradient is the gather again, so RoIPool is
// differentiable w.r.t. input to every order (use Grad): piecewise linear,
// with the argmax held where it is. Box coordinates are rounded, so the
// result is piecewise constant in boxes: Grad gives boxes a zero gradient.
//
// Differences from torchvision: a NaN in a bin wins (the result is NaN,
// the gradient goes to the first NaN), where torchvision skips NaNs; a bin
// whose values are all NaN or all <= -FLT_MAX (-Inf, say) gives its
// maximum, with a gradient, where torchvision gives -FLT_MAX and none;
// rounded coordinates are clamped to ±2⁴⁰ (torchvision's int overflows
// beyond 2³¹). A batch index that is not an integer in [0, N), or a
// non-finite coordinate, is a run-time error naming the box (torchvision
// reads out of bounds). K = 0 gives an empty [0, C, PH, PW] result.
//
// Errors when the node is built: input not 4-D or with H or W of 0, boxes
// not [K, 5], dtypes differ or are not float32/float64, OutputSize not
// positive or beyond 2²⁴ bins, SpatialScale negative or not finite.
func RoIPool(input, boxes *gorgonia.Node, opts RoIPoolOpts) (*gorgonia.Node, error) {
	const name = "RoIPool"
	g, err := newPoolGeom(name, input, boxes, opts.OutputSize, opts.SpatialScale)
	if err != nil {
		return nil, err
	}
	idx, err := Apply(roiPoolArgmaxSpec(g), input, boxes)
	if err != nil {
		return nil, err
	}
	return Apply(roiGatherSpec(g), input, idx)
}

// newPoolGeom checks the nodes and options shared by RoIPool, PSRoIPool and
// PSRoIAlign when a node is built, and returns the geometry.
func newPoolGeom(name string, input, boxes *gorgonia.Node, size [2]int, spatialScale float64) (*PoolGeom, error) {
	if err := checkFloatNode(name, "input", input, 4); err != nil {
		return nil, err
	}
	if err := checkBoxesNode(name, input, boxes); err != nil {
		return nil, err
	}
	if err := checkOutputSize(name, size); err != nil {
		return nil, err
	}
	scale, err := spatialScaleOrOne(name, spatialScale, input.Dtype())
	if err != nil {
		return nil, err
	}
	s := input.Shape()
	if s[2] == 0 || s[3] == 0 {
		return nil, fmt.Errorf("gops: %s: input %v has no pixels (H or W is 0)", name, s)
	}
	return &PoolGeom{N: s[0], C: s[1], H: s[2], W: s[3], PH: size[0], PW: size[1], Scale: scale}, nil
}

// Gorgonia types of the RoIPool ops: float tensors of one dtype a, and Int
// argmax indices.
var (
	typeFloat4 = gorgonia.TensorType{Dims: 4, Of: hm.TypeVariable('a')}
	typeFloat2 = gorgonia.TensorType{Dims: 2, Of: hm.TypeVariable('a')}
	typeIndex4 = gorgonia.TensorType{Dims: 4, Of: tensor.Int}
)

// pooledShape is [K, C, PH, PW] for K boxes.
func (g *PoolGeom) pooledShape(k int) tensor.Shape { return tensor.Shape{k, g.C, g.PH, g.PW} }

func (g *PoolGeom) inputShape() tensor.Shape { return tensor.Shape{g.N, g.C, g.H, g.W} }

// roiPoolArgmaxSpec is idx = argmax(X, boxes): the flat index into X of
// each bin's maximum, -1 for an empty bin. An Int tensor with no gradient
// (its Backward gives none, so the LispMachine can run it too).
func roiPoolArgmaxSpec(g *PoolGeom) OpSpec {
	return OpSpec{
		Name:       "RoIPoolArgmax",
		Params:     g.Params(),
		gpu:        gpuRoIPool{g: g, kind: gpuArgmax},
		InputDims:  []int{4, 2},
		OutputDims: 4,
		Type:       hm.NewFnType(typeFloat4, typeFloat2, typeIndex4),
		DiffWRT:    []bool{false, false},
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !in[0].Eq(g.inputShape()) {
				return nil, fmt.Errorf("gops: RoIPoolArgmax: input shape %v, want %v", in[0], g.inputShape())
			}
			if len(in[1]) != 2 || in[1][1] != 5 {
				return nil, fmt.Errorf("gops: RoIPoolArgmax: boxes must be [K, 5], got %v", in[1])
			}
			return g.pooledShape(in[1][0]), nil
		},
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) {
			return dispatch2(in[0], in[1], func32(g.argmax32), func64(g.argmax64))
		},
		Backward: func(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
			return gorgonia.Nodes{nil, nil}, nil
		},
	}
}

// roiGatherSpec is Y = gather(X, idx): Y[i] = X[idx[i]], 0 where idx[i] is
// -1. Its backward is roiScatterAddSpec.
func roiGatherSpec(g *PoolGeom) OpSpec {
	return OpSpec{
		Name:       "RoIGather",
		Params:     g.Params(),
		gpu:        gpuRoIPool{g: g, kind: gpuGather},
		InputDims:  []int{4, 4},
		OutputDims: 4,
		Type:       hm.NewFnType(typeFloat4, typeIndex4, typeFloat4),
		DiffWRT:    []bool{true, false},
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !in[0].Eq(g.inputShape()) || len(in[1]) != 4 || !in[1].Eq(g.pooledShape(in[1][0])) {
				return nil, fmt.Errorf("gops: RoIGather: input %v and indices %v do not match %v and [K, %d, %d, %d]", in[0], in[1], g.inputShape(), g.C, g.PH, g.PW)
			}
			return in[1].Clone(), nil
		},
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) {
			k := in[1].Shape()[0]
			return dispatchIndexed(in[0], in[1],
				func(x []float32, idx []int) (*tensor.Dense, error) { return roiGatherOf(g, k, x, idx) },
				func(x []float64, idx []int) (*tensor.Dense, error) { return roiGatherOf(g, k, x, idx) })
		},
		Backward: func(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			dx, err := Apply(roiScatterAddSpec(g), grad, in[1])
			return gorgonia.Nodes{dx, nil}, err
		},
	}
}

// roiScatterAddSpec is dX = scatter-add(G, idx) into X's shape, the adjoint
// of the gather in X. Its backward is roiGatherSpec.
func roiScatterAddSpec(g *PoolGeom) OpSpec {
	return OpSpec{
		Name:       "RoIScatterAdd",
		Params:     g.Params(),
		gpu:        gpuRoIPool{g: g, kind: gpuScatterAdd},
		InputDims:  []int{4, 4},
		OutputDims: 4,
		Type:       hm.NewFnType(typeFloat4, typeIndex4, typeFloat4),
		DiffWRT:    []bool{true, false},
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if len(in[1]) != 4 || !in[1].Eq(g.pooledShape(in[1][0])) || !in[0].Eq(in[1]) {
				return nil, fmt.Errorf("gops: RoIScatterAdd: grad %v and indices %v do not match [K, %d, %d, %d]", in[0], in[1], g.C, g.PH, g.PW)
			}
			return g.inputShape(), nil
		},
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) {
			return dispatchIndexed(in[0], in[1], g.scatterAdd32, g.scatterAdd64)
		},
		Backward: func(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			dg, err := Apply(roiGatherSpec(g), grad, in[1])
			return gorgonia.Nodes{dg, nil}, err
		},
	}
}

func (g *PoolGeom) argmax32(x, b []float32) (*tensor.Dense, error) { return roiPoolArgmaxOf(g, x, b) }
func (g *PoolGeom) argmax64(x, b []float64) (*tensor.Dense, error) { return roiPoolArgmaxOf(g, x, b) }
func (g *PoolGeom) scatterAdd32(gr []float32, idx []int) (*tensor.Dense, error) {
	return roiScatterAddOf(g, gr, idx)
}
func (g *PoolGeom) scatterAdd64(gr []float64, idx []int) (*tensor.Dense, error) {
	return roiScatterAddOf(g, gr, idx)
}

func roiPoolArgmaxOf[T Float](g *PoolGeom, x, boxes []T) (*tensor.Dense, error) {
	out, idx := newIntTensor(g.pooledShape(len(boxes) / 5)...)
	return out, RoIPoolArgmax(g, x, boxes, idx)
}

func roiGatherOf[T Float](g *PoolGeom, k int, x []T, idx []int) (*tensor.Dense, error) {
	out, data := newTensor[T](g.pooledShape(k)...)
	return out, RoIGather(x, idx, data, g.PH*g.PW)
}

func roiScatterAddOf[T Float](g *PoolGeom, grad []T, idx []int) (*tensor.Dense, error) {
	out, data := newTensor[T](g.inputShape()...)
	return out, RoIScatterAdd(g, grad, idx, data)
}
