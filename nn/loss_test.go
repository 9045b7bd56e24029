package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// lossGoldenCase is one torch evaluation written by
// testdata/gen_golden_nnloss.py.
type lossGoldenCase struct {
	inputGolden
	Op             string           `json:"op"`
	Axis           int              `json:"axis"`
	TargetShape    []int            `json:"target_shape"`
	Target         []float64        `json:"target"`
	Weight         []float64        `json:"weight"`
	WeightShape    []int            `json:"weight_shape"`
	PosWeight      []float64        `json:"pos_weight"`
	Beta           float64          `json:"beta"`
	IgnoreIndex    int              `json:"ignore_index"`
	LabelSmoothing float64          `json:"label_smoothing"`
	Reduction      ad.Reduction     `json:"reduction"`
	Square         bool             `json:"square"`
	OutputShape    []int            `json:"output_shape"`
	GradWeight     []float64        `json:"grad_weight"`
	NaN            map[string][]int `json:"nan"`
}

// TestLossGolden: Softmax, LogSoftmax (several axes, large magnitudes),
// CrossEntropy (class weights, ignore_index, label smoothing, every
// reduction, an all-ignored batch), MSELoss and CrossEntropy's row
// LogSumExp (torch.logsumexp; rows with −Inf, NaN, huge values): values, gradients of
// Σ G·out (Σ G·out² for the softmaxes) w.r.t. the input and the weight,
// and the Hessian-vector product w.r.t. the input equal torch's, float32
// and float64; NaN where torch gives NaN.
func TestLossGolden(t *testing.T) {
	runGolden(t, "nnloss_golden.json.gz", func(t *testing.T, gg *goldenGraph, c *lossGoldenCase) {
		g, node := gg.g, gg.node
		rtol, atol := gg.rtol, gg.atol
		if c.Dtype == "float64" && c.Op == "bce_with_logits" {
			// Our gradient sums (1 − y) and −lw·sigmoid(−x), which
			// cancel for logits of magnitude 40; torch's is
			// sigmoid(x) − y: a few 1e-9 relative apart.
			rtol = 1e-8
		}
		if c.Dtype == "float32" && strings.HasSuffix(c.Name, "/large") {
			// Logits of magnitude 300, squared outputs: the HVP cancels
			// terms of order 1e3 in float32. On the float32 inputs of
			// log_softmax/large, float64 autograd gives hvp[3] =
			// -5.119951; torch's float32 says -5.119873 (1.5e-5 relative
			// off), ours -5.119995 (0.9e-5): 2.4e-5 apart.
			rtol = 4e-5
		}
		for _, i := range c.NaN["input"] {
			c.Input[i] = math.NaN()
		}
		for _, i := range c.NaN["input_neg_inf"] {
			c.Input[i] = math.Inf(-1)
		}
		x := node("x", c.InputShape, c.Input)
		wrt := gorgonia.Nodes{x}
		var y *gorgonia.Node
		var err error
		switch c.Op {
		case "softmax":
			y, err = nn.Softmax(x, c.Axis)
		case "log_softmax":
			y, err = nn.LogSoftmax(x, c.Axis)
		case "logsumexp":
			y, err = nn.LogSumExpRows(x)
		case "mse_loss":
			y, err = nn.MSELoss(x, node("target", c.TargetShape, c.Target), c.Reduction)
		case "smooth_l1_loss":
			y, err = nn.SmoothL1Loss(x, node("target", c.TargetShape, c.Target), c.Beta, c.Reduction)
		case "bce_with_logits":
			opts := nn.BCEWithLogitsOpts{Reduction: c.Reduction}
			if c.Weight != nil {
				opts.Weight = node("weight", c.WeightShape, c.Weight)
			}
			if c.PosWeight != nil {
				opts.PosWeight = node("pos_weight", []int{len(c.PosWeight)}, c.PosWeight)
			}
			y, err = nn.BinaryCrossEntropyWithLogits(x, node("target", c.TargetShape, c.Target), opts)
		case "cross_entropy":
			ts := make([]int, len(c.Target))
			for i, v := range c.Target {
				ts[i] = int(v)
			}
			tn := gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(len(ts)), gorgonia.WithName("target"),
				gorgonia.WithValue(tensor.New(tensor.WithShape(len(ts)), tensor.WithBacking(ts))))
			opts := nn.CrossEntropyOpts{IgnoreIndex: &c.IgnoreIndex, LabelSmoothing: c.LabelSmoothing, Reduction: c.Reduction}
			if c.Weight != nil {
				opts.Weight = node("weight", []int{len(c.Weight)}, c.Weight)
				wrt = append(wrt, opts.Weight)
			}
			y, err = nn.CrossEntropy(x, tn, opts)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !y.Shape().Eq(tensor.Shape(c.OutputShape)) && !(len(c.OutputShape) == 0 && y.IsScalar()) {
			t.Fatalf("shape %v, want %v", y.Shape(), c.OutputShape)
		}
		gy := node("G", c.OutputShape, c.GradOutput)
		var p *gorgonia.Node
		if y.IsScalar() {
			p = gorgonia.Must(gorgonia.Mul(y, gy))
		} else {
			p = gorgonia.Must(gorgonia.HadamardProd(y, gy))
			if c.Square {
				p = gorgonia.Must(gorgonia.HadamardProd(p, y))
			}
			p = gorgonia.Must(gorgonia.Sum(p))
		}
		g1, err := ad.Grad(p, wrt...)
		if err != nil {
			t.Fatal(err)
		}
		v := node("v", c.InputShape, c.VInput)
		hx, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(g1[0], v)))), x)
		if err != nil {
			t.Fatal(err)
		}
		got, err := graphtest.Eval(g, append(gorgonia.Nodes{y, hx[0]}, g1...)...)
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, vals, want []float64) {
			t.Helper()
			for _, i := range c.NaN[what] {
				if !math.IsNaN(vals[i]) {
					t.Fatalf("%s[%d] = %v, want NaN", what, i, vals[i])
				}
				vals[i] = 0
			}
			golden.AssertClose(t, what, vals, want, rtol, atol)
		}
		check("output", got[0], c.Output)
		check("hvp_input", got[1], c.HVPInput)
		check("grad_input", got[2], c.GradInput)
		if c.GradWeight != nil {
			check("grad_weight", got[3], c.GradWeight)
		}
	})
}

