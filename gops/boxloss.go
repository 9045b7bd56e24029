package gops

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// torchvision.ops' detection losses as graph nodes, differentiable to every
// order w.r.t. both inputs: GeneralizedBoxIoULoss, DistanceBoxIoULoss,
// CompleteBoxIoULoss (on K pairs of boxes, row i of boxes1 with row i of
// boxes2) and SigmoidFocalLoss.
//
// Reductions are torchvision's: "none" (or "", torchvision's default) keeps
// one loss per pair or element; "mean" and "sum" give a scalar. The mean of
// no pairs is 0 for the box losses (torchvision's 0.0 * loss.sum()) and NaN
// for SigmoidFocalLoss (torch's mean of nothing). An unknown reduction is
// an error here (torchvision silently applies none).

// DefaultBoxEps is the eps of torchvision's IoU functions and losses.
const DefaultBoxEps = 1e-7

// checkReduction returns the reduction, "" read as "none".
func checkReduction(opName, red string) (string, error) {
	switch red {
	case "", "none":
		return "none", nil
	case "mean", "sum":
		return red, nil
	}
	return "", fmt.Errorf("gops: %s: unknown reduction %q (want \"none\", \"mean\" or \"sum\")", opName, red)
}

// reduceLoss applies a reduction to per-element losses l.
func reduceLoss(l *gorgonia.Node, red string) (*gorgonia.Node, error) {
	switch red {
	case "sum":
		return gorgonia.Sum(l)
	case "mean":
		return gorgonia.Mean(l)
	}
	return l, nil
}

// pairLoss checks boxes1 and boxes2 [K, 4] and reduces f's losses of their
// K pairs.
func pairLoss(name string, boxes1, boxes2 *gorgonia.Node, reduction string, eps float64, f func(b *build, p boxPair) *gorgonia.Node) (*gorgonia.Node, error) {
	if err := checkBoxPair(name, "boxes1", "boxes2", boxes1, boxes2); err != nil {
		return nil, err
	}
	if !sameShape(boxes1.Shape(), boxes2.Shape()) {
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
		out := tensor.Shape{0}
		if red != "none" {
			out = tensor.ScalarShape()
		}
		return emptyResult(name, out, 0, boxes1, boxes2)
	}
	p, err := pairOf(boxes1, boxes2)
	if err != nil {
		return nil, wrapErr(name, err)
	}
	b := newBuild(boxes1)
	l := f(b, p)
	if b.err != nil {
		return nil, wrapErr(name, b.err)
	}
	y, err := reduceLoss(l, red)
	return y, wrapErr(name, err)
}

// lossInterUnion is torchvision's _loss_inter_union: the intersection is
// (xk2 − xk1)·(yk2 − yk1) where both sides are positive and exactly 0
// elsewhere (torch's intsctk[mask] = ...: no gradient flows there, not
// even at an overlap of exactly 0), union = area1 + area2 − inter.
func lossInterUnion(b *build, p boxPair) (inter, union *gorgonia.Node) {
	dx := b.sub(b.min(p.x2, p.gx2), b.max(p.x1, p.gx1))
	dy := b.sub(b.min(p.y2, p.gy2), b.max(p.y1, p.gy1))
	m := b.do(func() (*gorgonia.Node, error) { return bothPositive(dx, dy) })
	mx := b.do(func() (*gorgonia.Node, error) { return maskedNode(dx, m) })
	my := b.do(func() (*gorgonia.Node, error) { return maskedNode(dy, m) })
	inter = b.mul(mx, my)
	area1 := b.mul(b.sub(p.x2, p.x1), b.sub(p.y2, p.y1))
	area2 := b.mul(b.sub(p.gx2, p.gx1), b.sub(p.gy2, p.gy1))
	return inter, b.sub(b.add(area1, area2), inter)
}

// enclosingSides are the sides of the smallest box enclosing each pair
// (not clamped, as in the losses).
func enclosingSides(b *build, p boxPair) (w, h *gorgonia.Node) {
	return b.sub(b.max(p.x2, p.gx2), b.min(p.x1, p.gx1)), b.sub(b.max(p.y2, p.gy2), b.min(p.y1, p.gy1))
}

