package nn_test

import (
	"math"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestEdgeValues pins torch's answers at the edges a review found: a
// sigmoid that does not saturate early (and SiLU and the BCE gradient that
// use it), ReLU of −Inf, SmoothL1's beta = 0 derivative at 0, BatchNorm
// of an empty batch in training.
func TestEdgeValues(t *testing.T) {
	g := gorgonia.NewGraph()
	vec := func(name string, d ...float64) *gorgonia.Node {
		return gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(len(d)), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(len(d)), tensor.WithBacking(d))))
	}
	x := vec("x", 20, -20, 0)
	sg, err := nn.Sigmoid(x)
	if err != nil {
		t.Fatal(err)
	}
	silu, err := nn.SiLU(x)
	if err != nil {
		t.Fatal(err)
	}
	logits := vec("logits", -20, -30)
	bce, err := nn.BinaryCrossEntropyWithLogits(logits, vec("target", 0, 0), nn.BCEWithLogitsOpts{Reduction: "sum"})
	if err != nil {
		t.Fatal(err)
	}
	dbce, err := ad.Grad(bce, logits)
	if err != nil {
		t.Fatal(err)
	}
	inf := vec("inf", math.Inf(-1), math.NaN(), 2)
	relu, err := nn.ReLU(inf)
	if err != nil {
		t.Fatal(err)
	}
	leaky, err := nn.LeakyReLU(inf, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	d0 := vec("d0", 0, 1, -1)
	sl1, err := nn.SmoothL1Loss(d0, vec("zero", 0, 0, 0), 0, "sum")
	if err != nil {
		t.Fatal(err)
	}
	dsl1, err := ad.Grad(sl1, d0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := graphtest.Eval(g, sg, silu, dbce[0], relu, leaky, dsl1[0])
	if err != nil {
		t.Fatal(err)
	}
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	for i, c := range []struct {
		what      string
		got, want []float64
	}{
		{"sigmoid", got[0], []float64{sig(20), sig(-20), 0.5}},
		{"silu", got[1], []float64{20 * sig(20), -20 * sig(-20), 0}},
		{"bce gradient", got[2], []float64{sig(-20), sig(-30)}},
		{"relu", got[3], []float64{0, math.NaN(), 2}},
		{"leaky relu", got[4], []float64{math.Inf(-1), math.NaN(), 2}},
		{"smooth l1 beta 0 gradient", got[5], []float64{-1, 1, -1}},
	} {
		for j := range c.want {
			w, v := c.want[j], c.got[j]
			if !(math.IsNaN(w) && math.IsNaN(v) || w == v || math.Abs(v-w) <= 1e-15*math.Abs(w)) {
				t.Errorf("%d %s[%d] = %v, want %v", i, c.what, j, v, w)
			}
		}
	}
	// An empty training batch: an empty result, the statistics untouched.
	rm := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2}))
	rv := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{3, 4}))
	g2 := gorgonia.NewGraph()
	e := gorgonia.NewTensor(g2, tensor.Float64, 3, gorgonia.WithShape(0, 2, 3), gorgonia.WithName("e"),
		gorgonia.WithValue(tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 2, 3))))
	y, err := nn.BatchNorm(e, nil, nil, rm, rv, nn.BatchNormOpts{Training: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // twice: a second Eval of a graph with an empty node
		if _, err := graphtest.Eval(g2, y); err != nil {
			t.Fatal(err)
		}
	}
	if rm.Data().([]float64)[1] != 2 || rv.Data().([]float64)[0] != 3 {
		t.Fatalf("running statistics changed: %v %v", rm, rv)
	}
}

// TestEdgeErrors: shapes that Gorgonia's lenient comparison ((1, C) equal
// to (C)) would let through, a running statistic that is a view, and
// weights of an empty BCE are still checked.
func TestEdgeErrors(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(2, 4))
	col := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(3, 1))
	row := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3))
	empty := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(0, 3))
	big := tensor.New(tensor.WithShape(4, 2), tensor.WithBacking(make([]float64, 8)))
	view, err := big.Slice(nil, gorgonia.S(1))
	if err != nil {
		t.Fatal(err)
	}
	runErrCases(t, []errCase{
		{"batchnorm [1,C] stats", func() (*gorgonia.Node, error) {
			m := tensor.New(tensor.WithShape(1, 4), tensor.WithBacking(make([]float64, 4)))
			return nn.BatchNorm(x, nil, nil, m, tensor.New(tensor.WithShape(4), tensor.WithBacking(make([]float64, 4))), nn.BatchNormOpts{})
		}, "runningMean float64 (1, 4), want (4)"},
		{"batchnorm view", func() (*gorgonia.Node, error) {
			return nn.BatchNorm(gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(3, 4)), nil, nil, view.(*tensor.Dense), nil, nn.BatchNormOpts{Training: true})
		}, "must be a contiguous tensor"},
		{"mse [3,1] vs [3]", func() (*gorgonia.Node, error) { return nn.MSELoss(col, row, "sum") }, "target float64 (3) differs from input float64 (3, 1)"},
		{"bce empty weight", func() (*gorgonia.Node, error) {
			return nn.BinaryCrossEntropyWithLogits(empty, empty, nn.BCEWithLogitsOpts{Weight: gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(7))})
		}, "weight shape (7), want (3)"},
	})
}