// TestLossBadInput: errors that name the op and the problem.
func TestLossBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 4))
	tgt := gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(3))
	runErrCases(t, []errCase{
		{"softmax nil", func() (*gorgonia.Node, error) { return nn.Softmax(nil, 0) }, "Softmax: input is nil"},
		{"softmax axis", func() (*gorgonia.Node, error) { return nn.LogSoftmax(x, 2) }, "LogSoftmax: axis 2 out of range"},
		{"softmax axis negative", func() (*gorgonia.Node, error) { return nn.Softmax(x, -3) }, "axis -3 out of range"},
		{"softmax scalar", func() (*gorgonia.Node, error) { return nn.Softmax(gorgonia.NewScalar(g, tensor.Float64), 0) }, "rank at least 1"},
		{"ce target dtype", func() (*gorgonia.Node, error) {
			return nn.CrossEntropy(x, gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3)), nn.CrossEntropyOpts{})
		}, "target must be a tensor.Int node of shape (3)"},
		{"ce target shape", func() (*gorgonia.Node, error) {
			return nn.CrossEntropy(x, gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(4)), nn.CrossEntropyOpts{})
		}, "target must be a tensor.Int node of shape (3)"},
		{"ce logits rank", func() (*gorgonia.Node, error) {
			return nn.CrossEntropy(gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3)), tgt, nn.CrossEntropyOpts{})
		}, "logits must have rank 2"},
		{"ce weight", func() (*gorgonia.Node, error) {
			return nn.CrossEntropy(x, tgt, nn.CrossEntropyOpts{Weight: gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3))})
		}, "weight shape (3), want (4)"},
		{"ce weight dtype", func() (*gorgonia.Node, error) {
			return nn.CrossEntropy(x, tgt, nn.CrossEntropyOpts{Weight: gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(4))})
		}, "dtype float32 differs"},
		{"ce smoothing", func() (*gorgonia.Node, error) {
			return nn.CrossEntropy(x, tgt, nn.CrossEntropyOpts{LabelSmoothing: 1.5})
		}, "LabelSmoothing 1.5"},
		{"ce smoothing NaN", func() (*gorgonia.Node, error) {
			return nn.CrossEntropy(x, tgt, nn.CrossEntropyOpts{LabelSmoothing: math.NaN()})
		}, "LabelSmoothing NaN"},
		{"ce reduction", func() (*gorgonia.Node, error) { return nn.CrossEntropy(x, tgt, nn.CrossEntropyOpts{Reduction: "avg"}) }, `Reduction "avg"`},
		{"ce weight graph", func() (*gorgonia.Node, error) {
			return nn.CrossEntropy(x, tgt, nn.CrossEntropyOpts{Weight: gorgonia.NewVector(gorgonia.NewGraph(), tensor.Float64, gorgonia.WithShape(4))})
		}, "CrossEntropy: weight is a node of another graph than logits"},
		{"ce target graph", func() (*gorgonia.Node, error) {
			return nn.CrossEntropy(x, gorgonia.NewTensor(gorgonia.NewGraph(), tensor.Int, 1, gorgonia.WithShape(3)), nn.CrossEntropyOpts{})
		}, "CrossEntropy: target is a node of another graph than logits"},
		{"mse shapes", func() (*gorgonia.Node, error) {
			return nn.MSELoss(x, gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(4, 3)), "")
		}, "MSELoss: target float64 (4, 3) differs from input float64 (3, 4)"},
		{"mse nil", func() (*gorgonia.Node, error) { return nn.MSELoss(x, nil, "") }, "MSELoss: input or target is nil"},
		{"smooth beta", func() (*gorgonia.Node, error) { return nn.SmoothL1Loss(x, x, -1, "") }, "SmoothL1Loss: beta -1 must be non-negative"},
		{"smooth reduction", func() (*gorgonia.Node, error) { return nn.SmoothL1Loss(x, x, 1, "max") }, `Reduction "max"`},
		{"bce target", func() (*gorgonia.Node, error) {
			return nn.BinaryCrossEntropyWithLogits(x, gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 5)), nn.BCEWithLogitsOpts{})
		}, "target float64 (3, 5) differs from input float64 (3, 4)"},
		{"bce weight", func() (*gorgonia.Node, error) {
			return nn.BinaryCrossEntropyWithLogits(x, x, nn.BCEWithLogitsOpts{Weight: gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3))})
		}, "weight shape (3), want (4) or the logits' (3, 4)"},
		{"bce pos weight", func() (*gorgonia.Node, error) {
			return nn.BinaryCrossEntropyWithLogits(x, x, nn.BCEWithLogitsOpts{PosWeight: gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 4))})
		}, "pos_weight shape (3, 4), want (4)"},
	})
}

