package main

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// sceneInputs are the input nodes of one scene (support or query set).
type sceneInputs struct {
	canvas, boxes, target *gorgonia.Node
}

func newSceneInputs(g *gorgonia.ExprGraph, prefix string, b, k, side int) sceneInputs {
	return sceneInputs{
		canvas: gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(b, 1, side, side), gorgonia.WithName(prefix+"_canvas"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(b, 1, side, side), tensor.Of(tensor.Float64)))),
		boxes: gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(k, 5), gorgonia.WithName(prefix+"_boxes"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(k, 5), tensor.Of(tensor.Float64)))),
		target: gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(k), gorgonia.WithName(prefix+"_target"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(k), tensor.Of(tensor.Int)))),
	}
}

// lossGrad builds the model at parameters at on the scene inputs and the
// gradient of its loss w.r.t. wrt.
func (in sceneInputs) lossGrad(a Arch, at, wrt gorgonia.Nodes) (*Forward, gorgonia.Nodes, error) {
	fw, err := a.BuildModel(at, in.canvas, in.boxes, in.target)
	if err != nil {
		return nil, nil, err
	}
	grads, err := ad.Grad(fw.Loss, wrt...)
	if err != nil {
		return nil, nil, fmt.Errorf("gradient: %w", err)
	}
	return fw, grads, nil
}

// set binds a scene's values (copies) to the input nodes.
func (s sceneInputs) set(sc *scenes.Scene) error {
	for _, p := range []struct {
		n *gorgonia.Node
		v *tensor.Dense
	}{{s.canvas, sc.Canvas}, {s.boxes, sc.Boxes}, {s.target, sc.Target}} {
		if !p.v.Shape().Eq(p.n.Shape()) {
			return fmt.Errorf("%s: value of shape %v for a node of shape %v", p.n.Name(), p.v.Shape(), p.n.Shape())
		}
		if err := gorgonia.Let(p.n, p.v.Clone()); err != nil {
			return err
		}
	}
	return nil
}

// newReuseGraph returns a new graph whose ops write their results into
// the memory of two runs before (ad.ReuseResults) instead of fresh arrays:
// at the larger sizes many [B, F, H, W] results of megabytes each that
// would be zeroed and faulted in afresh every run. It is safe for the
// demo's graphs: one TapeMachine runs each graph, one run at a time, and
// every value leaves a run only through gorgonia.Read, which on a
// TapeMachine copies (and values copies again), never as a node's Value.
// The values are the same, bit for bit.
func newReuseGraph() *gorgonia.ExprGraph {
	g := gorgonia.NewGraph()
	ad.ReuseResults(g, true)
	return g
}

// newParamNodes makes one input node per parameter.
func newParamNodes(g *gorgonia.ExprGraph, a Arch) gorgonia.Nodes {
	shapes := a.ParamShapes()
	theta := make(gorgonia.Nodes, numParams)
	for i, s := range shapes {
		theta[i] = gorgonia.NewTensor(g, tensor.Float64, s.Dims(), gorgonia.WithShape(s...), gorgonia.WithName(fmt.Sprintf("theta%d", i)),
			gorgonia.WithValue(tensor.New(tensor.WithShape(s...), tensor.Of(tensor.Float64))))
	}
	return theta
}

// setParams binds copies of p to the parameter nodes.
func setParams(theta gorgonia.Nodes, p Params) error {
	for i, n := range theta {
		if len(p[i]) != n.Shape().TotalSize() {
			return fmt.Errorf("parameter %d (%s) has %d values, want %d", i, paramNames[i], len(p[i]), n.Shape().TotalSize())
		}
		v := tensor.New(tensor.WithShape(n.Shape()...), tensor.WithBacking(append([]float64(nil), p[i]...)))
		if err := gorgonia.Let(n, v); err != nil {
			return err
		}
	}
	return nil
}

// tape is a compiled graph (its machine) and its parameter nodes, the part
// that LossGrad and MetaGraph share.
type tape struct {
	m     gorgonia.VM
	theta gorgonia.Nodes
}

// Close releases the machine.
func (t *tape) Close() { t.m.Close() }

