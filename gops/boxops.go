package gops

import (
	"fmt"
	"math"
	"slices"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// torchvision.ops' box functions as graph nodes, differentiable to every
// order w.r.t. the boxes: BoxArea, BoxConvert, ClipBoxesToImage, BoxIoU,
// GeneralizedBoxIoU, DistanceBoxIoU, CompleteBoxIoU. Boxes are [K, 4]
// float32 or float64 nodes in pixels, rows (x1, y1, x2, y2) unless a format
// says otherwise; torchvision expects 0 <= x1 < x2 and 0 <= y1 < y2, and
// these functions compute its formulas for any finite boxes (zero-area and
// inverted ones included). Non-finite coordinates are not an error: IoUs
// of such boxes come out NaN (or ±Inf), as torchvision's do. An empty box
// list gives an empty result, with zero gradients.
//
// At the kinks of max, min and clamp the derivatives are torch's
// subgradients (boxprims.go): half of the gradient to each of two equal
// coordinates, and clamp(x, lo, hi)'s gradient passes at x = lo and x = hi.

// checkBoxes4 checks a [K, 4] float box node.
func checkBoxes4(opName, arg string, n *gorgonia.Node) error {
	if err := checkFloatNode(opName, arg, n, 2); err != nil {
		return err
	}
	if s := n.Shape(); s[1] != 4 {
		return fmt.Errorf("gops: %s: %s must be [K, 4] (x1, y1, x2, y2), got %v", opName, arg, s)
	}
	return nil
}

// checkBoxPair checks two box nodes of one float dtype.
func checkBoxPair(opName, arg1, arg2 string, a, b *gorgonia.Node) error {
	if err := checkBoxes4(opName, arg1, a); err != nil {
		return err
	}
	if err := checkBoxes4(opName, arg2, b); err != nil {
		return err
	}
	if a.Dtype() != b.Dtype() {
		return fmt.Errorf("gops: %s: %s dtype %v differs from %s dtype %v", opName, arg2, b.Dtype(), arg1, a.Dtype())
	}
	return nil
}

// checkEps checks an eps argument: finite and >= 0.
func checkEps(opName string, eps float64) error {
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return fmt.Errorf("gops: %s: eps %v must be finite and >= 0", opName, eps)
	}
	return nil
}

func wrapErr(opName string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("gops: %s: %w", opName, err)
}

// BoxArea is torchvision.ops.box_area: (x2 − x1)·(y2 − y1) of each box of
// boxes [K, 4] (x1, y1, x2, y2), as [K] in square pixels; negative for an
// inverted box, as torchvision's. Differentiable to every order. Errors: a
// nil node, a rank other than 2, a second size other than 4, a dtype other
// than float32 or float64.
func BoxArea(boxes *gorgonia.Node) (*gorgonia.Node, error) {
	if err := checkBoxes4("BoxArea", "boxes", boxes); err != nil {
		return nil, err
	}
	k := boxes.Shape()[0]
	if k == 0 {
		return ad.EmptyResult("BoxArea", tensor.Shape{0}, 0, nil, boxes)
	}
	c, err := columns(boxes)
	if err != nil {
		return nil, wrapErr("BoxArea", err)
	}
	b := newBuild(boxes)
	a, err := b.Node(b.HadamardProd(b.Sub(c[2], c[0]), b.Sub(c[3], c[1])))
	return a, wrapErr("BoxArea", err)
}

// Box formats of BoxConvert, as torchvision names them.
const (
	BoxFormatXYXY   = "xyxy"   // (x1, y1, x2, y2): corners
	BoxFormatXYWH   = "xywh"   // (x1, y1, w, h): top-left corner, width, height
	BoxFormatCXCYWH = "cxcywh" // (cx, cy, w, h): centre, width, height
)