// TestCrossEntropyTargetOutOfRange: a target outside [0, C) that is not
// IgnoreIndex is an error when the graph runs, naming the row.
func TestCrossEntropyTargetOutOfRange(t *testing.T) {
	for _, bad := range []int{3, -1, -99} {
		g := gorgonia.NewGraph()
		x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 3), gorgonia.WithName("x"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))))
		tg := gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(2), gorgonia.WithName("t"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{0, bad}))))
		y, err := nn.CrossEntropy(x, tg, nn.CrossEntropyOpts{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := graphtest.Eval(g, y); err == nil || !strings.Contains(err.Error(), "outside [0, 3)") || !strings.Contains(err.Error(), "row 1") {
			t.Fatalf("target %d: error %v", bad, err)
		}
	}
}

// TestCrossEntropyLargeLogitsGrad: the gradient w.r.t. logits of large
// magnitude is softmax(x) − onehot (mixed with the uniform target for
// label smoothing), as torch's, whose softmax is exp(x − m)/Σ exp(x − m):
// lse = m + log s rounded to the dtype loses log s once |m| is large
// (1e30 + log 2 is 1e30), so exp(x − lse) alone sums to 2 on a row with
// two equal maxima, and is off by |m|·2⁻²⁴ relative in float32 for
// logits of 1e4. Rows: two tied maxima at ±L, and random logits shifted
// by L; float32 and float64; LabelSmoothing 0 and 0.1.
func TestCrossEntropyLargeLogitsGrad(t *testing.T) {
	for _, dtype := range []string{"float32", "float64"} {
		for _, L := range []float64{1e4, 1e8, 1e17, 1e30} {
			for _, ls := range []float64{0, 0.1} {
				t.Run(fmt.Sprintf("%s/%g/ls%g", dtype, L, ls), func(t *testing.T) {
					gg := newGoldenGraph(t, dtype)
					const n, c = 3, 4
					x := []float64{L, L, 0, -L, -L, 1 - L, 0.5 - L, -L, L + 0.25, L - 1.5, L + 2, L - 0.75}
					if dtype == "float32" {
						for i := range x {
							x[i] = float64(float32(x[i]))
						}
					}
					tgt := []int{0, 2, 3}
					xn := gg.node("x", []int{n, c}, x)
					tn := gorgonia.NewTensor(gg.g, tensor.Int, 1, gorgonia.WithShape(n), gorgonia.WithName("target"),
						gorgonia.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(tgt))))
					y, err := nn.CrossEntropy(xn, tn, nn.CrossEntropyOpts{LabelSmoothing: ls, Reduction: "sum"})
					if err != nil {
						t.Fatal(err)
					}
					gx, err := ad.Grad(y, xn)
					if err != nil {
						t.Fatal(err)
					}
					got, err := graphtest.Eval(gg.g, gx[0])
					if err != nil {
						t.Fatal(err)
					}
					want := make([]float64, n*c)
					for r := 0; r < n; r++ {
						row := x[r*c : (r+1)*c]
						m, s := rowMaxExpSum(row)
						for k, v := range row {
							want[r*c+k] = math.Exp(v-m)/s - ls/c
							if k == tgt[r] {
								want[r*c+k] -= 1 - ls
							}
						}
					}
					tol := 1e-14
					if dtype == "float32" {
						tol = 1e-6
					}
					golden.AssertClose(t, "grad_input", got[0], want, 0, tol)
				})
			}
		}
	}
}

