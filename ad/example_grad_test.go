package ad_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// task is a few-shot task for a tiny box scorer with parameters θ = (a, w):
// features tanh(a·x) of a 6×6 image x, one 2×2 RoIAlign crop per box, score
// = Σ w ⊙ crop. Support and query boxes (batch_index, x1, y1, x2, y2) come
// with target scores.
type task struct {
	x, a, w                *gorgonia.Node
	support, st, query, qt *gorgonia.Node
}

// newTask puts the image, the task and θ = (a0, w0) into a new graph.
func newTask(a0 float64, w0 []float64) *task {
	g := gorgonia.NewGraph()
	node := func(name string, shape []int, data ...float64) *gorgonia.Node {
		return gorgonia.NewTensor(g, tensor.Float64, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), data...)))))
	}
	return &task{
		x: gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 6, 6), gorgonia.WithName("image"),
			gorgonia.WithInit(gorgonia.RangedFrom(-18))), // pixels -18 .. 17
		a:       gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithName("a"), gorgonia.WithValue(a0)),
		w:       node("w", []int{1, 1, 2, 2}, w0...),
		support: node("support", []int{2, 5}, 0, 0.5, 0.5, 3.5, 3.5, 0, 2, 1, 5.5, 4), st: node("st", []int{2}, 1, -1),
		query: node("query", []int{1, 5}, 0, 1, 1.5, 4.5, 5), qt: node("qt", []int{1}, 0.5),
	}
}

// loss is Σ_k (score_k − target_k)² of the scorer with parameters a, w.
func (t *task) loss(a, w, boxes, target *gorgonia.Node) *gorgonia.Node {
	feat := gorgonia.Must(gorgonia.Tanh(gorgonia.Must(gorgonia.Mul(t.x, a))))
	crop, err := gops.RoIAlign(feat, boxes, gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2})
	if err != nil {
		panic(err)
	}
	weighted := gorgonia.Must(gorgonia.BroadcastHadamardProd(crop, w, nil, []byte{0}))
	score := gorgonia.Must(gorgonia.Sum(weighted, 1, 2, 3))
	return gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(gorgonia.Must(gorgonia.Sub(score, target))))))
}

// alpha is the inner step size.
const alpha = 0.1

// metaGradient is one MAML step: adapting to the task takes one gradient
// step on the support boxes, θ' = θ − α∇L_s(θ), and the meta-gradient is
// the gradient of the query loss L_q(θ') w.r.t. θ, through the inner
// gradient: a second derivative through RoIAlign (torchvision: "double
// backwards not supported").
func metaGradient(a0 float64, w0 []float64) (da float64, dw []float64, err error) {
	t := newTask(a0, w0)
	g := t.x.Graph()
	step, err := ad.Constant(g, gorgonia.NewF64(alpha))
	if err != nil {
		return 0, nil, err
	}
	inner, err := ad.Grad(t.loss(t.a, t.w, t.support, t.st), t.a, t.w) // ∇L_s(θ), nodes of the graph
	if err != nil {
		return 0, nil, err
	}
	a2 := gorgonia.Must(gorgonia.Sub(t.a, gorgonia.Must(gorgonia.Mul(inner[0], step))))
	w2 := gorgonia.Must(gorgonia.Sub(t.w, gorgonia.Must(gorgonia.Mul(inner[1], step))))
	meta, err := ad.Grad(t.loss(a2, w2, t.query, t.qt), t.a, t.w) // ∇θ L_q(θ − α∇L_s(θ))
	if err != nil {
		return 0, nil, err
	}
	var dav, dwv gorgonia.Value
	gorgonia.Read(meta[0], &dav)
	gorgonia.Read(meta[1], &dwv)
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return 0, nil, err
	}
	return dav.Data().(float64), dwv.Data().([]float64), nil
}

// One MAML step through RoIAlign: the meta-gradient of a tiny box scorer
// (TestExampleGradFiniteDifferences checks it against central differences
// of θ ↦ L_q(θ − α∇L_s(θ)) computed with first-order graphs only).
func ExampleGrad() {
	da, dw, err := metaGradient(0.05, []float64{0.5, -0.25, 0.25, 1})
	if err != nil {
		panic(err)
	}
	fmt.Printf("meta-gradient w.r.t. a: %.6f\n", da)
	fmt.Printf("meta-gradient w.r.t. w: %.6f\n", dw)
	// Output:
	// meta-gradient w.r.t. a: -8.123131
	// meta-gradient w.r.t. w: [-0.490198 -0.436960 3.182251 3.173002]
}