// run sets the parameters to p, then the inputs through each of set in
// order, and runs the graph (called what in its error).
func (t *tape) run(p Params, what string, set ...func() error) error {
	if err := setParams(t.theta, p); err != nil {
		return err
	}
	for _, f := range set {
		if err := f(); err != nil {
			return err
		}
	}
	t.m.Reset()
	if err := t.m.RunAll(); err != nil {
		return fmt.Errorf("running the %s graph: %w", what, err)
	}
	return nil
}

// LossGrad is a compiled graph of the model's loss on one scene shape and
// its first-order gradient w.r.t. every parameter.
type LossGrad struct {
	tape
	in     sceneInputs
	lossV  gorgonia.Value
	logitV gorgonia.Value
	offV   gorgonia.Value
	maskV  gorgonia.Value
	cropV  gorgonia.Value
	gradV  [numParams]gorgonia.Value
}

// LossGradValues is one evaluation of a LossGrad.
type LossGradValues struct {
	Loss   float64
	Logits []float64 // [K, N] row-major
	Grad   Params
	Offset []float64 // [K, 18, Q, Q]
	Mask   []float64 // [K, 9, Q, Q]
	Crops  []float64 // [K, F, P, P]
}

// NewLossGrad builds the graph for scenes of b canvases and k boxes.
func NewLossGrad(a Arch, b, k int) (*LossGrad, error) {
	g := newReuseGraph()
	lg := &LossGrad{tape: tape{theta: newParamNodes(g, a)}, in: newSceneInputs(g, "x", b, k, a.Canvas)}
	fw, grads, err := lg.in.lossGrad(a, lg.theta, lg.theta)
	if err != nil {
		return nil, fmt.Errorf("loss: %w", err)
	}
	gorgonia.Read(fw.Loss, &lg.lossV)
	gorgonia.Read(fw.Logits, &lg.logitV)
	gorgonia.Read(fw.Offset, &lg.offV)
	gorgonia.Read(fw.Mask, &lg.maskV)
	gorgonia.Read(fw.Crops, &lg.cropV)
	for i, gn := range grads {
		gorgonia.Read(gn, &lg.gradV[i])
	}
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		return nil, err
	}
	lg.m = vm
	return lg, nil
}

// Eval runs the graph at parameters p on scene sc.
func (lg *LossGrad) Eval(p Params, sc *scenes.Scene) (*LossGradValues, error) {
	if err := lg.run(p, "loss", func() error { return lg.in.set(sc) }); err != nil {
		return nil, err
	}
	out := &LossGradValues{}
	var err error
	if out.Loss, err = scalar(lg.lossV); err != nil {
		return nil, fmt.Errorf("loss: %w", err)
	}
	if out.Logits, err = values(lg.logitV); err != nil {
		return nil, fmt.Errorf("logits: %w", err)
	}
	if out.Offset, err = values(lg.offV); err != nil {
		return nil, fmt.Errorf("offsets: %w", err)
	}
	if out.Mask, err = values(lg.maskV); err != nil {
		return nil, fmt.Errorf("mask: %w", err)
	}
	if out.Crops, err = values(lg.cropV); err != nil {
		return nil, fmt.Errorf("crops: %w", err)
	}
	for i, v := range lg.gradV {
		if out.Grad[i], err = values(v); err != nil {
			return nil, fmt.Errorf("gradient of %s: %w", paramNames[i], err)
		}
	}
	return out, nil
}

// MetaGraph is the compiled second-order MAML graph of one task:
//
//	g  = ∇θ Ls(θ)                 (ad.Grad on the support loss)
//	θ' = θ - α·g                   (one inner step, as graph nodes)
//	Lq = query loss at θ'
//	∇θ Lq(θ - α·∇θ Ls(θ))          (ad.Grad through g: second order)
//
// The meta-gradient differentiates through the inner gradient, so it holds
// the Hessian-vector product -α·∇²Ls·∇θ'Lq: second derivatives through
// RoIAlign and DeformConv2d (input, offset, mask and weight).
type MetaGraph struct {
	tape
	sup, qry   sceneInputs
	lsV, lqV   gorgonia.Value
	logitV     gorgonia.Value
	metaGradV  [numParams]gorgonia.Value
	innerGradV [numParams]gorgonia.Value
}

