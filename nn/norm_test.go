package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// normGoldenCase is one torch evaluation written by
// testdata/gen_golden_norm.py.
type normGoldenCase struct {
	weightGolden
	Op              string  `json:"op"`
	NumGroups       int     `json:"num_groups"`
	NormalizedShape []int   `json:"normalized_shape"`
	Eps             float64 `json:"eps"`
}

// TestNormGolden: GroupNorm (groups 1, 2 and one per channel, rank 3 and
// 4, with and without affine parameters, eps) and LayerNorm (one and two
// trailing axes) values, gradients of Σ G·out² w.r.t. input, weight and
// bias, and Hessian-vector products w.r.t. input and weight equal torch's,
// float32 and float64.
func TestNormGolden(t *testing.T) {
	runGolden(t, "norm_golden.json.gz", func(t *testing.T, gg *goldenGraph, c *normGoldenCase) {
		gg.setTol(1e-10, 1e-11, 1e-4, 1e-5) // variance and its inverse square root lose digits
		x := gg.node("x", c.InputShape, c.Input)
		pshape := c.NormalizedShape
		if c.Op == "group_norm" {
			pshape = []int{c.InputShape[1]}
		}
		var w, b *gorgonia.Node
		if c.Weight != nil {
			w, b = gg.node("w", pshape, c.Weight), gg.node("b", pshape, c.Bias)
		}
		var y *gorgonia.Node
		var err error
		if c.Op == "group_norm" {
			y, err = nn.GroupNorm(x, c.NumGroups, w, b, c.Eps)
		} else {
			y, err = nn.LayerNorm(x, c.NormalizedShape, w, b, c.Eps)
		}
		if err != nil {
			t.Fatal(err)
		}
		gg.checkWeight(y, x, w, b, false, &c.weightGolden)
	})
}

// TestNormBadInput: errors that name the tensor and the problem.
func TestNormBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 4, 3, 3))
	v := func(n int) *gorgonia.Node { return gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(n)) }
	runErrCases(t, []errCase{
		{"groups", func() (*gorgonia.Node, error) { return nn.GroupNorm(x, 3, nil, nil, 0) }, "4 channels not divisible into numGroups 3"},
		{"zero groups", func() (*gorgonia.Node, error) { return nn.GroupNorm(x, 0, nil, nil, 0) }, "numGroups 0"},
		{"weight", func() (*gorgonia.Node, error) { return nn.GroupNorm(x, 2, v(3), nil, 0) }, "weight shape (3), want (4)"},
		{"eps", func() (*gorgonia.Node, error) { return nn.GroupNorm(x, 2, nil, nil, -1) }, "eps -1 must be non-negative"},
		{"nil", func() (*gorgonia.Node, error) { return nn.LayerNorm(nil, []int{3}, nil, nil, 0) }, "LayerNorm: input is nil"},
		{"shape", func() (*gorgonia.Node, error) { return nn.LayerNorm(x, []int{4, 3}, nil, nil, 0) }, "normalizedShape [4 3] must be the trailing axes"},
		{"empty shape", func() (*gorgonia.Node, error) { return nn.LayerNorm(x, nil, nil, nil, 0) }, "must be the trailing axes"},
		{"layer bias", func() (*gorgonia.Node, error) { return nn.LayerNorm(x, []int{3}, nil, v(4), 0) }, "bias shape (4), want (3)"},
	})
}

// batchNormGoldenCase is one torch evaluation written by
// testdata/gen_golden_batchnorm.py.
type batchNormGoldenCase struct {
	weightGolden
	Training         bool      `json:"training"`
	Momentum         float64   `json:"momentum"`
	Eps              float64   `json:"eps"`
	RunningMean      []float64 `json:"running_mean"`
	RunningVar       []float64 `json:"running_var"`
	RunningMeanAfter []float64 `json:"running_mean_after"`
	RunningVarAfter  []float64 `json:"running_var_after"`
}

// TestBatchNormGolden: training (batch statistics, with and without
// affine parameters, rank 2 to 4) and eval (running statistics, batch 1)
// values, gradients of Σ G·out² w.r.t. input, weight and bias,
// Hessian-vector products w.r.t. input and weight, and the running
// statistics after one run, equal torch's, float32 and float64.
func TestBatchNormGolden(t *testing.T) {
	runGolden(t, "batchnorm_golden.json.gz", func(t *testing.T, gg *goldenGraph, c *batchNormGoldenCase) {
		gg.setTol(1e-10, 1e-11, 1e-4, 1e-5)
		x := gg.node("x", c.InputShape, c.Input)
		ch := c.InputShape[1]
		var w, b *gorgonia.Node
		if c.Weight != nil {
			w, b = gg.node("w", []int{ch}, c.Weight), gg.node("b", []int{ch}, c.Bias)
		}
		rm, rv := golden.Tensor(c.Dtype, []int{ch}, c.RunningMean), golden.Tensor(c.Dtype, []int{ch}, c.RunningVar)
		y, err := nn.BatchNorm(x, w, b, rm, rv, nn.BatchNormOpts{Training: c.Training, Momentum: c.Momentum, Eps: c.Eps})
		if err != nil {
			t.Fatal(err)
		}
		gg.checkWeight(y, x, w, b, false, &c.weightGolden)
		// One run of the graph updated the running statistics once.
		golden.AssertClose(t, "running_mean", graphtest.Floats(rm), c.RunningMeanAfter, gg.rtol, gg.atol)
		golden.AssertClose(t, "running_var", graphtest.Floats(rv), c.RunningVarAfter, gg.rtol, gg.atol)
	})
}

