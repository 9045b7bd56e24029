package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// tanhOrders runs tanh (nn's or Gorgonia's) on x and returns its value, the
// gradient of Σ R⊙tanh(x) and the gradient of Σ V⊙(that gradient), all
// w.r.t. x.
func tanhOrders[T float32 | float64](t *testing.T, tanh func(*gorgonia.Node) (*gorgonia.Node, error), x, r, v []T) [3][]T {
	t.Helper()
	g := gorgonia.NewGraph()
	dt := tensor.Float64
	if _, ok := any(x).([]float32); ok {
		dt = tensor.Float32
	}
	node := func(name string, d []T) *gorgonia.Node {
		return gorgonia.NewTensor(g, dt, 2, gorgonia.WithShape(3, len(d)/3), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(3, len(d)/3), tensor.WithBacking(append([]T(nil), d...)))))
	}
	xn, rn, vn := node("x", x), node("r", r), node("v", v)
	y, err := tanh(xn)
	if err != nil {
		t.Fatal(err)
	}
	g1, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, rn)))), xn)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(g1[0], vn)))), xn)
	if err != nil {
		t.Fatal(err)
	}
	var out [3]gorgonia.Value
	for i, n := range []*gorgonia.Node{y, g1[0], g2[0]} {
		gorgonia.Read(n, &out[i])
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	var res [3][]T
	for i, o := range out {
		res[i] = o.Data().([]T)
	}
	return res
}

// TestTanhBitwiseGorgonia: nn.Tanh's values, gradients and second
// derivatives are bitwise those of Gorgonia's Tanh, which it replaced (the
// demo's printed numbers depend on it), NaN and ±Inf included.
func TestTanhBitwiseGorgonia(t *testing.T) {
	t.Run("float64", func(t *testing.T) { checkTanhBitwise[float64](t) })
	t.Run("float32", func(t *testing.T) { checkTanhBitwise[float32](t) })
}

func checkTanhBitwise[T float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 3 * 41
	x, r, v := make([]T, n), make([]T, n), make([]T, n)
	for i := range x {
		x[i], r[i], v[i] = T(4*rng.NormFloat64()), T(rng.NormFloat64()), T(rng.NormFloat64())
	}
	x[0], x[1], x[2], x[3], x[4] = T(math.NaN()), T(math.Inf(1)), T(math.Inf(-1)), 0, T(math.Copysign(0, -1))
	got := tanhOrders(t, nn.Tanh, x, r, v)
	want := tanhOrders(t, gorgonia.Tanh, x, r, v)
	for o := range got {
		for i := range got[o] {
			a, b := float64(got[o][i]), float64(want[o][i])
			if math.Float64bits(a) != math.Float64bits(b) {
				t.Errorf("order %d, element %d (x = %v): nn %v, Gorgonia %v", o, i, x[i], a, b)
			}
		}
	}
}
