package ad_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// square is y = x², written once for both float dtypes.
func square[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	for i, x := range in[0].Data {
		out.Data[i] = x * x
	}
	return nil
}

// A new differentiable op in a dozen lines: y = x², whose backward
// (x + x)⊙G is built from graph nodes, so Grad can differentiate it again.
// The same spec runs in float32 and float64.
func ExampleApply() {
	mySquare := ad.OpSpec{
		Name:       "MySquare",
		InputDims:  []int{1},
		OutputDims: 1,
		Shape:      func(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil },
		Kernel:     ad.Floats(square[float32], square[float64]),
		Backward: func(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			twoX, err := gorgonia.Add(in[0], in[0])
			if err != nil {
				return nil, err
			}
			d, err := gorgonia.HadamardProd(twoX, grad)
			return gorgonia.Nodes{d}, err
		},
	}
	for _, x0 := range []any{[]float64{1, 2, 3}, []float32{1, 2, 3}} {
		g := gorgonia.NewGraph()
		xv := tensor.New(tensor.WithShape(3), tensor.WithBacking(x0))
		x := gorgonia.NewVector(g, xv.Dtype(), gorgonia.WithShape(3), gorgonia.WithName("x"), gorgonia.WithValue(xv))
		y, err := ad.Apply(mySquare, x)
		if err != nil {
			panic(err)
		}
		// f = sum(y ⊙ y) = Σx⁴: f' = 4x³, and f'' = 12x² as the gradient of sum(f').
		f := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, y))))
		d1, err := ad.Grad(f, x)
		if err != nil {
			panic(err)
		}
		d2, err := ad.Grad(gorgonia.Must(gorgonia.Sum(d1[0])), x)
		if err != nil {
			panic(err)
		}
		var v1, v2 gorgonia.Value
		gorgonia.Read(d1[0], &v1)
		gorgonia.Read(d2[0], &v2)
		m := gorgonia.NewTapeMachine(g)
		if err := m.RunAll(); err != nil {
			panic(err)
		}
		m.Close()
		fmt.Println(xv.Dtype(), v1.Data(), v2.Data())
	}
	// Output:
	// float64 [4 32 108] [12 48 108]
	// float32 [4 32 108] [12 48 108]
}

// One MAML step through RoIAlign. A tiny box scorer has parameters
// θ = (a, w): features tanh(a·x), one 2×2 RoIAlign crop per box, score =
// Σ w ⊙ crop. Adapting to a task takes one gradient step on the support
// boxes, θ' = θ − α∇L_s(θ); the meta-gradient is the gradient of the query
// loss L_q(θ') w.r.t. θ, through the inner gradient: a second derivative
// through RoIAlign (torchvision: "double backwards not supported").
func ExampleGrad() {
	g := gorgonia.NewGraph()
	node := func(name string, shape []int, data ...float64) *gorgonia.Node {
		return gorgonia.NewTensor(g, tensor.Float64, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))))
	}
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 6, 6), gorgonia.WithName("image"),
		gorgonia.WithInit(gorgonia.RangedFrom(-18))) // pixels -18 .. 17
	a := gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithName("a"), gorgonia.WithValue(0.05))
	w := node("w", []int{1, 1, 2, 2}, 0.5, -0.25, 0.25, 1)
	// Boxes (batch_index, x1, y1, x2, y2) and target scores of a task.
	support, supportT := node("support", []int{2, 5}, 0, 0.5, 0.5, 3.5, 3.5, 0, 2, 1, 5.5, 4), node("st", []int{2}, 1, -1)
	query, queryT := node("query", []int{1, 5}, 0, 1, 1.5, 4.5, 5), node("qt", []int{1}, 0.5)

	// loss(θ, boxes, target) = Σ_k (score_k − target_k)².
	loss := func(a, w, boxes, target *gorgonia.Node) *gorgonia.Node {
		feat := gorgonia.Must(gorgonia.Tanh(gorgonia.Must(gorgonia.Mul(x, a))))
		crop, err := gops.RoIAlign(feat, boxes, gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2})
		if err != nil {
			panic(err)
		}
		weighted := gorgonia.Must(gorgonia.BroadcastHadamardProd(crop, w, nil, []byte{0}))
		score := gorgonia.Must(gorgonia.Sum(weighted, 1, 2, 3))
		return gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(gorgonia.Must(gorgonia.Sub(score, target))))))
	}
	alpha := gorgonia.Must(ad.Constant(g, gorgonia.NewF64(0.1)))
	inner, err := ad.Grad(loss(a, w, support, supportT), a, w) // ∇L_s(θ), nodes of the graph
	if err != nil {
		panic(err)
	}
	a2 := gorgonia.Must(gorgonia.Sub(a, gorgonia.Must(gorgonia.Mul(inner[0], alpha))))
	w2 := gorgonia.Must(gorgonia.Sub(w, gorgonia.Must(gorgonia.Mul(inner[1], alpha))))
	meta, err := ad.Grad(loss(a2, w2, query, queryT), a, w) // ∇θ L_q(θ − α∇L_s(θ))
	if err != nil {
		panic(err)
	}
	var da, dw gorgonia.Value
	gorgonia.Read(meta[0], &da)
	gorgonia.Read(meta[1], &dw)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		panic(err)
	}
	fmt.Printf("meta-gradient w.r.t. a: %.6f\n", da.Data())
	fmt.Printf("meta-gradient w.r.t. w: %.6f\n", dw.Data())
	// Central differences of θ ↦ L_q(θ − α∇L_s(θ)) give the same six digits.

	// Output:
	// meta-gradient w.r.t. a: -8.123131
	// meta-gradient w.r.t. w: [-0.490198 -0.436960 3.182251 3.173002]
}
