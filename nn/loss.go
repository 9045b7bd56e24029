package nn

import (
	"fmt"
	"slices"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// CrossEntropyOpts are CrossEntropy's options, named as in
// torch.nn.functional.cross_entropy. The zero value is torch's default.
type CrossEntropyOpts struct {
	// Weight, if not nil, is a [C] node of class weights.
	Weight *gorgonia.Node
	// IgnoreIndex, if not nil, is a target value whose rows contribute
	// nothing (nil: torch's -100).
	IgnoreIndex *int
	// LabelSmoothing in [0, 1]: the target mixes the true class with
	// 1 − LabelSmoothing and the uniform distribution with LabelSmoothing.
	LabelSmoothing float64
	// Reduction: "mean" (the default, torch's: ""), "sum" or "none".
	Reduction ad.Reduction
}

// CrossEntropy is torch.nn.functional.cross_entropy for logits [N, C] and
// class indices target (a tensor.Int node [N]): per row
// −w[t]·log_softmax(x)[t], with label smoothing mixed in as torch does,
// rows whose target is IgnoreIndex contributing 0; "mean" divides the sum
// by Σ w[t] over the rows not ignored (NaN when all are ignored, as
// torch), "sum" sums, "none" returns the [N] losses.
//
// Computed without a log-softmax [N, C]: per row, with m the row's
// maximum and s = Σ_c exp(x[c] − m), the loss w[t]·((m − x[t]) + log s),
// rounded as torch's log_softmax; label smoothing's −Σ_c
// w[c]·log_softmax(x)[c] is a LogSoftmax [N, C] times w, as torch (lse·Σ_c
// w[c] − Σ_c w[c]·x[c] would carry lse's rounding, about L·2⁻²⁴ for
// logits of magnitude L in float32). Without label smoothing the gradient
// w.r.t. the logits is one fused op, U·w[t]·(exp(x − m)/s − [c = t]) (no
// scatter added).
// Differentiable to every order
// w.r.t. the logits and the weight (the row ops' derivatives are built from
// Softmax, SoftmaxGrad, a gather by target and its scatter, products and
// sums).
//
// Errors when the node is built: logits not a float [N, C] node with N
// and C at least 1 (torch also takes N = 0), target not a tensor.Int [N]
// node, Weight not [C] of the logits' dtype, target or Weight in another
// graph than the logits, LabelSmoothing outside
// [0, 1], an unknown Reduction. When it runs: a target outside [0, C)
// that is not IgnoreIndex.
func CrossEntropy(logits, target *gorgonia.Node, opts CrossEntropyOpts) (*gorgonia.Node, error) {
	const name = "CrossEntropy"
	if err := checkNodes(name, []namedNode{{logits, "logits", 2, false}, {opts.Weight, "weight", 1, true}}); err != nil {
		return nil, err
	}
	s := logits.Shape()
	n, c := s[0], s[1]
	if target == nil {
		return nil, fmt.Errorf("nn: %s: target is nil", name)
	}
	if target.Graph() != logits.Graph() {
		return nil, fmt.Errorf("nn: %s: target is a node of another graph than logits", name)
	}
	if target.Dtype() != tensor.Int || target.IsScalar() || !slices.Equal(target.Shape(), tensor.Shape{n}) {
		return nil, fmt.Errorf("nn: %s: target must be a tensor.Int node of shape (%d), got %v %v", name, n, target.Dtype(), target.Shape())
	}
	if opts.Weight != nil && !slices.Equal(opts.Weight.Shape(), tensor.Shape{c}) {
		return nil, fmt.Errorf("nn: %s: weight shape %v, want (%d)", name, opts.Weight.Shape(), c)
	}
	if ls := opts.LabelSmoothing; !(ls >= 0 && ls <= 1) {
		return nil, fmt.Errorf("nn: %s: LabelSmoothing %v must be in [0, 1]", name, ls)
	}
	red, err := reduction(name, opts.Reduction)
	if err != nil {
		return nil, err
	}
	if n == 0 || c == 0 {
		return nil, fmt.Errorf("nn: %s: logits %v: need at least one row and one class", name, s)
	}
	ignore := -100
	if opts.IgnoreIndex != nil {
		ignore = *opts.IgnoreIndex
	}
	g := logits.Graph()
	eps := opts.LabelSmoothing
	// w[t] (0 where ignored) weighs the rows and, for "mean", sums to the
	// divisor; without a weight it is 1 where nll is not 0, so nll is
	// the loss as it is.
	needWt := opts.Weight != nil || red == "mean"
	w := opts.Weight
	if w == nil && (needWt || eps > 0) {
		if w, err = onesConstant(g, logits.Dtype(), c); err != nil {
			return nil, err
		}
	}
	var wt *gorgonia.Node
	if needWt {
		pickVec, _ := pickSpecs(n, c, ignore, true)
		if wt, err = ad.Apply(pickVec, w, target); err != nil {
			return nil, err
		}
	}
	loss, err := ad.Apply(nllSpec(n, c, ignore), logits, target) // [N]: −log_softmax(x)[t], 0 where ignored
	if err != nil {
		return nil, err
	}
	if opts.Weight != nil {
		if loss, err = gorgonia.HadamardProd(wt, loss); err != nil {
			return nil, err
		}
	}
	if eps > 0 {
		// −Σ_c w_c·logp[n, c] on the rows not ignored, from the
		// log-softmax itself: each logp rounded once, as torch's (lse·Σ_c
		// w_c − Σ_c w_c·x[n, c] carried lse's rounding, |x|·2⁻²⁴ in
		// float32: 3 % of the loss at logits of 1e6).
		logp, err := LogSoftmax(logits, 1) // [N, C]
		if err != nil {
			return nil, err
		}
		wcol, err := ad.Reshape(w, c, 1)
		if err != nil {
			return nil, err
		}
		pw, err := MatMul(logp, wcol, false, false)
		if err != nil {
			return nil, err
		}
		if pw, err = ad.Reshape(pw, n); err != nil {
			return nil, err
		}
		smooth, err := ad.Apply(maskSpec(n, ignore), pw, target) // Σ_c w_c·logp, 0 where ignored
		if err != nil {
			return nil, err
		}
		b := ad.NewBuilder(loss)
		if loss, err = b.Node(b.Add(b.Scale(loss, 1-eps), b.Scale(smooth, -eps/float64(c)))); err != nil {
			return nil, err
		}
	}
	if red != ad.ReductionMean {
		return red.Reduce(loss)
	}
	b := ad.NewBuilder(loss)
	total, weights := b.Sum(loss), b.Sum(wt)
	return b.Node(b.Do(func() (*gorgonia.Node, error) { return gorgonia.Div(total, weights) }))
}

// reduction resolves a loss's Reduction, "" read as torch's default
// "mean".
func reduction(name string, r ad.Reduction) (ad.Reduction, error) {
	red, ok := r.Resolve(ad.ReductionMean)
	if !ok {
		return "", fmt.Errorf("nn: %s: Reduction %q, want \"mean\", \"sum\" or \"none\"", name, string(r))
	}
	return red, nil
}

// onesConstant is a constant vector of c ones.
func onesConstant(g *gorgonia.ExprGraph, dt tensor.Dtype, c int) (*gorgonia.Node, error) {
	var v *tensor.Dense
	if dt == tensor.Float32 {
		d := make([]float32, c)
		for i := range d {
			d[i] = 1
		}
		v = tensor.New(tensor.WithShape(c), tensor.WithBacking(d))
	} else {
		d := make([]float64, c)
		for i := range d {
			d[i] = 1
		}
		v = tensor.New(tensor.WithShape(c), tensor.WithBacking(d))
	}
	return ad.Constant(g, v)
}

// pickSpecs are Pick and its transpose Scatter, a linear pair in their
// first input, for a target t (tensor.Int [n]): Pick(x [n, c], t)[i] =
// x[i, t[i]] and Scatter(g [n], t) → [n, c]; with vec, the weight form
// PickVec(w [c], t)[i] = w[t[i]] and ScatterVec(g [n], t) → [c]. A target
// equal to ignore picks 0 and scatters nothing; any other outside [0, c)
// is an error when the op runs.
func pickSpecs(n, c, ignore int, vec bool) (pick, scatter ad.OpSpec) {
	name, xs := "Pick", tensor.Shape{n, c}
	if vec {
		name, xs = "PickVec", tensor.Shape{c}
	}
	mk := func(opName string, from, to tensor.Shape, forward bool) ad.OpSpec {
		return ad.OpSpec{
			Name: opName, Params: fmt.Sprintf("%v n=%d ignore %d", xs, n, ignore), InputDims: []int{from.Dims(), 1}, OutputDims: to.Dims(),
			InputDtypes: []tensor.Dtype{{}, tensor.Int}, DiffWRT: []bool{true, false},
			Shape: func(in []tensor.Shape) (tensor.Shape, error) {
				if !slices.Equal(in[0], from) || !slices.Equal(in[1], tensor.Shape{n}) {
					return nil, fmt.Errorf("nn: %s: inputs %v and %v, want %v and (%d)", opName, in[0], in[1], from, n)
				}
				return to.Clone(), nil
			},
			Kernel: ad.Floats(pickKernel[float32](vec, c, ignore, forward), pickKernel[float64](vec, c, ignore, forward)),
		}
	}
	return ad.LinearPair(withCUDA(mk(name, xs, tensor.Shape{n}, true), pickGPU{vec, true, c, ignore}),
		withCUDA(mk(map[bool]string{false: "Scatter", true: "ScatterVec"}[vec], tensor.Shape{n}, xs, false), pickGPU{vec, false, c, ignore}))
}

// pickKernel is cpu.Pick (forward) or cpu.Scatter, after checking the
// targets.
func pickKernel[T ad.Float](vec bool, c, ignore int, forward bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		t := in[1].Ints
		if err := checkTargets(t, c, ignore); err != nil {
			return err
		}
		if forward {
			cpu.Pick(vec, c, ignore, out.Data, in[0].Data, t) // out arrives zeroed
		} else {
			cpu.Scatter(vec, c, ignore, out.Data, in[0].Data, t)
		}
		return nil
	}
}