// BoxConvert is torchvision.ops.box_convert(boxes, in_fmt, out_fmt):
// boxes [K, 4] from format in to format out, each one of "xyxy", "xywh"
// and "cxcywh" (BoxFormatXYXY, ...), with torchvision's arithmetic
// (cx = (x1 + x2)/2, x1 = cx − 0.5·w, ...; xywh ↔ cxcywh through xyxy).
// The same format gives a copy. Linear, so differentiable to every order.
// Errors: boxes as BoxArea's, an unknown format.
func BoxConvert(boxes *gorgonia.Node, in, out string) (*gorgonia.Node, error) {
	if err := checkBoxes4("BoxConvert", "boxes", boxes); err != nil {
		return nil, err
	}
	for _, f := range []string{in, out} {
		if f != BoxFormatXYXY && f != BoxFormatXYWH && f != BoxFormatCXCYWH {
			return nil, fmt.Errorf("gops: BoxConvert: unknown box format %q (want \"xyxy\", \"xywh\" or \"cxcywh\")", f)
		}
	}
	k := boxes.Shape()[0]
	if k == 0 {
		return ad.EmptyResult("BoxConvert", tensor.Shape{0, 4}, 0, nil, boxes)
	}
	if in == out {
		return reshape(boxes, k, 4) // a copy, as torchvision's clone
	}
	var steps []cpu.BoxConversion
	switch in {
	case BoxFormatXYWH:
		steps = append(steps, cpu.XYWHToXYXY)
	case BoxFormatCXCYWH:
		steps = append(steps, cpu.CXCYWHToXYXY)
	}
	switch out {
	case BoxFormatXYWH:
		steps = append(steps, cpu.XYXYToXYWH)
	case BoxFormatCXCYWH:
		steps = append(steps, cpu.XYXYToCXCYWH)
	}
	y := boxes
	for _, kind := range steps {
		f, _ := convertSpecs(k, kind)
		var err error
		if y, err = ad.Apply(f, y); err != nil {
			return nil, wrapErr("BoxConvert", err)
		}
	}
	return y, nil
}

// convertSpecs are one conversion on [K, 4] rows and its transpose, a
// linear pair.
func convertSpecs(k int, kind cpu.BoxConversion) (f, ft ad.OpSpec) {
	mk := func(name string, transpose bool) ad.OpSpec {
		return withCUDA(ad.OpSpec{
			Name: name, Params: fmt.Sprintf("%d K=%d", kind, k), InputDims: []int{2}, OutputDims: 2,
			Shape: func(in []tensor.Shape) (tensor.Shape, error) {
				if !slices.Equal(in[0], tensor.Shape{k, 4}) {
					return nil, fmt.Errorf("gops: %s: input %v, want (%d, 4)", name, in[0], k)
				}
				return tensor.Shape{k, 4}, nil
			},
			Kernel:           ad.Floats(convertKernel[float32](kind, transpose), convertKernel[float64](kind, transpose)),
			KernelOverwrites: true,
		}, convertGPU{kind, transpose})
	}
	return ad.LinearPair(mk("BoxConvert", false), mk("BoxConvertTranspose", true))
}

// convertGPU is what the CUDA twins of BoxConvert and its transpose need
// (boxops_cuda.go).
type convertGPU struct {
	kind      cpu.BoxConversion
	transpose bool
}

// convertKernel is cpu.BoxConvert: one conversion or its transpose.
func convertKernel[T ad.Float](kind cpu.BoxConversion, transpose bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.BoxConvert(kind, transpose, out.Data, in[0].Data)
		return nil
	}
}

// ClipBoxesToImage is torchvision.ops.clip_boxes_to_image(boxes, size):
// boxes [K, 4] (x1, y1, x2, y2) with x clamped to [0, width] and y to
// [0, height], size = (height, width) in pixels. The gradient passes where
// a coordinate lies within its bounds, bounds included (torch's clamp), and
// is 0 elsewhere; every higher derivative is 0. NaN stays NaN. Errors:
// boxes as BoxArea's, a negative height or width.
func ClipBoxesToImage(boxes *gorgonia.Node, size [2]int) (*gorgonia.Node, error) {
	if err := checkBoxes4("ClipBoxesToImage", "boxes", boxes); err != nil {
		return nil, err
	}
	if size[0] < 0 || size[1] < 0 {
		return nil, fmt.Errorf("gops: ClipBoxesToImage: size %v (height, width) must not be negative", size)
	}
	k := boxes.Shape()[0]
	if k == 0 {
		return ad.EmptyResult("ClipBoxesToImage", tensor.Shape{0, 4}, 0, nil, boxes)
	}
	clip := clipSpec(k, size, false)
	clip.Backward = func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
		m, err := ad.Apply(clipSpec(k, size, true), in[0])
		if err != nil {
			return nil, err
		}
		d, err := maskedNode(u, m)
		return gorgonia.Nodes{d}, err
	}
	y, err := ad.Apply(clip, boxes)
	return y, wrapErr("ClipBoxesToImage", err)
}

