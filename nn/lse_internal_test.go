package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// lseTestTarget is a target node for rows rows: class r mod n, and ignore
// at row 1.
func lseTestTarget(g *gorgonia.ExprGraph, rows, n, ignore int) *gorgonia.Node {
	t := make([]int, rows)
	for r := range t {
		t[r] = (2*r + 1) % n
	}
	t[1] = ignore
	return gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(rows), gorgonia.WithName("target"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(rows), tensor.WithBacking(t))))
}

// lseRun runs a Go kernel into a zeroed output of n elements, as ad does
// (emu_test.go's goKernel, which is not in every build).
func lseRun[T ad.Float](t *testing.T, k func(ad.Tensor[T], []ad.Tensor[T]) error, n int, in ...ad.Tensor[T]) ad.Tensor[T] {
	t.Helper()
	out := ad.Tensor[T]{Shape: tensor.Shape{n}, Data: make([]T, n)}
	if err := k(out, in); err != nil {
		t.Fatal(err)
	}
	return out
}

func lseData[T ad.Float](x []T) ad.Tensor[T] {
	return ad.Tensor[T]{Shape: tensor.Shape{len(x)}, Data: x}
}

func lseTestTensor(seed uint64, scale float64, shape ...int) *tensor.Dense {
	r := rand.New(rand.NewPCG(seed, 1))
	d := make([]float64, tensor.Shape(shape).TotalSize())
	for i := range d {
		d[i] = scale * r.NormFloat64()
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
}

// TestLogSumExpOps: LogSumExp, NLL, LogSumExpGrad, NLLGrad and Mask, each
// applied to LogSumExp's result where it takes one (their derivatives
// treat it as LogSumExp(x)): derivatives of orders 1–3 w.r.t. x and the
// upstream U against finite differences, TapeMachine == LispMachine in
// float32 and float64, bitwise the same for GOMAXPROCS 1, 2 and 8, on
// rows short and long enough for the parallel kernels.
func TestLogSumExpOps(t *testing.T) {
	const ignore = -1
	for _, c := range []struct {
		name string
		f    func(rows, n int) graphtest.Func
		in   func(rows, n int) []*tensor.Dense
		wrt  []int
	}{
		{"LogSumExp", func(rows, n int) graphtest.Func {
			return func(in gorgonia.Nodes) (*gorgonia.Node, error) { return ad.Apply(lseSpec(rows, n), in[0]) }
		}, nil, []int{0}},
		{"NLL", func(rows, n int) graphtest.Func {
			return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
				return ad.Apply(nllSpec(rows, n, ignore), in[0], lseTestTarget(in[0].Graph(), rows, n, ignore))
			}
		}, nil, []int{0}},
		{"LogSumExpGrad", func(rows, n int) graphtest.Func {
			return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
				lse, err := ad.Apply(lseSpec(rows, n), in[0])
				if err != nil {
					return nil, err
				}
				return ad.Apply(lseGradSpec(rows, n, nil), in[0], lse, in[1])
			}
		}, func(rows, n int) []*tensor.Dense { return []*tensor.Dense{lseTestTensor(3, 0.7, rows)} }, []int{0, 1}},
		{"NLLGrad", func(rows, n int) graphtest.Func {
			return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
				return ad.Apply(lseGradSpec(rows, n, &lseTarget{ignore}), in[0], in[1], lseTestTarget(in[0].Graph(), rows, n, ignore))
			}
		}, func(rows, n int) []*tensor.Dense { return []*tensor.Dense{lseTestTensor(3, 0.7, rows)} }, []int{0, 1}},
		{"Mask", func(rows, n int) graphtest.Func {
			return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
				lse, err := ad.Apply(lseSpec(rows, n), in[0])
				if err != nil {
					return nil, err
				}
				s, err := gorgonia.HadamardProd(gorgonia.Must(gorgonia.Sin(lse)), in[1])
				if err != nil {
					return nil, err
				}
				m, err := ad.Apply(maskSpec(rows, ignore), s, lseTestTarget(in[0].Graph(), rows, n, ignore))
				if err != nil {
					return nil, err
				}
				return gorgonia.Cube(m)
			}
		}, func(rows, n int) []*tensor.Dense { return []*tensor.Dense{lseTestTensor(3, 0.7, rows)} }, []int{0, 1}},
	} {
		for _, sz := range [][2]int{{3, 4}, {5, 7}} {
			rows, n := sz[0], sz[1]
			t.Run(fmt.Sprintf("%s/%dx%d", c.name, rows, n), func(t *testing.T) {
				in := []*tensor.Dense{lseTestTensor(2, 1.5, rows, n)}
				if c.in != nil {
					in = append(in, c.in(rows, n)...)
				}
				f := c.f(rows, n)
				if err := graphtest.Check(f, in, graphtest.Options{Order: 3, Wrt: c.wrt, Seed: 9, RTol: 1e-5, ATol: 1e-7}); err != nil {
					t.Fatal(err)
				}
				for _, in := range [][]*tensor.Dense{in, graphtest.Float32(in)} {
					tol := 1e-12
					if in[0].Dtype() == tensor.Float32 {
						tol = 2e-5
					}
					if err := graphtest.CheckVMs(f, in, graphtest.Options{Wrt: c.wrt, Seed: 9, RTol: tol, ATol: tol}); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
		t.Run(c.name+"/deterministic", func(t *testing.T) {
			rows, n := 300, 257 // past lineGrain: several goroutines
			in := []*tensor.Dense{lseTestTensor(4, 3, rows, n)}
			if c.in != nil {
				in = append(in, c.in(rows, n)...)
			}
			if err := graphtest.CheckDeterministic(c.f(rows, n), graphtest.Float32(in), c.wrt, 1, 2, 8); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLogSumExpSpecialRows: LogSumExp and LogSumExpGrad (U = 1) on rows
// of ±Inf, NaN and huge values, as torch.logsumexp and its gradient: a
// row with NaN gives NaN and an all-NaN gradient row; one with +Inf gives
// +Inf, the gradient NaN at the +Inf entries and 0 elsewhere; one of only
// −Inf gives −Inf and an all-NaN gradient row; −Inf entries of a finite
// row have gradient 0. Long random rows (past lseRow's chunk) agree with
// a float64 sum. float32 and float64.
func TestLogSumExpSpecialRows(t *testing.T) {
	testLSESpecial[float32](t)
	testLSESpecial[float64](t)
}

func testLSESpecial[T ad.Float](t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	big := 1e300
	if _, ok := any(T(0)).(float32); ok {
		big = 3e38
	}
	type row struct {
		x    []float64
		lse  float64
		grad []float64 // nil: compare with exp(x − lse)
	}
	rows := []row{
		{[]float64{1, -inf, 2, 0.5}, math.Log(math.E + math.E*math.E + math.Exp(0.5)), nil},
		{[]float64{nan, 1, 2, 0}, nan, []float64{nan, nan, nan, nan}},
		{[]float64{inf, 1, -inf, 0}, inf, []float64{nan, 0, 0, 0}},
		{[]float64{-inf, -inf, -inf, -inf}, -inf, []float64{nan, nan, nan, nan}},
		{[]float64{big, 1, -big, 2}, big, []float64{1, 0, 0, 0}},
		{[]float64{inf, nan, 1, 1}, nan, []float64{nan, nan, nan, nan}},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{lseChunk - 1, lseChunk, 1000, 1537} {
		x := make([]float64, n)
		var m, s float64 = math.Inf(-1), 0
		for i := range x {
			x[i] = float64(T(r.NormFloat64()*20 + 40))
			m = max(m, x[i])
		}
		for _, v := range x {
			s += math.Exp(v - m)
		}
		rows = append(rows, row{x, m + math.Log(s), nil})
	}
	// The gradient's float32 tolerance: x − lse rounds to 2^−24 of
	// |x − lse| ≤ 100 in the exponent.
	tol, gtol := 1e-14, 4e-14
	if _, ok := any(T(0)).(float32); ok {
		tol, gtol = 3e-7, 1e-5
	}
	for i, c := range rows {
		n := len(c.x)
		x := make([]T, n)
		for j, v := range c.x {
			x[j] = T(v)
		}
		lse := lseRun(t, lseKernel[T](1, n), 1, lseData(x)).Data
		got := float64(lse[0])
		if !(got == c.lse || math.IsNaN(got) && math.IsNaN(c.lse) || math.Abs(got-c.lse) <= tol*math.Abs(c.lse)) {
			t.Errorf("%T row %d: lse %v, want %v", x[0], i, got, c.lse)
		}
		g := lseRun(t, lseGradKernel[T](n, nil), n, lseData(x), lseData(lse), lseData([]T{1})).Data
		for j, v := range g {
			want := math.Exp(c.x[j] - float64(lse[0]))
			if c.grad != nil {
				want = c.grad[j]
			}
			if gv := float64(v); !(gv == want || math.IsNaN(gv) && math.IsNaN(want) || math.Abs(gv-want) <= gtol*max(math.Abs(want), 1e-30)) {
				t.Errorf("%T row %d: grad[%d] = %v, want %v", x[0], i, j, gv, want)
				break
			}
		}
	}
}

// TestNLLKernels: NLL, NLLGrad and Mask on ignored rows (0 even for a NaN
// or infinite row), and their error for a target outside [0, n).
func TestNLLKernels(t *testing.T) {
	x := []float64{math.NaN(), 1, 2, math.Inf(1), 0, 0, 1, 2, 3}
	lse := lseRun(t, lseKernel[float64](3, 3), 3, lseData(x)).Data
	tg := ad.Tensor[float64]{Shape: tensor.Shape{3}, Ints: []int{-1, -1, 2}}
	u := lseData([]float64{math.NaN(), math.Inf(1), 2})
	nll := lseRun(t, nllKernel[float64](3, -1), 3, lseData(x), tg).Data
	if nll[0] != 0 || nll[1] != 0 || math.Abs(nll[2]-(lse[2]-3)) > 1e-15 {
		t.Errorf("NLL %v, want [0 0 %v]", nll, lse[2]-3)
	}
	g := lseRun(t, lseGradKernel[float64](3, &lseTarget{-1}), 9, lseData(x), u, tg).Data
	for j, v := range g[:6] {
		if v != 0 || math.Signbit(v) {
			t.Errorf("NLLGrad[%d] = %v on an ignored row, want +0", j, v)
		}
	}
	if s := math.Exp(3 - lse[2]); math.Abs(g[8]-2*(s-1)) > 1e-15 {
		t.Errorf("NLLGrad[8] = %v, want %v", g[8], 2*(s-1))
	}
	m := lseRun(t, maskKernel[float64](-1), 3, u, tg).Data
	if m[0] != 0 || m[1] != 0 || m[2] != 2 {
		t.Errorf("Mask %v, want [0 0 2]", m)
	}
	bad := ad.Tensor[float64]{Shape: tensor.Shape{3}, Ints: []int{0, 3, 1}}
	out := ad.Tensor[float64]{Shape: tensor.Shape{3}, Data: make([]float64, 9)}
	for name, k := range map[string]func(ad.Tensor[float64], []ad.Tensor[float64]) error{
		"NLL": nllKernel[float64](3, -1), "NLLGrad": lseGradKernel[float64](3, &lseTarget{-1})} {
		in := []ad.Tensor[float64]{lseData(x), bad}
		if name == "NLLGrad" {
			in = []ad.Tensor[float64]{lseData(x), u, bad}
		}
		if err := k(out, in); err == nil || err.Error() != "nn: CrossEntropy: target 3 at row 1 is outside [0, 3) and not IgnoreIndex -1" {
			t.Errorf("%s: error %v", name, err)
		}
	}
}

// TestNLLRows: NLL and NLLGrad on rows that are not ignored, float32 and
// float64, against float64 references: non-finite rows NaN as torch's
// log_softmax (a −Inf target a loss of +Inf), and the loss of large and
// confident logits rounded once, as torch's (x[t] − m) − log s, not
// through lse (whose rounding was 1 % of the loss of [50, 40, 30]).
func TestNLLRows(t *testing.T) {
	t.Run("float32", testNLLRows[float32])
	t.Run("float64", testNLLRows[float64])
}

func testNLLRows[T ad.Float](t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	f32 := false
	if _, ok := any(T(0)).(float32); ok {
		f32 = true
	}
	// ref is −log_softmax(x)[t] and its gradient softmax(x) − e_t, in
	// float64 from the T values.
	ref := func(x []float64, t int) (float64, []float64) {
		m := math.Inf(-1)
		for _, v := range x {
			m = max(m, v)
		}
		var s float64
		for _, v := range x {
			s += math.Exp(v - m)
		}
		g := make([]float64, len(x))
		for i, v := range x {
			g[i] = math.Exp(v-m) / s
		}
		g[t]--
		return (m - x[t]) + math.Log(s), g
	}
	for i, c := range []struct {
		x      []float64
		target int
		nan    bool // loss and gradient all NaN
	}{
		{[]float64{50, 40, 30}, 0, false},
		{[]float64{1e4, 1e4 - 3, 1e4 - 20, 1e4 + 1}, 3, false},
		{[]float64{1e30, 1e30, 0, 0}, 0, false},
		{[]float64{-2, 0.5, 3, -1}, 1, false},
		{[]float64{1, -inf, 2, 0}, 1, false},
		{[]float64{nan, 1, 2, 0}, 1, true},
		{[]float64{inf, 1, 2, 0}, 0, true},
		{[]float64{-inf, -inf, -inf}, 0, true},
	} {
		n := len(c.x)
		x, xf := make([]T, n), make([]float64, n)
		for j, v := range c.x {
			x[j] = T(v)
			xf[j] = float64(x[j])
		}
		tg := ad.Tensor[T]{Shape: tensor.Shape{1}, Ints: []int{c.target}}
		loss := float64(lseRun(t, nllKernel[T](n, -100), 1, lseData(x), tg).Data[0])
		g := lseRun(t, lseGradKernel[T](n, &lseTarget{-100}), n, lseData(x), lseData([]T{1}), tg).Data
		if c.nan {
			if !math.IsNaN(loss) {
				t.Errorf("row %d: loss %v, want NaN", i, loss)
			}
			for j, v := range g {
				if !math.IsNaN(float64(v)) {
					t.Errorf("row %d: grad[%d] = %v, want NaN", i, j, v)
				}
			}
			continue
		}
		want, wg := ref(xf, c.target)
		// One rounding of the loss to T, ExpSum's within 2 ulp in T.
		tol := 4e-16
		if f32 {
			tol = 3e-7
		}
		if math.IsInf(want, 1) {
			if !math.IsInf(loss, 1) {
				t.Errorf("row %d: loss %v, want +Inf", i, loss)
			}
		} else if math.Abs(loss-want) > tol*math.Abs(want)+1e-300 {
			t.Errorf("row %d: loss %v, want %v (relative error %.2g)", i, loss, want, math.Abs(loss-want)/math.Abs(want))
		}
		for j, v := range g {
			// Relative to softmax's value too: softmax − 1 at the target
			// keeps softmax's absolute rounding (as torch's).
			sm := wg[j]
			if j == c.target {
				sm++
			}
			if math.Abs(float64(v)-wg[j]) > 10*tol*max(math.Abs(wg[j]), math.Abs(sm), 1e-30) {
				t.Errorf("row %d: grad[%d] = %v, want %v", i, j, v, wg[j])
			}
		}
	}
}