// TestCrossEntropyLabelSmoothingLargeLogits: the label-smoothing term
// −Σ_c w[c]·log_softmax(x)[c] of logits near L, rounded as torch's
// log_softmax (relative error about 2⁻²⁴ in float32), not through
// lse·Σ_c w[c] − Σ_c w[c]·x[c], whose rounding is about L·2⁻²⁴ (at L =
// 1e6 in float32, 0.2 % of a loss of 0.5).
func TestCrossEntropyLabelSmoothingLargeLogits(t *testing.T) {
	for _, dtype := range []string{"float32", "float64"} {
		for _, L := range []float64{0, 1e4, 1e6, 1e13} {
			t.Run(fmt.Sprintf("%s/%g", dtype, L), func(t *testing.T) {
				gg := newGoldenGraph(t, dtype)
				const n, c, ls = 3, 3, 0.3
				x := []float64{L, L - 1, L - 2, L + 0.5, L - 3, L, L - 4, L - 4, L - 4}
				w := []float64{0.5, 2, 1.25}
				if dtype == "float32" {
					for i := range x {
						x[i] = float64(float32(x[i]))
					}
				}
				tgt := []int{0, 2, 1}
				xn, wn := gg.node("x", []int{n, c}, x), gg.node("w", []int{c}, w)
				tn := gorgonia.NewTensor(gg.g, tensor.Int, 1, gorgonia.WithShape(n), gorgonia.WithName("target"),
					gorgonia.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(tgt))))
				y, err := nn.CrossEntropy(xn, tn, nn.CrossEntropyOpts{Weight: wn, LabelSmoothing: ls, Reduction: "none"})
				if err != nil {
					t.Fatal(err)
				}
				got, err := graphtest.Eval(gg.g, y)
				if err != nil {
					t.Fatal(err)
				}
				want := make([]float64, n)
				for r := 0; r < n; r++ {
					row := x[r*c : (r+1)*c]
					m, s := rowMaxExpSum(row)
					var smooth float64
					for k, v := range row {
						smooth += w[k] * (m - v + math.Log(s))
					}
					want[r] = (1-ls)*w[tgt[r]]*(m-row[tgt[r]]+math.Log(s)) + ls/c*smooth
				}
				tol := 1e-13
				if dtype == "float32" {
					tol = 2e-6
				}
				golden.AssertClose(t, "loss", got[0], want, tol, 0)
			})
		}
	}
}

// rowMaxExpSum is a row's maximum m and Σ exp(x − m), in float64: the
// references' stable log-softmax.
func rowMaxExpSum(row []float64) (m, s float64) {
	m = math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, v)
	}
	for _, v := range row {
		s += math.Exp(v - m)
	}
	return m, s
}

