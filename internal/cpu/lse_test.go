package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// runInto returns n zeros after k has written them.
func runInto[T Float](n int, k func(out []T)) []T {
	out := make([]T, n)
	k(out)
	return out
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

func testLSESpecial[T Float](t *testing.T) {
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
		lse := runInto(1, func(o []T) { LogSumExp(1, n, o, x) })
		got := float64(lse[0])
		if !(got == c.lse || math.IsNaN(got) && math.IsNaN(c.lse) || math.Abs(got-c.lse) <= tol*math.Abs(c.lse)) {
			t.Errorf("%T row %d: lse %v, want %v", x[0], i, got, c.lse)
		}
		g := runInto(n, func(o []T) { LogSumExpGrad(n, o, x, lse, []T{1}) })
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

// TestNLLRows: NLL and NLLGrad on rows that are not ignored, float32 and
// float64, against float64 references: non-finite rows NaN as torch's
// log_softmax (a −Inf target a loss of +Inf), and the loss of large and
// confident logits rounded once, as torch's (x[t] − m) − log s, not
// through lse (whose rounding was 1 % of the loss of [50, 40, 30]).
func TestNLLRows(t *testing.T) {
	t.Run("float32", testNLLRows[float32])
	t.Run("float64", testNLLRows[float64])
}

func testNLLRows[T Float](t *testing.T) {
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
		tg := []int{c.target}
		loss := float64(runInto(1, func(o []T) { NLL(n, -100, o, x, tg) })[0])
		g := runInto(n, func(o []T) { NLLGrad(n, -100, o, x, []T{1}, tg) })
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