// MSELoss is torch.nn.functional.mse_loss: (input − target)² reduced by
// reduction ("mean", the default "" as torch's; "sum"; "none"). input and
// target have one shape and dtype; differentiable to every order w.r.t.
// both. Errors: nil inputs, dtypes or shapes that differ, an unknown
// reduction.
func MSELoss(input, target *gorgonia.Node, reduction ad.Reduction) (*gorgonia.Node, error) {
	red, err := checkPair("MSELoss", input, target, reduction)
	if err != nil {
		return nil, err
	}
	if ad.NoElements(input) {
		return ad.EmptyResult("MSELoss", red.Shape(input.Shape()), red.OfNothing(), fillTwin, input, target)
	}
	b := ad.NewBuilder(input)
	l, err := b.Node(b.Square(b.Sub(input, target)))
	if err != nil {
		return nil, err
	}
	return red.Reduce(l)
}

// checkPair checks a pointwise loss's inputs and its reduction.
func checkPair(name string, input, target *gorgonia.Node, red ad.Reduction) (ad.Reduction, error) {
	if input == nil || target == nil {
		return "", fmt.Errorf("nn: %s: input or target is nil", name)
	}
	for _, x := range []struct {
		n    *gorgonia.Node
		what string
	}{{input, "input"}, {target, "target"}} {
		if d := x.n.Dtype(); d != tensor.Float32 && d != tensor.Float64 {
			return "", fmt.Errorf("nn: %s: %s dtype %v, want float32 or float64", name, x.what, d)
		}
	}
	if input.Dtype() != target.Dtype() || !slices.Equal(input.Shape(), target.Shape()) {
		return "", fmt.Errorf("nn: %s: target %v %v differs from input %v %v", name, target.Dtype(), target.Shape(), input.Dtype(), input.Shape())
	}
	return reduction(name, red)
}