// clipSpec is the clamp of ClipBoxesToImage on [K, 4], or with mask its
// derivative: 1 where the coordinate is within its bounds, 0 elsewhere (no
// gradient of its own).
func clipSpec(k int, size [2]int, mask bool) ad.OpSpec {
	name := "ClipBoxes"
	if mask {
		name = "ClipBoxesMask"
	}
	bounds := [4]float64{float64(size[1]), float64(size[0]), float64(size[1]), float64(size[0])}
	spec := ad.OpSpec{
		Name: name, Params: fmt.Sprintf("K=%d size %v", k, size), InputDims: []int{2}, OutputDims: 2,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], tensor.Shape{k, 4}) {
				return nil, fmt.Errorf("gops: %s: input %v, want (%d, 4)", name, in[0], k)
			}
			return tensor.Shape{k, 4}, nil
		},
		Kernel: ad.Floats(func(out ad.Tensor[float32], in []ad.Tensor[float32]) error {
			cpu.ClipBoxes(out.Data, in[0].Data, bounds, mask)
			return nil
		}, func(out ad.Tensor[float64], in []ad.Tensor[float64]) error {
			cpu.ClipBoxes(out.Data, in[0].Data, bounds, mask)
			return nil
		}),
		KernelOverwrites: true,
	}
	if mask {
		spec.DiffWRT = []bool{false}
		spec.Backward = func(in gorgonia.Nodes, _, _ *gorgonia.Node) (gorgonia.Nodes, error) { return gorgonia.Nodes{nil}, nil }
	}
	return withCUDA(spec, clipGPU{bounds, mask})
}

// clipGPU is what the CUDA twins of ClipBoxes and ClipBoxesMask need
// (boxops_cuda.go): each column's upper bound (width, height, width,
// height; the lower one is 0).
type clipGPU struct {
	bounds [4]float64
	mask   bool
}

// boxPair holds the coordinates of P pairs of boxes, each a [P] node: the
// first boxes' (x1, y1, x2, y2) and the second ones' (gx1, gy1, gx2, gy2).
type boxPair struct{ x1, y1, x2, y2, gx1, gy1, gx2, gy2 *gorgonia.Node }

// pairOf splits a and b, both [P, 4], into their columns.
func pairOf(a, b *gorgonia.Node) (boxPair, error) {
	ca, err := columns(a)
	if err != nil {
		return boxPair{}, err
	}
	cb, err := columns(b)
	if err != nil {
		return boxPair{}, err
	}
	return boxPair{ca[0], ca[1], ca[2], ca[3], cb[0], cb[1], cb[2], cb[3]}, nil
}

// onPairs builds f on the pairs of rows of a and b, both [P, 4] (pairOf),
// with a builder on their graph; errors name the op.
func onPairs(name string, a, b *gorgonia.Node, f func(b *build, p boxPair) *gorgonia.Node) (*gorgonia.Node, error) {
	p, err := pairOf(a, b)
	if err != nil {
		return nil, wrapErr(name, err)
	}
	bd := newBuild(a)
	r := f(bd, p)
	if bd.Err() != nil {
		return nil, wrapErr(name, bd.Err())
	}
	return r, nil
}