// diouLossOf is torchvision's _diou_iou_loss: (1 − IoU + ρ²/(c² + eps),
// IoU) with IoU = inter/(union + eps).
func diouLossOf(b *build, p boxPair, eps float64) (loss, iou *gorgonia.Node) {
	inter, union := lossInterUnion(b, p)
	iou = b.div(inter, b.addConst(union, eps))
	w, h := enclosingSides(b, p)
	diag := b.addConst(b.add(b.square(w), b.square(h)), eps)
	xp, yp := b.scale(b.add(p.x2, p.x1), 0.5), b.scale(b.add(p.y2, p.y1), 0.5)
	xg, yg := b.scale(b.add(p.gx1, p.gx2), 0.5), b.scale(b.add(p.gy1, p.gy2), 0.5)
	centers := b.add(b.square(b.sub(xp, xg)), b.square(b.sub(yp, yg)))
	return b.add(b.rsub(1, iou), b.div(centers, diag)), iou
}

// GeneralizedBoxIoULoss is torchvision.ops.generalized_box_iou_loss(boxes1,
// boxes2, reduction, eps): for K pairs of boxes (row i of boxes1 [K, 4] with
// row i of boxes2 [K, 4], (x1, y1, x2, y2)), 1 − IoU + (C − union)/(C + eps)
// with IoU = inter/(union + eps) and C the area of the smallest enclosing
// box; reduced by reduction. Result [K] for "none", a scalar otherwise.
// Differentiable to every order w.r.t. both; torch's subgradients at the
// kinks (the file comment of boxops.go), and no gradient through an
// intersection whose side is exactly 0 or negative (torchvision's mask).
// torchvision's eps is 1e-7 (DefaultBoxEps). Errors: boxes as BoxIoU's,
// shapes that differ, an unknown reduction, a negative or non-finite eps.
func GeneralizedBoxIoULoss(boxes1, boxes2 *gorgonia.Node, reduction string, eps float64) (*gorgonia.Node, error) {
	return pairLoss("GeneralizedBoxIoULoss", boxes1, boxes2, reduction, eps, func(b *build, p boxPair) *gorgonia.Node {
		inter, union := lossInterUnion(b, p)
		iou := b.div(inter, b.addConst(union, eps))
		w, h := enclosingSides(b, p)
		area := b.mul(w, h)
		miou := b.sub(iou, b.div(b.sub(area, union), b.addConst(area, eps)))
		return b.rsub(1, miou)
	})
}

// DistanceBoxIoULoss is torchvision.ops.distance_box_iou_loss(boxes1,
// boxes2, reduction, eps): 1 − IoU + ρ²/(c² + eps) for K pairs of boxes
// ([K, 4] each), ρ the distance between the centres and c the diagonal of
// the enclosing box, IoU = inter/(union + eps); reduced by reduction.
// Derivatives, errors and eps as GeneralizedBoxIoULoss's.
func DistanceBoxIoULoss(boxes1, boxes2 *gorgonia.Node, reduction string, eps float64) (*gorgonia.Node, error) {
	return pairLoss("DistanceBoxIoULoss", boxes1, boxes2, reduction, eps, func(b *build, p boxPair) *gorgonia.Node {
		l, _ := diouLossOf(b, p, eps)
		return l
	})
}

// CompleteBoxIoULoss is torchvision.ops.complete_box_iou_loss(boxes1,
// boxes2, reduction, eps): DistanceBoxIoULoss + α·v for K pairs of boxes
// ([K, 4] each), v = 4/π²·(atan(w2/h2) − atan(w1/h1))² (boxes2 being the
// targets) and α = v/(1 − IoU + v + eps); reduced by reduction. As in
// torchvision, α is computed under no_grad (a constant to every
// derivative), and the DIoU part always uses eps = 1e-7 (torchvision does
// not pass its eps there). Derivatives and errors as
// GeneralizedBoxIoULoss's.
func CompleteBoxIoULoss(boxes1, boxes2 *gorgonia.Node, reduction string, eps float64) (*gorgonia.Node, error) {
	return pairLoss("CompleteBoxIoULoss", boxes1, boxes2, reduction, eps, func(b *build, p boxPair) *gorgonia.Node {
		diou, iou := diouLossOf(b, p, DefaultBoxEps)
		v := aspectTerm(b, b.sub(p.gx2, p.gx1), b.sub(p.gy2, p.gy1), b.sub(p.x2, p.x1), b.sub(p.y2, p.y1))
		alpha := b.stop(b.div(v, b.addConst(b.add(b.rsub(1, iou), v), eps)))
		return b.add(diou, b.mul(alpha, v))
	})
}