// SmoothL1Loss is torch.nn.functional.smooth_l1_loss: with d = input −
// target, 0.5·d²/beta where |d| < beta and |d| − 0.5·beta elsewhere (beta
// = 0: |d|, the L1 loss), reduced by reduction ("mean", the default ""
// as torch's; "sum"; "none"). Differentiable to every order w.r.t. both: its derivatives are
// clamp(d/beta, −1, 1) (for beta = 0 the sign of d, and −1 at d = 0, as
// torch 1.13's smooth_l1_loss), then
// 1/beta inside the band and 0 outside, then 0. Errors: as MSELoss's, and
// a negative or NaN beta.
func SmoothL1Loss(input, target *gorgonia.Node, beta float64, reduction ad.Reduction) (*gorgonia.Node, error) {
	if !(beta >= 0) {
		return nil, fmt.Errorf("nn: SmoothL1Loss: beta %v must be non-negative", beta)
	}
	red, err := checkPair("SmoothL1Loss", input, target, reduction)
	if err != nil {
		return nil, err
	}
	if ad.NoElements(input) {
		return ad.EmptyResult("SmoothL1Loss", red.Shape(input.Shape()), red.OfNothing(), fillTwin, input, target)
	}
	d, err := gorgonia.Sub(input, target)
	if err != nil {
		return nil, err
	}
	l, err := ad.Apply(smoothL1Spec(d.Shape(), beta, 0), d)
	if err != nil {
		return nil, err
	}
	return red.Reduce(l)
}

