package nn_test

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// engineTensor is a tensor of shape with deterministic values of dtype dt
// under nn.Engine, and the same values as float64.
func engineTensor(dt tensor.Dtype, seed int, shape ...int) (*tensor.Dense, []float64) {
	n := tensor.Shape(shape).TotalSize()
	ref := make([]float64, n)
	for i := range ref {
		ref[i] = math.Sin(float64(i*7+seed)) * float64(1+i%5)
	}
	var back any = ref
	if dt == tensor.Float32 {
		f := make([]float32, n)
		for i, v := range ref {
			f[i] = float32(v)
			ref[i] = float64(f[i])
		}
		back = f
	} else {
		back = append([]float64(nil), ref...)
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(back), tensor.WithEngine(nn.Engine{})), ref
}

// sumRef sums ref of shape over the axes along (all if empty), in float64.
func sumRef(ref []float64, shape tensor.Shape, along []int) []float64 {
	if len(along) == 0 {
		var s float64
		for _, v := range ref {
			s += v
		}
		return []float64{s}
	}
	keep := make([]bool, len(shape))
	for i := range keep {
		keep[i] = true
	}
	for _, ax := range along {
		keep[ax] = false
	}
	strides := shape.CalcStrides()
	size := 1
	for i, k := range keep {
		if k {
			size *= shape[i]
		}
	}
	out := make([]float64, size)
	for flat, v := range ref {
		o := 0
		for i, k := range keep {
			if k {
				o = o*shape[i] + flat/strides[i]%shape[i]
			}
		}
		out[o] += v
	}
	return out
}

func engineClose(got, want []float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			return false
		}
	}
	return true
}

func TestEngineSum(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tol := 1e-12
		if dt == tensor.Float32 {
			tol = 1e-5
		}
		for _, c := range []struct {
			shape []int
			along []int
		}{
			{[]int{7}, nil}, {[]int{7}, []int{0}}, {[]int{1}, nil}, {[]int{0}, nil},
			{[]int{3, 5}, nil}, {[]int{3, 5}, []int{0, 1}}, {[]int{3, 5}, []int{0}}, {[]int{3, 5}, []int{1}},
			{[]int{2, 3, 4, 5}, nil}, {[]int{2, 3, 4, 5}, []int{0, 1, 2, 3}}, {[]int{2, 3, 4, 5}, []int{1, 2}},
			{[]int{2, 3, 4, 5}, []int{0, 2}}, {[]int{2, 3, 4, 5}, []int{3}}, {[]int{64, 129}, nil},
		} {
			t.Run(fmt.Sprintf("%v/%v/%v", dt, c.shape, c.along), func(t *testing.T) {
				x, ref := engineTensor(dt, 1, c.shape...)
				got, err := x.Sum(c.along...)
				if err != nil {
					t.Fatal(err)
				}
				if want := sumRef(ref, c.shape, c.along); !engineClose(graphtest.Floats(got), want, tol) {
					t.Errorf("Sum = %v, want %v", graphtest.Floats(got), want)
				}
			})
		}
		t.Run(fmt.Sprintf("%v/view", dt), func(t *testing.T) {
			x, ref := engineTensor(dt, 2, 4, 6)
			v, err := x.Slice(nil, tensor.S(1, 4))
			if err != nil {
				t.Fatal(err)
			}
			got, err := nn.Engine{}.Sum(v)
			if err != nil {
				t.Fatal(err)
			}
			var want float64
			for i := range 4 {
				want += ref[i*6+1] + ref[i*6+2] + ref[i*6+3]
			}
			if g := graphtest.Floats(got); !engineClose(g, []float64{want}, tol) {
				t.Errorf("Sum of a view = %v, want %v", g, want)
			}
		})
	}
}

// TestEngineSumOrder: the blocked sum is bitwise the same for any
// GOMAXPROCS and for along empty or every axis, and closer to the exact
// sum than StdEng's single float32 accumulator on a long float32 tensor.
func TestEngineSumOrder(t *testing.T) {
	n := 1<<20 + 5
	f := make([]float32, n)
	var exact float64
	for i := range f {
		f[i] = float32(0.1 + 0.01*float64(i%7))
		exact += float64(f[i])
	}
	x := tensor.New(tensor.WithShape(n), tensor.WithBacking(f), tensor.WithEngine(nn.Engine{}))
	var sums []any
	for _, procs := range []int{1, 2, 3} {
		old := runtime.GOMAXPROCS(procs)
		a, err := x.Sum()
		b, err2 := x.Sum(0)
		runtime.GOMAXPROCS(old)
		if err != nil || err2 != nil {
			t.Fatal(err, err2)
		}
		sums = append(sums, a.Data(), b.Data())
	}
	for _, s := range sums[1:] {
		if s != sums[0] {
			t.Fatalf("sums differ: %v", sums)
		}
	}
	std, err := tensor.StdEng{}.Sum(x)
	if err != nil {
		t.Fatal(err)
	}
	got, stdErr := float64(sums[0].(float32)), math.Abs(float64(std.Data().(float32))-exact)
	if math.Abs(got-exact) > 1e-5*exact || math.Abs(got-exact) > stdErr {
		t.Errorf("Sum = %v, StdEng's %v, exact %v", got, std.Data(), exact)
	}
}

