package gops

import (
	"fmt"
	"math"
	"slices"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// torchvision.ops' detection losses as graph nodes, differentiable to every
// order w.r.t. both inputs: GeneralizedBoxIoULoss, DistanceBoxIoULoss,
// CompleteBoxIoULoss (on K pairs of boxes, row i of boxes1 with row i of
// boxes2) and SigmoidFocalLoss.
//
// Reductions are torchvision's (ad.Reduction): "none" (or "", the
// default of each of these losses, as torchvision's) keeps one loss per
// pair or element; "mean" and "sum" give a scalar. The mean of
// no pairs is 0 for the box losses (torchvision's 0.0 * loss.sum()) and NaN
// for SigmoidFocalLoss (torch's mean of nothing). An unknown reduction is
// an error here (torchvision silently applies none).

// DefaultBoxEps is the eps of torchvision's IoU functions and losses.
const DefaultBoxEps = 1e-7

// checkReduction resolves a box loss's reduction, "" read as torchvision's
// default "none".
func checkReduction(opName string, red ad.Reduction) (ad.Reduction, error) {
	r, ok := red.Resolve(ad.ReductionNone)
	if !ok {
		return "", fmt.Errorf("gops: %s: unknown reduction %q (want \"none\", \"mean\" or \"sum\")", opName, string(red))
	}
	return r, nil
}

// pairLoss checks boxes1 and boxes2 [K, 4] and reduces f's losses of their
// K pairs.
func pairLoss(name string, boxes1, boxes2 *gorgonia.Node, reduction ad.Reduction, eps float64, f func(b *build, p boxPair) *gorgonia.Node) (*gorgonia.Node, error) {
	if err := checkBoxPair(name, "boxes1", "boxes2", boxes1, boxes2); err != nil {
		return nil, err
	}
	if !slices.Equal(boxes1.Shape(), boxes2.Shape()) {
		return nil, fmt.Errorf("gops: %s: boxes1 %v and boxes2 %v must both be [K, 4] (pairs)", name, boxes1.Shape(), boxes2.Shape())
	}
	red, err := checkReduction(name, reduction)
	if err != nil {
		return nil, err
	}
	if err := checkEps(name, eps); err != nil {
		return nil, err
	}
	if boxes1.Shape()[0] == 0 {
		return ad.EmptyResult(name, red.Shape(tensor.Shape{0}), 0, nil, boxes1, boxes2)
	}
	l, err := onPairs(name, boxes1, boxes2, f)
	if err != nil {
		return nil, err
	}
	y, err := red.Reduce(l)
	return y, wrapErr(name, err)
}

// lossInterUnion is torchvision's _loss_inter_union: the intersection is
// (xk2 − xk1)·(yk2 − yk1) where both sides are positive and exactly 0
// elsewhere (torch's intsctk[mask] = ...: no gradient flows there, not
// even at an overlap of exactly 0), union = area1 + area2 − inter.
func lossInterUnion(b *build, p boxPair) (inter, union *gorgonia.Node) {
	dx := b.Sub(b.min(p.x2, p.gx2), b.max(p.x1, p.gx1))
	dy := b.Sub(b.min(p.y2, p.gy2), b.max(p.y1, p.gy1))
	m := b.Do(func() (*gorgonia.Node, error) { return bothPositive(dx, dy) })
	mx := b.Do(func() (*gorgonia.Node, error) { return maskedNode(dx, m) })
	my := b.Do(func() (*gorgonia.Node, error) { return maskedNode(dy, m) })
	inter = b.HadamardProd(mx, my)
	area1 := b.HadamardProd(b.Sub(p.x2, p.x1), b.Sub(p.y2, p.y1))
	area2 := b.HadamardProd(b.Sub(p.gx2, p.gx1), b.Sub(p.gy2, p.gy1))
	return inter, b.Sub(b.Add(area1, area2), inter)
}

// enclosingSides are the sides of the smallest box enclosing each pair
// (not clamped, as in the losses).
func enclosingSides(b *build, p boxPair) (w, h *gorgonia.Node) {
	return b.Sub(b.max(p.x2, p.gx2), b.min(p.x1, p.gx1)), b.Sub(b.max(p.y2, p.gy2), b.min(p.y1, p.gy1))
}

// diouLossOf is torchvision's _diou_iou_loss: (1 − IoU + ρ²/(c² + eps),
// IoU) with IoU = inter/(union + eps).
func diouLossOf(b *build, p boxPair, eps float64) (loss, iou *gorgonia.Node) {
	inter, union := lossInterUnion(b, p)
	iou = b.div(inter, b.AddConst(union, eps))
	w, h := enclosingSides(b, p)
	diag := b.AddConst(b.Add(b.Square(w), b.Square(h)), eps)
	xp, yp := b.Scale(b.Add(p.x2, p.x1), 0.5), b.Scale(b.Add(p.y2, p.y1), 0.5)
	xg, yg := b.Scale(b.Add(p.gx1, p.gx2), 0.5), b.Scale(b.Add(p.gy1, p.gy2), 0.5)
	centers := b.Add(b.Square(b.Sub(xp, xg)), b.Square(b.Sub(yp, yg)))
	return b.Add(b.RSub(1, iou), b.div(centers, diag)), iou
}

// GeneralizedBoxIoULoss is torchvision.ops.generalized_box_iou_loss(boxes1,
// boxes2, reduction, eps): for K pairs of boxes (row i of boxes1 [K, 4] with
// row i of boxes2 [K, 4], (x1, y1, x2, y2)), 1 − IoU + (C − union)/(C + eps)
// with IoU = inter/(union + eps) and C the area of the smallest enclosing
// box; reduced by reduction (default "none", torchvision's). Result [K]
// for "none", a scalar otherwise.
// Differentiable to every order w.r.t. both; torch's subgradients at the
// kinks (the file comment of boxops.go), and no gradient through an
// intersection whose side is exactly 0 or negative (torchvision's mask).
// torchvision's eps is 1e-7 (DefaultBoxEps). Errors: boxes as BoxIoU's,
// shapes that differ, an unknown reduction, a negative or non-finite eps.
func GeneralizedBoxIoULoss(boxes1, boxes2 *gorgonia.Node, reduction ad.Reduction, eps float64) (*gorgonia.Node, error) {
	return pairLoss("GeneralizedBoxIoULoss", boxes1, boxes2, reduction, eps, func(b *build, p boxPair) *gorgonia.Node {
		inter, union := lossInterUnion(b, p)
		iou := b.div(inter, b.AddConst(union, eps))
		w, h := enclosingSides(b, p)
		area := b.HadamardProd(w, h)
		miou := b.Sub(iou, b.div(b.Sub(area, union), b.AddConst(area, eps)))
		return b.RSub(1, miou)
	})
}

// DistanceBoxIoULoss is torchvision.ops.distance_box_iou_loss(boxes1,
// boxes2, reduction, eps): 1 − IoU + ρ²/(c² + eps) for K pairs of boxes
// ([K, 4] each), ρ the distance between the centres and c the diagonal of
// the enclosing box, IoU = inter/(union + eps); reduced by reduction
// (default "none", torchvision's).
// Derivatives, errors and eps as GeneralizedBoxIoULoss's.
func DistanceBoxIoULoss(boxes1, boxes2 *gorgonia.Node, reduction ad.Reduction, eps float64) (*gorgonia.Node, error) {
	return pairLoss("DistanceBoxIoULoss", boxes1, boxes2, reduction, eps, func(b *build, p boxPair) *gorgonia.Node {
		l, _ := diouLossOf(b, p, eps)
		return l
	})
}

// CompleteBoxIoULoss is torchvision.ops.complete_box_iou_loss(boxes1,
// boxes2, reduction, eps): DistanceBoxIoULoss + α·v for K pairs of boxes
// ([K, 4] each), v = 4/π²·(atan(w2/h2) − atan(w1/h1))² (boxes2 being the
// targets) and α = v/(1 − IoU + v + eps); reduced by reduction (default
// "none", torchvision's). As in
// torchvision, α is computed under no_grad (a constant to every
// derivative), and the DIoU part always uses eps = 1e-7 (torchvision does
// not pass its eps there). Derivatives and errors as
// GeneralizedBoxIoULoss's.
func CompleteBoxIoULoss(boxes1, boxes2 *gorgonia.Node, reduction ad.Reduction, eps float64) (*gorgonia.Node, error) {
	return pairLoss("CompleteBoxIoULoss", boxes1, boxes2, reduction, eps, func(b *build, p boxPair) *gorgonia.Node {
		diou, iou := diouLossOf(b, p, DefaultBoxEps)
		v := aspectTerm(b, b.Sub(p.gx2, p.gx1), b.Sub(p.gy2, p.gy1), b.Sub(p.x2, p.x1), b.Sub(p.y2, p.y1))
		alpha := b.stop(b.div(v, b.AddConst(b.Add(b.RSub(1, iou), v), eps)))
		return b.Add(diou, b.HadamardProd(alpha, v))
	})
}

// SigmoidFocalLoss is torchvision.ops.sigmoid_focal_loss(inputs, targets,
// alpha, gamma, reduction), RetinaNet's loss: with p = sigmoid(inputs) and
// ce the binary cross-entropy with logits, ce·(1 − p_t)^gamma where
// p_t = p·t + (1 − p)·(1 − t), times α_t = alpha·t + (1 − alpha)·(1 − t)
// when alpha >= 0 (a negative alpha: no weighting); reduced by reduction
// (default "none", torchvision's).
// inputs (logits) and targets (in [0, 1]) have one shape and one float
// dtype; torchvision's defaults are alpha 0.25, gamma 2. Differentiable to
// every order w.r.t. both (ce = (1 − t)·softplus(x) + t·softplus(−x),
// computed without overflow or cancellation: the loss is exact to a few
// ulps for large |x|, where torch's own float32 loss of a confident correct
// logit is about 1 % off). With 0 < gamma < 1 the gradient is NaN where
// 1 − p_t is 0 (a very confident correct logit), where (1 − p_t)^gamma
// has an infinite derivative. Torch's 1 − p_t cancels to 0 from |x| ≈ 17
// in float32 (37 in float64); here it is computed as s·(1 − t) + (1 − s)·t
// and is 0 only where exp(−|x|) underflows (|x| ≥ 708 for float32 logits,
// about 745 for float64; the cuda build's elementwise version, about 104
// in float32). Errors:
// nil, scalar or non-float inputs, shapes or dtypes that differ, a NaN or
// infinite alpha, a negative or non-finite gamma, an unknown reduction.
//
// The elementwise loss and its first derivatives are fused kernels, one
// pass over the logits each (float32 logits with exp and log1p in AVX2 or
// AVX-512 lanes of float64, to 5e-12 relative, or the same arithmetic in
// Go without AVX2 and FMA, on other architectures and under the purego
// tag; float64 logits with the math package's);
// second and higher derivatives are built from the formula in elementwise
// ops. The cuda build computes the loss from those elementwise ops, which
// run on the GPU (the fused kernels have no CUDA twins yet).
func SigmoidFocalLoss(inputs, targets *gorgonia.Node, alpha, gamma float64, reduction ad.Reduction) (*gorgonia.Node, error) {
	const name = "SigmoidFocalLoss"
	if inputs == nil || targets == nil {
		return nil, fmt.Errorf("gops: %s: inputs or targets is nil", name)
	}
	if err := checkFloatNode(name, "inputs", inputs, max(inputs.Dims(), 1)); err != nil {
		return nil, err
	}
	if err := checkFloatNode(name, "targets", targets, max(targets.Dims(), 1)); err != nil {
		return nil, err
	}
	if inputs.Dtype() != targets.Dtype() || !slices.Equal(inputs.Shape(), targets.Shape()) {
		return nil, fmt.Errorf("gops: %s: targets %v %v differ from inputs %v %v", name, targets.Dtype(), targets.Shape(), inputs.Dtype(), inputs.Shape())
	}
	if math.IsNaN(alpha) || math.IsInf(alpha, 0) {
		return nil, fmt.Errorf("gops: %s: alpha %v must be finite", name, alpha)
	}
	if !(gamma >= 0) || math.IsInf(gamma, 0) {
		return nil, fmt.Errorf("gops: %s: gamma %v must be finite and >= 0", name, gamma)
	}
	red, err := checkReduction(name, reduction)
	if err != nil {
		return nil, err
	}
	if inputs.Shape().TotalSize() == 0 {
		return ad.EmptyResult(name, red.Shape(inputs.Shape()), red.OfNothing(), nil, inputs, targets)
	}
	loss, err := focalNode(inputs, targets, alpha, gamma)
	if err != nil {
		return nil, wrapErr(name, err)
	}
	y, err := red.Reduce(loss)
	return y, wrapErr(name, err)
}