// smoothL1Spec is the order-th derivative of the elementwise smooth L1
// function (0: the function); its Backward is the next one times U.
func smoothL1Spec(s tensor.Shape, beta float64, order int) ad.OpSpec {
	var diff []bool
	var backward func(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error)
	if order < 2 && (order == 0 || beta > 0) {
		backward = func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			next, err := ad.Apply(smoothL1Spec(s, beta, order+1), in[0])
			if err != nil {
				return nil, err
			}
			d, err := gorgonia.HadamardProd(u, next)
			return gorgonia.Nodes{d}, err
		}
	} else {
		diff = []bool{false} // piecewise constant
	}
	return withCUDA(elementwiseSpec(fmt.Sprintf("SmoothL1d%d", order), fmt.Sprint(beta), s, diff,
		ad.Floats(smoothL1Kernel[float32](beta, order), smoothL1Kernel[float64](beta, order)), backward), unaryGPU{unarySmoothL1, beta, order})
}

// smoothL1Kernel is cpu.SmoothL1.
func smoothL1Kernel[T ad.Float](beta float64, order int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.SmoothL1(beta, order, out.Data, in[0].Data)
		return nil
	}
}

// BCEWithLogitsOpts are BinaryCrossEntropyWithLogits' options, named as in
// torch.nn.functional.binary_cross_entropy_with_logits.
type BCEWithLogitsOpts struct {
	// Weight, if not nil, multiplies each element's loss: the input's
	// shape, or [C] for the last axis.
	Weight *gorgonia.Node
	// PosWeight, if not nil, [C]: the weight of the positive term per
	// class (the last axis).
	PosWeight *gorgonia.Node
	// Reduction: "mean" (the default, torch's: ""), "sum" or "none".
	Reduction ad.Reduction
}