// TestBatchNormBadInput: errors that name the tensor and the problem.
func TestBatchNormBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 3, 2, 2))
	r := func(n int) *tensor.Dense { return tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(n)) }
	one := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(1, 3))
	runErrCases(t, []errCase{
		{"eval without stats", func() (*gorgonia.Node, error) { return nn.BatchNorm(x, nil, nil, nil, nil, nn.BatchNormOpts{}) }, "runningMean is nil in eval mode"},
		{"stats shape", func() (*gorgonia.Node, error) { return nn.BatchNorm(x, nil, nil, r(2), r(3), nn.BatchNormOpts{}) }, "runningMean float64 (2), want (3) float64"},
		{"momentum", func() (*gorgonia.Node, error) {
			return nn.BatchNorm(x, nil, nil, r(3), r(3), nn.BatchNormOpts{Training: true, Momentum: 2})
		}, "Momentum 2 must be in [0, 1]"},
		{"one value per channel", func() (*gorgonia.Node, error) {
			return nn.BatchNorm(one, nil, nil, nil, nil, nn.BatchNormOpts{Training: true})
		}, "more than one value per channel"},
		{"weight", func() (*gorgonia.Node, error) {
			return nn.BatchNorm(x, gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2)), nil, r(3), r(3), nn.BatchNormOpts{})
		}, "weight shape (2), want (3)"},
	})
}

// TestNormLarge checks GroupNorm and LayerNorm (with weight and bias) and
// the gradients of Σ G·out w.r.t. input, weight and bias on tensors large
// enough for the fused kernels to spread rows and channels over
// goroutines (GroupNorm's planes and LayerNorm's rows of one channel per
// element take different paths), against a float64 reference written
// here, and bitwise across GOMAXPROCS 1 and 3.
func TestNormLarge(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		op     string
		shape  []int
		groups int // GroupNorm
		ns     []int
	}{
		{"GroupNorm", []int{3, 16, 40, 45}, 4, nil},
		{"LayerNorm", []int{2, 150, 257}, 0, []int{257}},
		{"LayerNorm", []int{70, 24, 25}, 0, []int{24, 25}},
	} {
		size := tensor.Shape(c.shape).TotalSize()
		x, u := make([]float64, size), make([]float64, size)
		for i := range x {
			x[i], u[i] = 3+2*r.NormFloat64(), r.NormFloat64() // a mean away from 0
		}
		// rows × n elements; channel of element e: e/inner % nc.
		rows, nc, inner := c.shape[0]*c.groups, c.shape[1], size/(c.shape[0]*c.shape[1])
		if c.op == "LayerNorm" {
			nc = tensor.Shape(c.ns).TotalSize()
			rows, inner = size/nc, 1
		}
		w, b := make([]float64, nc), make([]float64, nc)
		for i := range w {
			w[i], b[i] = 1+0.5*r.NormFloat64(), r.NormFloat64()
		}
		pshape := []int{c.shape[1]}
		if c.ns != nil {
			pshape = c.ns
		}
		want := normReference(x, u, w, b, rows, nc, inner, 1e-5)
		for _, dtype := range []string{"float32", "float64"} {
			t.Run(fmt.Sprintf("%s/%v/%s", c.op, c.shape, dtype), func(t *testing.T) {
				rtol, atol := 1e-11, 1e-11
				if dtype == "float32" {
					rtol, atol = 2e-5, 2e-4 // the weight and bias gradients sum 10⁴ terms
				}
				var first [][]float64
				for _, procs := range []int{1, 3} {
					old := runtime.GOMAXPROCS(procs)
					gg := newGoldenGraph(t, dtype)
					xn, wn, bn := gg.node("x", c.shape, x), gg.node("w", pshape, w), gg.node("b", pshape, b)
					var y *gorgonia.Node
					var err error
					if c.op == "GroupNorm" {
						y, err = nn.GroupNorm(xn, c.groups, wn, bn, 0)
					} else {
						y, err = nn.LayerNorm(xn, c.ns, wn, bn, 0)
					}
					if err != nil {
						t.Fatal(err)
					}
					grads, err := ad.VJP(y, gg.node("G", c.shape, u), xn, wn, bn)
					if err != nil {
						t.Fatal(err)
					}
					got, err := graphtest.Eval(gg.g, append(gorgonia.Nodes{y}, grads...)...)
					runtime.GOMAXPROCS(old)
					if err != nil {
						t.Fatal(err)
					}
					for i, what := range []string{"output", "grad_input", "grad_weight", "grad_bias"} {
						golden.AssertClose(t, what, got[i], want[i], rtol, atol)
					}
					if first == nil {
						first = got
						continue
					}
					for i := range got {
						for j := range got[i] {
							if math.Float64bits(got[i][j]) != math.Float64bits(first[i][j]) {
								t.Fatalf("GOMAXPROCS %d: result %d element %d = %v, %v with GOMAXPROCS 1", procs, i, j, got[i][j], first[i][j])
							}
						}
					}
				}
			})
		}
	}
}