// MetaValues is one evaluation of a MetaGraph.
type MetaValues struct {
	SupportLoss float64   // Ls(θ)
	QueryLoss   float64   // Lq(θ'): the MAML objective of the task
	Logits      []float64 // query logits at θ'
	MetaGrad    Params    // ∇θ Lq(θ - α∇Ls(θ)), second order
	InnerGrad   Params    // ∇θ Ls(θ)
}

// NewMetaGraph builds the graph for support scenes of (bs canvases, ks
// boxes) and query scenes of (bq, kq), with inner step size alpha.
func NewMetaGraph(a Arch, bs, ks, bq, kq int, alpha float64) (*MetaGraph, error) {
	g := newReuseGraph()
	mg := &MetaGraph{
		tape: tape{theta: newParamNodes(g, a)},
		sup:  newSceneInputs(g, "support", bs, ks, a.Canvas),
		qry:  newSceneInputs(g, "query", bq, kq, a.Canvas),
	}
	fs, inner, err := mg.sup.lossGrad(a, mg.theta, mg.theta)
	if err != nil {
		return nil, fmt.Errorf("support loss: %w", err)
	}
	step, err := ad.Constant(g, gorgonia.NewF64(alpha))
	if err != nil {
		return nil, err
	}
	adapted := make(gorgonia.Nodes, numParams)
	for i := range mg.theta {
		d, err := gorgonia.Mul(inner[i], step)
		if err != nil {
			return nil, err
		}
		if adapted[i], err = gorgonia.Sub(mg.theta[i], d); err != nil {
			return nil, err
		}
	}
	fq, meta, err := mg.qry.lossGrad(a, adapted, mg.theta)
	if err != nil {
		return nil, fmt.Errorf("query loss (meta-gradient): %w", err)
	}
	gorgonia.Read(fs.Loss, &mg.lsV)
	gorgonia.Read(fq.Loss, &mg.lqV)
	gorgonia.Read(fq.Logits, &mg.logitV)
	for i := range meta {
		gorgonia.Read(meta[i], &mg.metaGradV[i])
		gorgonia.Read(inner[i], &mg.innerGradV[i])
	}
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		return nil, err
	}
	mg.m = vm
	return mg, nil
}

// Eval runs the graph at parameters p on task t.
func (mg *MetaGraph) Eval(p Params, t *scenes.Task) (*MetaValues, error) {
	if err := mg.run(p, "meta", func() error { return mg.sup.set(t.Support) }, func() error { return mg.qry.set(t.Query) }); err != nil {
		return nil, err
	}
	out := &MetaValues{}
	var err error
	if out.SupportLoss, err = scalar(mg.lsV); err != nil {
		return nil, err
	}
	if out.QueryLoss, err = scalar(mg.lqV); err != nil {
		return nil, err
	}
	if out.Logits, err = values(mg.logitV); err != nil {
		return nil, err
	}
	for i := range mg.metaGradV {
		if out.MetaGrad[i], err = values(mg.metaGradV[i]); err != nil {
			return nil, fmt.Errorf("meta-gradient of %s: %w", paramNames[i], err)
		}
		if out.InnerGrad[i], err = values(mg.innerGradV[i]); err != nil {
			return nil, fmt.Errorf("inner gradient of %s: %w", paramNames[i], err)
		}
	}
	return out, nil
}

// values copies a float64 tensor value.
func values(v gorgonia.Value) ([]float64, error) {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("value is %T, want *tensor.Dense", v)
	}
	if d.IsView() {
		d = d.Materialize().(*tensor.Dense)
	}
	data, ok := d.Data().([]float64)
	if !ok {
		return nil, fmt.Errorf("value %v is not float64", d.Shape())
	}
	return append([]float64(nil), data...), nil
}

// accuracy is the fraction of rows of logits ([K, ways]) whose largest
// entry is at the label.
func accuracy(logits []float64, labels []int, ways int) float64 {
	if len(labels) == 0 {
		return 0
	}
	right := 0
	for k, l := range labels {
		row := logits[k*ways : (k+1)*ways]
		best := 0
		for j := range row {
			if row[j] > row[best] {
				best = j
			}
		}
		if best == l {
			right++
		}
	}
	return float64(right) / float64(len(labels))
}
