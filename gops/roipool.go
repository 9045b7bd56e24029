package gops

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
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
// result is piecewise constant in boxes: ad.Grad gives boxes a zero gradient.
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
// positive or beyond 2²⁴ bins, SpatialScale negative, not finite, or (for
// float32) beyond float32's range.
func RoIPool(input, boxes *gorgonia.Node, opts RoIPoolOpts) (*gorgonia.Node, error) {
	g, err := newPoolGeom("RoIPool", input, boxes, opts.OutputSize, opts.SpatialScale, false)
	if err != nil {
		return nil, err
	}
	idx, err := ad.Apply(roiPoolArgmaxSpec(g), input, boxes)
	if err != nil {
		return nil, err
	}
	gather, _ := roiGatherSpecs(g)
	return ad.Apply(gather, input, idx)
}

// pooledShape is RoIPool's [K, C, PH, PW] for K boxes.
func pooledShape(g *cpu.PoolGeom, k int) tensor.Shape { return tensor.Shape{k, g.C, g.PH, g.PW} }

// roiPoolArgmaxSpec is idx = argmax(X, boxes): the flat index into X of
// each bin's maximum, -1 for an empty bin. An Int tensor with no gradient
// (its Backward gives none, so the LispMachine can run it too).
func roiPoolArgmaxSpec(g *cpu.PoolGeom) ad.OpSpec {
	shape, _ := roiPairShapes("RoIPoolArgmax", inputShape(g), func(k int) tensor.Shape { return pooledShape(g, k) })
	return withCUDA(ad.OpSpec{
		Name:        "RoIPoolArgmax",
		Params:      g.Params(),
		InputDims:   []int{4, 2},
		OutputDims:  4,
		OutputDtype: tensor.Int,
		DiffWRT:     []bool{false, false},
		Shape:       shape,
		Kernel:      ad.Floats(roiPoolArgmax[float32](g), roiPoolArgmax[float64](g)),
		// Every bin of every box is written (-1 for an empty one).
		KernelOverwrites: true,
		Backward: func(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
			return gorgonia.Nodes{nil, nil}, nil
		},
	}, roiPoolGPU{g, roiPoolArgmaxKind})
}

func roiPoolArgmax[T ad.Float](g *cpu.PoolGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		return cpu.RoIPoolArgmax(g, in[0].Data, in[1].Data, out.Ints)
	}
}

// roiGatherSpecs is Y = gather(X, idx), Y[i] = X[idx[i]] (0 where idx[i]
// is -1), and its transpose dX = scatter-add(G, idx) into X's shape, a
// linear pair in their first input; idx gets no gradient.
func roiGatherSpecs(g *cpu.PoolGeom) (gather, scatter ad.OpSpec) {
	in := inputShape(g)
	gather = ad.OpSpec{
		Name:        "RoIGather",
		Params:      g.Params(),
		InputDims:   []int{4, 4},
		OutputDims:  4,
		InputDtypes: []tensor.Dtype{{}, tensor.Int},
		DiffWRT:     []bool{true, false},
		Shape: func(s []tensor.Shape) (tensor.Shape, error) {
			if !s[0].Eq(in) || len(s[1]) != 4 || !s[1].Eq(pooledShape(g, s[1][0])) {
				return nil, fmt.Errorf("gops: RoIGather: input %v and indices %v do not match %v and (K, %d, %d, %d)", s[0], s[1], in, g.C, g.PH, g.PW)
			}
			return s[1].Clone(), nil
		},
		Kernel: ad.Floats(roiGather[float32](g), roiGather[float64](g)),
		// Every element is written (0 for an index of -1).
		KernelOverwrites: true,
	}
	scatter = gather
	scatter.KernelOverwrites = false // adds into zeros
	scatter.Name = "RoIScatterAdd"
	scatter.Shape = func(s []tensor.Shape) (tensor.Shape, error) {
		if len(s[1]) != 4 || !s[1].Eq(pooledShape(g, s[1][0])) || !s[0].Eq(s[1]) {
			return nil, fmt.Errorf("gops: RoIScatterAdd: grad %v and indices %v do not match (K, %d, %d, %d)", s[0], s[1], g.C, g.PH, g.PW)
		}
		return in.Clone(), nil
	}
	scatter.Kernel = ad.Floats(roiScatterAdd[float32](g), roiScatterAdd[float64](g))
	return ad.LinearPair(withCUDA(gather, roiPoolGPU{g, roiGatherKind}), withCUDA(scatter, roiPoolGPU{g, roiScatterAddKind}))
}

func roiGather[T ad.Float](g *cpu.PoolGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		return cpu.RoIGather(in[0].Data, in[1].Ints, out.Data, g.PH*g.PW)
	}
}

func roiScatterAdd[T ad.Float](g *cpu.PoolGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		return cpu.RoIScatterAdd(g, in[0].Data, in[1].Ints, out.Data)
	}
}

// roiPoolGPU is what the CUDA twins of RoIPool's three ops need
// (roipool_cuda.go).
type roiPoolGPU struct {
	g    *cpu.PoolGeom
	kind roiPoolKind
}

type roiPoolKind int

const (
	roiPoolArgmaxKind roiPoolKind = iota
	roiGatherKind
	roiScatterAddKind
)