func TestEngineMul(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, c := range []struct {
			mode string
			h, w int // a and b are [h, w]; the large ones run in parallel
		}{{"new", 3, 4}, {"reuse", 3, 4}, {"incr", 3, 4}, {"unsafe", 3, 4}, {"new", 300, 40}, {"incr", 300, 40}} {
			mode := c.mode
			t.Run(fmt.Sprintf("%v/%s/%dx%d", dt, mode, c.h, c.w), func(t *testing.T) {
				a, ra := engineTensor(dt, 3, c.h, c.w)
				b, rb := engineTensor(dt, 4, c.h, c.w)
				dest, rd := engineTensor(dt, 5, c.h*c.w)
				var opts []tensor.FuncOpt
				switch mode {
				case "reuse":
					opts = append(opts, tensor.WithReuse(dest))
				case "incr":
					opts = append(opts, tensor.WithIncr(dest))
				case "unsafe":
					opts = append(opts, tensor.UseUnsafe())
				}
				got, err := tensor.Mul(a, b, opts...)
				if err != nil {
					t.Fatal(err)
				}
				want := make([]float64, len(ra))
				for i := range want {
					want[i] = ra[i] * rb[i]
					if dt == tensor.Float32 {
						want[i] = float64(float32(ra[i]) * float32(rb[i]))
					}
					if mode == "incr" {
						want[i] += rd[i]
					}
				}
				if g := graphtest.Floats(got); !engineClose(g, want, 1e-6) {
					t.Errorf("Mul = %v, want %v", g, want)
				}
				switch mode {
				case "reuse", "incr":
					if got != tensor.Tensor(dest) {
						t.Error("Mul did not return the reuse/incr tensor")
					}
				case "unsafe":
					if got != tensor.Tensor(a) {
						t.Error("unsafe Mul did not return a")
					}
				}
				if mode != "incr" && !got.Shape().Eq(tensor.Shape{c.h, c.w}) {
					t.Errorf("shape %v, want (%d, %d)", got.Shape(), c.h, c.w)
				}
			})
		}
	}
	t.Run("view-and-broadcast-fall-back", func(t *testing.T) {
		a, _ := engineTensor(tensor.Float64, 6, 4, 6)
		v, err := a.Slice(nil, tensor.S(0, 3))
		if err != nil {
			t.Fatal(err)
		}
		b, rb := engineTensor(tensor.Float64, 7, 4, 3)
		got, err := nn.Engine{}.Mul(v, b)
		if err != nil {
			t.Fatal(err)
		}
		std, err := tensor.StdEng{}.Mul(v, b)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := graphtest.Floats(got), graphtest.Floats(std); !engineClose(g, w, 0) {
			t.Errorf("Mul of a view = %v, StdEng's %v", g, w)
		}
		s := tensor.New(tensor.FromScalar(2.0), tensor.WithEngine(nn.Engine{}))
		if got, err = tensor.Mul(b, s); err != nil {
			t.Fatal(err)
		}
		for i := range rb {
			rb[i] *= 2
		}
		if g := graphtest.Floats(got); !engineClose(g, rb, 1e-12) {
			t.Errorf("Mul by a scalar = %v, want %v", g, rb)
		}
	})
}

// TestEngineMachines: the loss written the ordinary way, Sum(x ⊙ r) of a
// nonlinear x, and its gradient, on both machines with and without
// nn.Engine, agree; with the option the machine's values carry nn.Engine
// (the machines re-engine every value, which is why Engine is a machine
// option and not something our ops' results could carry).
func TestEngineMachines(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, lisp := range []bool{false, true} {
			var cost0 float64
			var grad0 []float64
			for _, withEngine := range []bool{false, true} {
				g := gorgonia.NewGraph()
				xv, _ := engineTensor(dt, 8, 5, 6, 7)
				rv, _ := engineTensor(dt, 9, 5, 6, 7)
				x := gorgonia.NewTensor(g, dt, 3, gorgonia.WithShape(5, 6, 7), gorgonia.WithName("x"), gorgonia.WithValue(xv))
				r := gorgonia.NewTensor(g, dt, 3, gorgonia.WithShape(5, 6, 7), gorgonia.WithName("r"), gorgonia.WithValue(rv))
				cost := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(gorgonia.Must(gorgonia.Sin(x)), r))))
				gs, err := ad.Grad(cost, x)
				if err != nil {
					t.Fatal(err)
				}
				var opts []gorgonia.VMOpt
				if withEngine {
					opts = append(opts, gorgonia.WithEngine(nn.Engine{}))
				}
				var m gorgonia.VM
				if lisp {
					m = gorgonia.NewLispMachine(g, append(opts, gorgonia.ExecuteFwdOnly())...)
				} else {
					m = gorgonia.NewTapeMachine(g, opts...)
				}
				runs := 2
				if lisp { // a LispMachine runs once
					runs = 1
				}
				for range runs {
					if !lisp {
						m.Reset()
					}
					if err := m.RunAll(); err != nil {
						t.Fatal(err)
					}
				}
				m.Close()
				c := graphtest.Floats(tensor.New(tensor.FromScalar(cost.Value().Data())))[0]
				grad := graphtest.Floats(gs[0].Value().(tensor.Tensor))
				if _, ok := x.Value().(*tensor.Dense).Engine().(nn.Engine); ok != withEngine {
					t.Errorf("%v lisp %v engine %v: x's value engine %T", dt, lisp, withEngine, x.Value().(*tensor.Dense).Engine())
				}
				if !withEngine {
					cost0, grad0 = c, grad
					continue
				}
				if !engineClose([]float64{c}, []float64{cost0}, 1e-5) || !engineClose(grad, grad0, 0) {
					t.Errorf("%v lisp %v: with nn.Engine cost %v grad %v, without %v %v", dt, lisp, c, grad[:3], cost0, grad0[:3])
				}
			}
		}
	}
}