// TestSoftmaxLarge checks Softmax and LogSoftmax and their gradients on
// tensors large enough to be split over goroutines, with contiguous lines
// (the last axis) and strided ones (a middle axis), against a float64
// reference written here with math.Exp, and bitwise across GOMAXPROCS.
func TestSoftmaxLarge(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		shape []int
		axis  int
	}{{[]int{40, 1003}, 1}, {[]int{3, 1001, 9}, 1}, {[]int{2, 5, 4099}, -1}} {
		size := tensor.Shape(c.shape).TotalSize()
		x, u := make([]float64, size), make([]float64, size)
		for i := range x {
			x[i], u[i] = 8*r.NormFloat64(), r.NormFloat64()
		}
		x[5] = math.Inf(-1) // a −Inf logit: probability 0
		for _, log := range []bool{false, true} {
			wantY, wantG := softmaxReference(c.shape, c.axis, x, u, log)
			for _, dtype := range []string{"float32", "float64"} {
				name := fmt.Sprintf("%v/axis%d/log=%v/%s", c.shape, c.axis, log, dtype)
				t.Run(name, func(t *testing.T) {
					// Absolute errors scale with a line's log Σ exp (the
					// log-softmax output) and Σ u (the gradients): about 30
					// and 60 here.
					rtol, atol := 1e-12, 1e-13
					if dtype == "float32" {
						rtol, atol = 1e-5, 5e-5
					}
					var first []float64
					for _, procs := range []int{1, 3} {
						old := runtime.GOMAXPROCS(procs)
						y, g := runSoftmax(t, dtype, c.shape, c.axis, log, x, u)
						runtime.GOMAXPROCS(old)
						golden.AssertClose(t, "output", y, wantY, rtol, atol)
						golden.AssertClose(t, "grad", g, wantG, rtol, atol)
						got := append(y, g...)
						if first == nil {
							first = got
							continue
						}
						for i := range got {
							if math.Float64bits(got[i]) != math.Float64bits(first[i]) {
								t.Fatalf("GOMAXPROCS %d: element %d = %v, %v with GOMAXPROCS 1", procs, i, got[i], first[i])
							}
						}
					}
				})
			}
		}
	}
}

// runSoftmax evaluates Softmax (or LogSoftmax) of x and the gradient of
// Σ u ⊙ y w.r.t. x on the TapeMachine.
func runSoftmax(t *testing.T, dtype string, shape []int, axis int, log bool, x, u []float64) (y, gx []float64) {
	t.Helper()
	dt := tensor.Float64
	if dtype == "float32" {
		dt = tensor.Float32
	}
	g := gorgonia.NewGraph()
	xn := gorgonia.NewTensor(g, dt, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName("x"),
		gorgonia.WithValue(golden.Tensor(dtype, shape, x)))
	un := gorgonia.NewTensor(g, dt, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName("u"),
		gorgonia.WithValue(golden.Tensor(dtype, shape, u)))
	op := nn.Softmax
	if log {
		op = nn.LogSoftmax
	}
	yn, err := op(xn, axis)
	if err != nil {
		t.Fatal(err)
	}
	gr, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(yn, un)))), xn)
	if err != nil {
		t.Fatal(err)
	}
	got, err := graphtest.Eval(g, yn, gr[0])
	if err != nil {
		t.Fatal(err)
	}
	return got[0], got[1]
}

// softmaxReference is softmax or log-softmax along axis and its gradient
// for upstream u, in float64 with math.Exp, line by line.
func softmaxReference(shape []int, axis int, x, u []float64, log bool) (y, g []float64) {
	if axis < 0 {
		axis += len(shape)
	}
	outer, n, inner := 1, shape[axis], 1
	for i, d := range shape {
		if i < axis {
			outer *= d
		} else if i > axis {
			inner *= d
		}
	}
	y, g = make([]float64, len(x)), make([]float64, len(x))
	for o := range outer {
		for i := range inner {
			at := func(k int) int { return (o*n+k)*inner + i }
			m := math.Inf(-1)
			for k := range n {
				m = math.Max(m, x[at(k)])
			}
			var s float64
			for k := range n {
				s += math.Exp(x[at(k)] - m)
			}
			var su, sus float64
			for k := range n {
				p := math.Exp(x[at(k)]-m) / s
				su += u[at(k)]
				sus += u[at(k)] * p
			}
			for k := range n {
				p := math.Exp(x[at(k)]-m) / s
				if log {
					y[at(k)] = x[at(k)] - m - math.Log(s)
					g[at(k)] = u[at(k)] - p*su
				} else {
					y[at(k)] = p
					g[at(k)] = p * (u[at(k)] - sus)
				}
			}
		}
	}
	return y, g
}
