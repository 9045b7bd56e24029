package nn_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A model with two parameters, cost = Σ(x·w + b)², its gradients after a
// run, one SGD step on the parameters in place, and a re-run that sees the
// new values. torch gives the same numbers: cost 132.25, w.grad [23, 46],
// b.grad [23], and 102.4144 after torch.optim.SGD(lr=0.01).step().
func ExampleParams_Grad() {
	p := nn.NewParams()
	p.Add("w", tensor.New(tensor.WithShape(2, 1), tensor.WithBacking([]float64{3, 4})))
	p.Add("b", tensor.New(tensor.WithShape(1, 1), tensor.WithBacking([]float64{0.5})))

	g := gorgonia.NewGraph()
	params, _ := p.Nodes(g) // w, b: input nodes holding the set's tensors
	x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(1, 2), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 2), tensor.WithBacking([]float64{1, 2}))))
	xw, _ := nn.MatMul(x, params[0], false, false)
	y, _ := gorgonia.Add(xw, params[1])
	cost, _ := gorgonia.Sum(gorgonia.Must(gorgonia.Square(y)))
	var costV gorgonia.Value
	gorgonia.Read(cost, &costV)
	grads, err := p.Grad(cost) // before the machine is made
	if err != nil {
		fmt.Println(err)
		return
	}

	m, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("cost", costV)
	for i, name := range p.Names() {
		fmt.Println("grad", name, grads.Values()[i].Data())
	}

	// SGD with lr 0.01, in place: every graph over p sees it.
	for i, v := range p.Values() {
		w, gw := v.Data().([]float64), grads.Values()[i].Data().([]float64)
		for k := range w {
			w[k] -= 0.01 * gw[k]
		}
	}
	m.Reset()
	if err := m.RunAll(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("cost after one step %.4f\n", costV.Data())
	// Output:
	// cost 132.25
	// grad w [23 46]
	// grad b [23]
	// cost after one step 102.4144
}