// BinaryCrossEntropyWithLogits is
// torch.nn.functional.binary_cross_entropy_with_logits: per element
// w·[(1 − y)·softplus(x) + p·y·softplus(−x)] (torch's
// (1 − y)·x + (1 + (p − 1)·y)·softplus(−x), rearranged) for logits x, targets y in
// [0, 1] (same shape), weight w and positive weight p, with a softplus
// that is stable for any |x|; reduced by Reduction (default "mean",
// torch's). Differentiable to
// every order w.r.t. logits, targets and the weights. Errors: logits and
// target of other shapes or dtypes, a weight of another shape than the
// logits' or [C], PosWeight not [C], an unknown Reduction.
func BinaryCrossEntropyWithLogits(logits, target *gorgonia.Node, opts BCEWithLogitsOpts) (*gorgonia.Node, error) {
	const name = "BinaryCrossEntropyWithLogits"
	red, err := checkPair(name, logits, target, opts.Reduction)
	if err != nil {
		return nil, err
	}
	s := logits.Shape()
	if logits.IsScalar() || s.Dims() == 0 {
		return nil, fmt.Errorf("nn: %s: logits must have rank at least 1, got %v", name, s)
	}
	c := s[s.Dims()-1]
	// broadcast returns w as the logits' shape: as is, or [C] along the
	// last axis.
	broadcast := func(what string, w *gorgonia.Node, vectorOnly bool) (*gorgonia.Node, error) {
		if err := checkNodes(name, []namedNode{{logits, "logits", s.Dims(), false}, {w, what, w.Shape().Dims(), false}}); err != nil {
			return nil, err
		}
		if !vectorOnly && slices.Equal(w.Shape(), s) {
			return w, nil
		}
		if !slices.Equal(w.Shape(), tensor.Shape{c}) {
			return nil, fmt.Errorf("nn: %s: %s shape %v, want (%d) or the logits' %v", name, what, w.Shape(), c, s)
		}
		if s.Dims() == 1 {
			return w, nil
		}
		flat := tensor.Shape{s.TotalSize() / max(c, 1), c}
		_, bcast := axisSpecs(flat, 0)
		b, err := ad.Apply(bcast, w)
		if err != nil {
			return nil, err
		}
		return ad.Reshape(b, s...)
	}
	var p, w *gorgonia.Node
	if opts.PosWeight != nil {
		if p, err = broadcast("pos_weight", opts.PosWeight, true); err != nil {
			return nil, err
		}
	}
	if opts.Weight != nil {
		if w, err = broadcast("weight", opts.Weight, false); err != nil {
			return nil, err
		}
	}
	if ad.NoElements(logits) {
		return ad.EmptyResult(name, red.Shape(s), red.OfNothing(), fillTwin, logits, target, opts.Weight, opts.PosWeight)
	}
	// (1 − y)·softplus(x) + p·y·softplus(−x): each term's gradient is a
	// sigmoid of the right sign, accurate at any |x|.
	b := ad.NewBuilder(logits)
	one := b.Const(1)
	spPos := b.Apply(softplusSpec(s), logits)
	spNeg := b.Apply(softplusSpec(s), b.Neg(logits))
	py := target
	if p != nil {
		py = b.HadamardProd(p, target)
	}
	l := b.Add(b.HadamardProd(b.Sub(one, target), spPos), b.HadamardProd(py, spNeg))
	if w != nil {
		l = b.HadamardProd(w, l)
	}
	if l, err = b.Node(l); err != nil {
		return nil, err
	}
	return red.Reduce(l)
}

// softplusSpec is log(1 + exp(x)), computed as max(x, 0) + log1p(exp(−|x|))
// (no overflow); its gradient is U·sigmoid(x) (Gorgonia's Sigmoid, right at
// every order).
func softplusSpec(s tensor.Shape) ad.OpSpec {
	return withCUDA(elementwiseSpec("Softplus", "", s, nil, ad.Floats(softplusKernel[float32], softplusKernel[float64]),
		func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			sg, err := ad.Apply(sigmoidSpec(s), in[0])
			if err != nil {
				return nil, err
			}
			d, err := gorgonia.HadamardProd(u, sg)
			return gorgonia.Nodes{d}, err
		}), unaryGPU{kind: unarySoftplus})
}

// softplusKernel is cpu.Softplus.
func softplusKernel[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	cpu.Softplus(out.Data, in[0].Data)
	return nil
}

// The CUDA twin's descriptor (launch code in the *_cuda.go files; withCUDA
// ignores it in the CPU build).

// pickGPU is CrossEntropy's Pick, Scatter, PickVec or ScatterVec
// (loss_cuda.go): vec and forward as pickKernel's, c classes, ignore the
// ignored target.
type pickGPU struct {
	vec, forward bool
	c, ignore    int
}