// pairwise evaluates f on all N·M pairs of boxes1 [N, 4] and boxes2
// [M, 4] and returns [N, M].
func pairwise(name string, boxes1, boxes2 *gorgonia.Node, eps float64, f func(b *build, p boxPair) *gorgonia.Node) (*gorgonia.Node, error) {
	if err := checkBoxPair(name, "boxes1", "boxes2", boxes1, boxes2); err != nil {
		return nil, err
	}
	if err := checkEps(name, eps); err != nil {
		return nil, err
	}
	n, m := boxes1.Shape()[0], boxes2.Shape()[0]
	if n == 0 || m == 0 {
		return ad.EmptyResult(name, tensor.Shape{n, m}, 0, nil, boxes1, boxes2)
	}
	a, c, err := pairRows(boxes1, boxes2)
	if err != nil {
		return nil, wrapErr(name, err)
	}
	r, err := onPairs(name, a, c, f)
	if err != nil {
		return nil, err
	}
	y, err := reshape(r, n, m)
	return y, wrapErr(name, err)
}

// iouOf is torchvision's box_iou on pairs: inter / union, inter the product
// of the overlap's sides clamped at 0, union = area1 + area2 − inter.
func iouOf(b *build, p boxPair) (iou, union *gorgonia.Node) {
	area1 := b.HadamardProd(b.Sub(p.x2, p.x1), b.Sub(p.y2, p.y1))
	area2 := b.HadamardProd(b.Sub(p.gx2, p.gx1), b.Sub(p.gy2, p.gy1))
	w := b.clamp(b.Sub(b.min(p.x2, p.gx2), b.max(p.x1, p.gx1)), 0, math.Inf(1))
	h := b.clamp(b.Sub(b.min(p.y2, p.gy2), b.max(p.y1, p.gy1)), 0, math.Inf(1))
	inter := b.HadamardProd(w, h)
	union = b.Sub(b.Add(area1, area2), inter)
	return b.div(inter, union), union
}

// enclosingOf is the width and height of the smallest box enclosing each
// pair, clamped at 0.
func enclosingOf(b *build, p boxPair) (w, h *gorgonia.Node) {
	w = b.clamp(b.Sub(b.max(p.x2, p.gx2), b.min(p.x1, p.gx1)), 0, math.Inf(1))
	h = b.clamp(b.Sub(b.max(p.y2, p.gy2), b.min(p.y1, p.gy1)), 0, math.Inf(1))
	return w, h
}

// diouOf is torchvision's _box_diou_iou on pairs: (diou, iou).
func diouOf(b *build, p boxPair, eps float64) (diou, iou *gorgonia.Node) {
	iou, _ = iouOf(b, p)
	w, h := enclosingOf(b, p)
	diag := b.AddConst(b.Add(b.Square(w), b.Square(h)), eps)
	xp, yp := b.Scale(b.Add(p.x1, p.x2), 0.5), b.Scale(b.Add(p.y1, p.y2), 0.5)
	xg, yg := b.Scale(b.Add(p.gx1, p.gx2), 0.5), b.Scale(b.Add(p.gy1, p.gy2), 0.5)
	centers := b.Add(b.Square(b.Sub(xp, xg)), b.Square(b.Sub(yp, yg)))
	return b.Sub(iou, b.div(centers, diag)), iou
}

// aspectTerm is CIoU's v = 4/π²·(atan(w1/h1) − atan(w2/h2))² on the
// boxes' widths and heights.
func aspectTerm(b *build, w1, h1, w2, h2 *gorgonia.Node) *gorgonia.Node {
	d := b.Sub(b.atan(b.div(w1, h1)), b.atan(b.div(w2, h2)))
	return b.Scale(b.Square(d), 4/(math.Pi*math.Pi))
}

