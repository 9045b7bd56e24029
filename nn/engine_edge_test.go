package nn_test

import (
	"math"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/tensor"
)

// bitsEqual reports whether a and b hold the same bits (NaN included).
func bitsEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// TestEngineMulTransposed: a tensor transposed lazily (Dense.T without
// Transpose, its data still in the old order) is multiplied as StdEng
// does, by its logical elements, not its memory order; as the first
// operand, the second, and as the reuse and incr destination.
func TestEngineMulTransposed(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, which := range []string{"a", "b", "incr"} {
			mk := func() (a, b, d *tensor.Dense) {
				a, _ = engineTensor(dt, 1, 3, 3)
				b, _ = engineTensor(dt, 2, 3, 3)
				d, _ = engineTensor(dt, 3, 3, 3)
				lazy := map[string]*tensor.Dense{"a": a, "b": b, "incr": d}[which]
				if err := lazy.T(); err != nil {
					t.Fatal(err)
				}
				return a, b, d
			}
			var opts func(d *tensor.Dense) []tensor.FuncOpt
			if which == "incr" {
				opts = func(d *tensor.Dense) []tensor.FuncOpt { return []tensor.FuncOpt{tensor.WithIncr(d)} }
			} else {
				opts = func(*tensor.Dense) []tensor.FuncOpt { return nil }
			}
			a, b, d := mk()
			want, errStd := tensor.StdEng{}.Mul(a, b, opts(d)...)
			a, b, d = mk()
			got, err := nn.Engine{}.Mul(a, b, opts(d)...)
			if (err != nil) != (errStd != nil) {
				t.Fatalf("%v %s: error %v, StdEng's %v", dt, which, err, errStd)
			}
			if err != nil {
				continue
			}
			if g, w := graphtest.Floats(got), graphtest.Floats(want); !bitsEqual(g, w) {
				t.Errorf("%v lazily transposed %s: Mul = %v, StdEng's %v", dt, which, g, w)
			}
		}
	}
}

// TestEngineSumSpecials: NaN, ±Inf and -0 reach Sum as they reach
// StdEng's; a float32 sum whose partial sums overflow is StdEng's +Inf.
func TestEngineSumSpecials(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range [][]float64{
		{1, math.NaN(), 2},
		{inf, 1},
		{inf, -inf},
		{math.Copysign(0, -1)},
		{math.Copysign(0, -1), math.Copysign(0, -1)},
	} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			mk := func() *tensor.Dense {
				if dt == tensor.Float32 {
					f := make([]float32, len(c))
					for i, v := range c {
						f[i] = float32(v)
					}
					return tensor.New(tensor.WithShape(len(c)), tensor.WithBacking(f))
				}
				return tensor.New(tensor.WithShape(len(c)), tensor.WithBacking(append([]float64(nil), c...)))
			}
			got, err := nn.Engine{}.Sum(mk())
			if err != nil {
				t.Fatal(err)
			}
			want, err := tensor.StdEng{}.Sum(mk())
			if err != nil {
				t.Fatal(err)
			}
			if g, w := graphtest.Floats(got), graphtest.Floats(want); !bitsEqual(g, w) {
				t.Errorf("%v Sum(%v) = %v, StdEng's %v", dt, c, g, w)
			}
		}
	}
}
