package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Linear on a batch of two samples with three features, a [2, 3] weight in
// torch's [out, in] layout and a bias; the gradients of the sum of squares
// of the result w.r.t. the weight and the bias, as torch's F.linear gives.
func ExampleLinear() {
	g := gorgonia.NewGraph()
	node := func(name string, shape []int, data ...float64) *gorgonia.Node {
		return gorgonia.NewTensor(g, tensor.Float64, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))))
	}
	x := node("x", []int{2, 3}, 1, 2, 3, 4, 5, 6)
	w := node("weight", []int{2, 3}, 1, 0, -1, 0, 1, 0)
	b := node("bias", []int{2}, 0.5, -1)
	y, err := nn.Linear(x, w, b) // x·wᵀ + b: [2, 2]
	if err != nil {
		panic(err)
	}
	loss := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y))))
	grads, err := ad.Grad(loss, w, b)
	if err != nil {
		panic(err)
	}
	var yv, dw, db gorgonia.Value
	gorgonia.Read(y, &yv)
	gorgonia.Read(grads[0], &dw)
	gorgonia.Read(grads[1], &db)
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		panic(err)
	}
	fmt.Println("y =", yv.Data())
	fmt.Println("dloss/dweight =", dw.Data())
	fmt.Println("dloss/dbias =", db.Data())
	// Output:
	// y = [-1.5 1 -1.5 4]
	// dloss/dweight = [-15 -21 -27 34 44 54]
	// dloss/dbias = [-6 10]
}

// LinearInit makes a layer's weight and bias as torch.nn.Linear(784, 256)
// does (kaiming_uniform_ with a = √5: U(±1/√784) for both), from a seeded
// generator: the same seed gives the same tensors on every run.
func ExampleLinearInit() {
	rng := rand.New(rand.NewPCG(1, 2))
	w, b, err := nn.LinearInit(784, 256, true, tensor.Float32, rng)
	if err != nil {
		panic(err)
	}
	within := true
	for _, v := range append(w.Data().([]float32), b.Data().([]float32)...) {
		within = within && math.Abs(float64(v)) <= 1.0/28
	}
	fmt.Println("weight", w.Shape(), "bias", b.Shape(), "within ±1/28:", within)
	// Output:
	// weight (256, 784) bias (256) within ±1/28: true
}