// BoxIoU is torchvision.ops.box_iou: the intersection over union of every
// box of boxes1 [N, 4] with every box of boxes2 [M, 4] (x1, y1, x2, y2), as
// [N, M]. Differentiable to every order w.r.t. both; at the kinks (equal
// coordinates, an overlap of exactly 0) torch's subgradients (see the file
// comment). Two boxes whose union is 0 (zero-area boxes) give NaN, and so
// do non-finite coordinates, as in torchvision. Errors: boxes as BoxArea's,
// dtypes that differ.
//
// Memory: the pairwise functions are graphs of elementwise nodes on all
// N·M pairs, each holding an N·M-element intermediate, and a graph keeps
// them all: BoxIoU about 35 of them, GeneralizedBoxIoU 43, DistanceBoxIoU
// 46, CompleteBoxIoU 56, and about three times as many with first-order
// gradients (measured, float32, N = M = 1000: BoxIoU 141 MB, 426 MB with
// gradients; CompleteBoxIoU 226 MB, 703 MB). N = M = 2000 in float64
// takes about 1.1 GB for BoxIoU's value alone and 3.4 GB with gradients
// (CompleteBoxIoU 1.8 and 5.6 GB); split boxes2 into blocks of rows for
// larger sets.
func BoxIoU(boxes1, boxes2 *gorgonia.Node) (*gorgonia.Node, error) {
	return pairwise("BoxIoU", boxes1, boxes2, 0, func(b *build, p boxPair) *gorgonia.Node {
		iou, _ := iouOf(b, p)
		return iou
	})
}

// GeneralizedBoxIoU is torchvision.ops.generalized_box_iou: for every pair
// of boxes1 [N, 4] and boxes2 [M, 4], IoU − (C − union)/C with C the area
// of the smallest enclosing box (its sides clamped at 0), as [N, M] in
// [−1, 1]. Differentiable to every order; NaN where C or the union is 0 or
// a coordinate is not finite, as torchvision's. Errors as BoxIoU's.
// Memory: about 43·N·M elements, three times that with gradients (N = M =
// 2000 float64: 1.4 GB; see BoxIoU).
func GeneralizedBoxIoU(boxes1, boxes2 *gorgonia.Node) (*gorgonia.Node, error) {
	return pairwise("GeneralizedBoxIoU", boxes1, boxes2, 0, func(b *build, p boxPair) *gorgonia.Node {
		iou, union := iouOf(b, p)
		w, h := enclosingOf(b, p)
		area := b.HadamardProd(w, h)
		return b.Sub(iou, b.div(b.Sub(area, union), area))
	})
}

// DistanceBoxIoU is torchvision.ops.distance_box_iou(boxes1, boxes2, eps):
// for every pair of boxes1 [N, 4] and boxes2 [M, 4], IoU − ρ²/(c² + eps),
// ρ the distance between the boxes' centres and c the diagonal of the
// smallest enclosing box, as [N, M]. torchvision's default eps is 1e-7.
// Differentiable to every order. Errors as BoxIoU's, and a negative or
// non-finite eps. Memory: about 46·N·M elements, three times that with
// gradients (N = M = 2000 float64: 1.5 GB; see BoxIoU).
func DistanceBoxIoU(boxes1, boxes2 *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	return pairwise("DistanceBoxIoU", boxes1, boxes2, eps, func(b *build, p boxPair) *gorgonia.Node {
		diou, _ := diouOf(b, p, eps)
		return diou
	})
}

// CompleteBoxIoU is torchvision.ops.complete_box_iou(boxes1, boxes2, eps):
// DistanceBoxIoU − α·v for every pair of boxes1 [N, 4] and boxes2 [M, 4],
// as [N, M], with v = 4/π²·(atan(w1/h1) − atan(w2/h2))² and
// α = v/(1 − IoU + v + eps). As in torchvision, α is computed under
// no_grad: it is a constant to every derivative (no gradient flows through
// it), so the derivatives are those of DIoU − const·v, not of the formula
// as written. Differentiable to every order in that sense. Errors as
// DistanceBoxIoU's. Memory: about 56·N·M elements, three times that with
// gradients (N = M = 2000 float64: 1.8 GB; see BoxIoU).
func CompleteBoxIoU(boxes1, boxes2 *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	return pairwise("CompleteBoxIoU", boxes1, boxes2, eps, func(b *build, p boxPair) *gorgonia.Node {
		diou, iou := diouOf(b, p, eps)
		v := aspectTerm(b, b.Sub(p.x2, p.x1), b.Sub(p.y2, p.y1), b.Sub(p.gx2, p.gx1), b.Sub(p.gy2, p.gy1))
		alpha := b.stop(b.div(v, b.AddConst(b.Add(b.RSub(1, iou), v), eps)))
		return b.Sub(diou, b.HadamardProd(alpha, v))
	})
}
