package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestTanhOrders: nn.Tanh's derivatives of orders 1 to 3 agree with finite
// differences, and the TapeMachine with the LispMachine, float64 and
// float32.
func TestTanhOrders(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 2))
	x := make([]float64, 2*7)
	for i := range x {
		x[i] = 1.5 * r.NormFloat64()
	}
	in := []*tensor.Dense{tensor.New(tensor.WithShape(2, 7), tensor.WithBacking(x))}
	f := cubeOf(func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Tanh(in[0]) })
	o := graphtest.Options{Seed: 4, Order: 3}
	if testing.Short() {
		o.Order = 2
	}
	if err := graphtest.Check(f, in, o); err != nil {
		t.Fatal(err)
	}
	if err := graphtest.CheckVMs(f, in, graphtest.Options{RTol: 1e-12, ATol: 1e-12}); err != nil {
		t.Fatal(err)
	}
	if err := graphtest.CheckVMs(f, graphtest.Float32(in), graphtest.Options{RTol: 2e-5, ATol: 2e-5}); err != nil {
		t.Fatal(err)
	}
}

// TestTanhFloat32Extremes: at float32's extremes (the largest and
// smallest normal and subnormal values, either sign, and values around
// where tanh rounds to ±1) nn.Tanh and its first two derivatives are
// bitwise Gorgonia's.
func TestTanhFloat32Extremes(t *testing.T) {
	var x []float32
	for _, v := range []float32{math.MaxFloat32, math.SmallestNonzeroFloat32, 1.17549435e-38, 8, 9, 9.01, 10, 44, 44.1, 88.7, 1e-4, 0.625, 0.6249999, 20, 1} {
		x = append(x, v, -v)
	}
	r, v := make([]float32, len(x)), make([]float32, len(x))
	for i := range r {
		r[i], v[i] = float32(i%5)-2.5, float32(i%3)+0.5
	}
	got := tanhOrders(t, nn.Tanh, x, r, v)
	want := tanhOrders(t, gorgonia.Tanh, x, r, v)
	for o := range got {
		for i := range got[o] {
			if math.Float32bits(got[o][i]) != math.Float32bits(want[o][i]) {
				t.Errorf("order %d, x = %v: nn %v, Gorgonia %v", o, x[i], got[o][i], want[o][i])
			}
		}
	}
	for i, y := range got[0] {
		if y < -1 || y > 1 || (x[i] != 0 && math.Signbit(float64(y)) != math.Signbit(float64(x[i]))) {
			t.Errorf("tanh(%v) = %v", x[i], y)
		}
	}
}