// normReference is, in float64, the normalisation of rows of x (mean and
// biased variance) times w plus b per channel (element e in channel
// e/inner % nc), and the gradients of Σ u·out w.r.t. x, w and b.
func normReference(x, u, w, b []float64, rows, nc, inner int, eps float64) [4][]float64 {
	n := len(x) / rows
	out, gx, gw, gb := make([]float64, len(x)), make([]float64, len(x)), make([]float64, nc), make([]float64, nc)
	y, gy := make([]float64, n), make([]float64, n)
	for i := range rows {
		xr := x[i*n : (i+1)*n]
		var mean, v float64
		for _, e := range xr {
			mean += e
		}
		mean /= float64(n)
		for _, e := range xr {
			v += (e - mean) * (e - mean)
		}
		rs := 1 / math.Sqrt(v/float64(n)+eps)
		var sg, sgy float64
		for k, e := range xr {
			at := i*n + k
			ch := at / inner % nc
			y[k] = (e - mean) * rs
			out[at] = y[k]*w[ch] + b[ch]
			gw[ch] += u[at] * y[k]
			gb[ch] += u[at]
			gy[k] = u[at] * w[ch]
			sg += gy[k]
			sgy += gy[k] * y[k]
		}
		for k := range xr {
			gx[i*n+k] = rs * (gy[k] - sg/float64(n) - y[k]*sgy/float64(n))
		}
	}
	return [4][]float64{out, gx, gw, gb}
}

// TestNormOrders: derivatives of orders 1–3 against finite differences
// (float64), TapeMachine == LispMachine and bitwise determinism across
// GOMAXPROCS, for the configurations of the fused ops that the
// conformance table's rows (both affine) do not reach: no weight or bias,
// weight only, bias only, two normalised axes, rank 3.
func TestNormOrders(t *testing.T) {
	x4, x3 := smoothTensor(1.5, 2, 4, 2, 3), smoothTensor(1.2, 2, 6, 5)
	p := func(n int, s float64) *tensor.Dense { return smoothTensor(s, n) }
	for _, c := range []struct {
		name string
		f    graphtest.Func
		in   []*tensor.Dense
	}{
		{"GroupNorm/plain", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.GroupNorm(in[0], 2, nil, nil, 0) }, []*tensor.Dense{x4}},
		{"GroupNorm/weight", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.GroupNorm(in[0], 4, in[1], nil, 0.1) }, []*tensor.Dense{x4, p(4, 0.5)}},
		{"GroupNorm/bias/rank3", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.GroupNorm(in[0], 3, nil, in[1], 0) }, []*tensor.Dense{x3, p(6, 0.3)}},
		{"LayerNorm/last2/weight", func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.LayerNorm(in[0], []int{6, 5}, gorgonia.Must(nn.Reshape(in[1], 6, 5)), nil, 0)
		}, []*tensor.Dense{x3, p(30, 0.4)}},
		{"LayerNorm/bias", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.LayerNorm(in[0], []int{5}, nil, in[1], 0) }, []*tensor.Dense{x3, p(5, 0.3)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var wrt []int
			for i := range c.in {
				wrt = append(wrt, i)
			}
			f := cubeOf(func(in gorgonia.Nodes) (*gorgonia.Node, error) { return c.f(in) })
			o := graphtest.Options{Seed: 9, Order: 3, Wrt: wrt}
			if testing.Short() {
				o.Order = 2
			}
			if err := graphtest.Check(f, c.in, o); err != nil {
				t.Fatal(err)
			}
			if err := graphtest.CheckVMs(f, c.in, graphtest.Options{Wrt: wrt, RTol: 1e-12, ATol: 1e-12}); err != nil {
				t.Fatal(err)
			}
			if err := graphtest.CheckVMs(f, graphtest.Float32(c.in), graphtest.Options{Wrt: wrt, RTol: 2e-5, ATol: 2e-5}); err != nil {
				t.Fatal(err)
			}
			if err := graphtest.CheckDeterministic(f, graphtest.Float32(c.in), wrt, 1, 2, 3); err != nil {
				t.Fatal(err)
			}
		})
	}
}