// SigmoidFocalLoss is torchvision.ops.sigmoid_focal_loss(inputs, targets,
// alpha, gamma, reduction), RetinaNet's loss: with p = sigmoid(inputs) and
// ce the binary cross-entropy with logits, ce·(1 − p_t)^gamma where
// p_t = p·t + (1 − p)·(1 − t), times α_t = alpha·t + (1 − alpha)·(1 − t)
// when alpha >= 0 (a negative alpha: no weighting); reduced by reduction.
// inputs (logits) and targets (in [0, 1]) have one shape and one float
// dtype; torchvision's defaults are alpha 0.25, gamma 2. Differentiable to
// every order w.r.t. both (ce = (1 − t)·softplus(x) + t·softplus(−x),
// computed without overflow or cancellation: the loss is exact to a few
// ulps for large |x|, where torch's own float32 loss of a confident correct
// logit is about 1 % off). With 0 < gamma < 1 the gradient is NaN where
// 1 − p_t rounds to 0 (a very confident correct logit, e.g. x = 40, t = 1),
// as torch's: (1 − p_t)^gamma has an infinite derivative there. Errors:
// nil, scalar or non-float inputs, shapes or dtypes that differ, a NaN or
// infinite alpha, a negative or non-finite gamma, an unknown reduction.
func SigmoidFocalLoss(inputs, targets *gorgonia.Node, alpha, gamma float64, reduction string) (*gorgonia.Node, error) {
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
	if inputs.Dtype() != targets.Dtype() || !sameShape(inputs.Shape(), targets.Shape()) {
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
		out, v := inputs.Shape().Clone(), 0.0
		if red != "none" {
			out = tensor.ScalarShape()
		}
		if red == "mean" {
			v = math.NaN()
		}
		return emptyResult(name, out, v, inputs, targets)
	}
	x, t := inputs, targets
	b := newBuild(x)
	// ce = (1 − t)·softplus(x) + t·softplus(−x), equal to softplus(x) − x·t
	// but without its cancellation: for t = 1 and x = 12 that difference
	// of two numbers near 12 left the 6e-6 loss a few bits (5 % off in
	// float32). nn.BinaryCrossEntropyWithLogits arranges it the same way.
	spPos := b.do(func() (*gorgonia.Node, error) { return softplusNode(x) })
	negX := b.do(func() (*gorgonia.Node, error) { return gorgonia.Neg(x) })
	spNeg := b.do(func() (*gorgonia.Node, error) { return softplusNode(negX) })
	ce := b.add(b.mul(b.rsub(1, t), spPos), b.mul(t, spNeg))
	loss := ce
	if gamma != 0 { // (1 − p_t)⁰ = 1; no unused nodes, which the LispMachine refuses
		p := b.do(func() (*gorgonia.Node, error) { return sigmoidNode(x) })
		pt := b.add(b.mul(p, t), b.mul(b.rsub(1, p), b.rsub(1, t)))
		q := b.rsub(1, pt)
		switch gamma {
		case 1:
			loss = b.mul(ce, q)
		case 2:
			loss = b.mul(ce, b.square(q))
		default:
			loss = b.mul(ce, b.do(func() (*gorgonia.Node, error) { return powNode(q, gamma) }))
		}
	}
	if alpha >= 0 {
		at := b.add(b.scale(t, alpha), b.scale(b.rsub(1, t), 1-alpha))
		loss = b.mul(at, loss)
	}
	if b.err != nil {
		return nil, wrapErr(name, b.err)
	}
	y, err := reduceLoss(loss, red)
	return y, wrapErr(name, err)
}
