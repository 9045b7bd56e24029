package nn_test

import (
	"math"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
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

// TestEngineLikeStdEng: the calls that Engine leaves to StdEng, or does on
// its own in ways easy to get wrong (ints, 0-d scalars, a row vector times
// a vector, a reuse tensor of another shape, a mixed-dtype pair), give
// StdEng's values and shapes, or an error where StdEng's is one: Mul, Add
// and Sum.
func TestEngineLikeStdEng(t *testing.T) {
	f64 := func(shape []int, v ...float64) *tensor.Dense {
		if len(shape) == 0 {
			return tensor.New(tensor.FromScalar(v[0]))
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), v...)))
	}
	cases := []struct {
		name string
		mk   func() (a, b *tensor.Dense, opts []tensor.FuncOpt)
	}{
		{"ints", func() (a, b *tensor.Dense, _ []tensor.FuncOpt) {
			return tensor.New(tensor.WithShape(3), tensor.WithBacking([]int{1, 2, 3})), tensor.New(tensor.WithShape(3), tensor.WithBacking([]int{4, 5, 6})), nil
		}},
		{"0-d", func() (a, b *tensor.Dense, _ []tensor.FuncOpt) { return f64(nil, 3), f64(nil, -0.5), nil }},
		{"row-vector-vector", func() (a, b *tensor.Dense, _ []tensor.FuncOpt) {
			return f64([]int{1, 3}, 1, 2, 3), f64([]int{3}, 4, 5, 6), nil
		}},
		{"reuse-other-shape", func() (a, b *tensor.Dense, _ []tensor.FuncOpt) {
			return f64([]int{2, 3}, 1, 2, 3, 4, 5, 6), f64([]int{2, 3}, 6, 5, 4, 3, 2, 1),
				[]tensor.FuncOpt{tensor.WithReuse(f64([]int{3, 2}, 0, 0, 0, 0, 0, 0))}
		}},
		{"unsafe", func() (a, b *tensor.Dense, _ []tensor.FuncOpt) {
			return f64([]int{2}, 1, 2), f64([]int{2}, 3, 4), []tensor.FuncOpt{tensor.UseUnsafe()}
		}},
		{"float32-float64", func() (a, b *tensor.Dense, _ []tensor.FuncOpt) {
			return tensor.New(tensor.WithShape(2), tensor.WithBacking([]float32{1, 2})), f64([]int{2}, 3, 4), nil
		}},
	}
	for _, c := range cases {
		a, b, opts := c.mk()
		want, errStd := tensor.StdEng{}.Mul(a, b, opts...)
		a, b, opts = c.mk()
		got, err := nn.Engine{}.Mul(a, b, opts...)
		if (err != nil) != (errStd != nil) {
			t.Errorf("%s: Mul error %v, StdEng's %v", c.name, err, errStd)
			continue
		}
		if err == nil {
			if g, w := graphtest.Floats(got), graphtest.Floats(want); !bitsEqual(g, w) || !got.Shape().Eq(want.Shape()) || len(got.Shape()) != len(want.Shape()) {
				t.Errorf("%s: Mul = %v %v, StdEng's %v %v", c.name, got.Shape(), g, want.Shape(), w)
			}
		}
		a, b, opts = c.mk()
		wantAdd, errStd := tensor.StdEng{}.Add(a, b, opts...)
		a, b, opts = c.mk()
		gotAdd, err := nn.Engine{}.Add(a, b, opts...)
		if (err != nil) != (errStd != nil) {
			t.Errorf("%s: Add error %v, StdEng's %v", c.name, err, errStd)
		} else if err == nil {
			if g, w := graphtest.Floats(gotAdd), graphtest.Floats(wantAdd); !bitsEqual(g, w) || !gotAdd.Shape().Eq(wantAdd.Shape()) || len(gotAdd.Shape()) != len(wantAdd.Shape()) {
				t.Errorf("%s: Add = %v %v, StdEng's %v %v", c.name, gotAdd.Shape(), g, wantAdd.Shape(), w)
			}
		}
		a, _, _ = c.mk()
		sw, errStd := tensor.StdEng{}.Sum(a)
		a, _, _ = c.mk()
		sg, err := nn.Engine{}.Sum(a)
		if (err != nil) != (errStd != nil) {
			t.Errorf("%s: Sum error %v, StdEng's %v", c.name, err, errStd)
			continue
		}
		if err == nil {
			if g, w := graphtest.Floats(sg), graphtest.Floats(sw); !bitsEqual(g, w) || sg.Dtype() != sw.Dtype() || len(sg.Shape()) != len(sw.Shape()) {
				t.Errorf("%s: Sum = %v %v %v, StdEng's %v %v %v", c.name, sg.Dtype(), sg.Shape(), g, sw.Dtype(), sw.Shape(), w)
			}
		}
	}
}

// TestEngineLispBackprop: the LispMachine's own backward pass (its
// DoDiff, which multiplies with tensor.WithIncr into the inputs'
// gradients) gives, under nn.Engine, the gradients it gives under its
// default engine: Sum(sin(x) ⊙ r ⊙ r), float64 and float32.
func TestEngineLispBackprop(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		var grads [2][]float64
		for i, withEngine := range []bool{false, true} {
			g := gorgonia.NewGraph()
			xv, _ := engineTensor(dt, 3, 4, 5)
			rv, _ := engineTensor(dt, 4, 4, 5)
			x := gorgonia.NewTensor(g, dt, 2, gorgonia.WithShape(4, 5), gorgonia.WithName("x"), gorgonia.WithValue(xv))
			r := gorgonia.NewTensor(g, dt, 2, gorgonia.WithShape(4, 5), gorgonia.WithName("r"), gorgonia.WithValue(rv))
			prod, err := gorgonia.HadamardProd(gorgonia.Must(gorgonia.Sin(x)), r)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(prod, r))); err != nil {
				t.Fatal(err)
			}
			var opts []gorgonia.VMOpt
			if withEngine {
				opts = append(opts, gorgonia.WithEngine(nn.Engine{}))
			}
			m := gorgonia.NewLispMachine(g, opts...)
			if err := m.RunAll(); err != nil {
				t.Fatal(err)
			}
			m.Close()
			gv, err := x.Grad()
			if err != nil {
				t.Fatal(err)
			}
			grads[i] = graphtest.Floats(gv)
		}
		if len(grads[0]) != 20 || grads[0][1] == 0 {
			t.Fatalf("%v: LispMachine gradient %v", dt, grads[0])
		}
		if !bitsEqual(grads[0], grads[1]) {
			t.Errorf("%v: LispMachine gradient with nn.Engine %v, without %v", dt, grads[1], grads[0])
		}
	}
}
