package graphtest_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// cnn is a small classifier on [2, 1, 8, 8] images in float64: Conv2d
// 3×3 (4 channels, bias), ReLU, MaxPool2d 2×2, flatten, a linear layer to
// 3 classes (MatMul with the weight transposed, bias added) and
// CrossEntropy; extra, when set, is applied to the logits (a wrong op
// under test). It returns the cost, the parameters and their values.
func cnn(t *testing.T, seed uint64, extra func(*gorgonia.Node) (*gorgonia.Node, error)) (*gorgonia.Node, gorgonia.Nodes, []*tensor.Dense) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	rnd := func(scale float64, shape ...int) *tensor.Dense {
		d := make([]float64, tensor.Shape(shape).TotalSize())
		for i := range d {
			d[i] = scale * rng.NormFloat64()
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
	}
	g := gorgonia.NewGraph()
	node := func(name string, v *tensor.Dense) *gorgonia.Node {
		return gorgonia.NewTensor(g, tensor.Float64, v.Dims(), gorgonia.WithShape(v.Shape()...), gorgonia.WithValue(v), gorgonia.WithName(name))
	}
	vals := []*tensor.Dense{rnd(0.5, 4, 1, 3, 3), rnd(0.1, 4), rnd(0.3, 3, 36), rnd(0.1, 1, 3)}
	names := []string{"conv.weight", "conv.bias", "fc.weight", "fc.bias"}
	var params gorgonia.Nodes
	for i, v := range vals {
		params = append(params, node(names[i], v))
	}
	x := node("x", rnd(1, 2, 1, 8, 8))
	y := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(2), gorgonia.WithName("y"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking([]int{2, 0}))))
	must := func(n *gorgonia.Node, err error) *gorgonia.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	h := must(nn.Conv2d(x, params[0], params[1], nn.Conv2dOpts{}))
	h = must(nn.ReLU(h))
	h = must(nn.MaxPool2d(h, nn.MaxPool2dOpts{KernelSize: [2]int{2, 2}}))
	h = must(nn.Flatten(h, 1))
	logits := must(nn.MatMul(h, params[2], false, true))
	logits = must(gorgonia.BroadcastAdd(logits, params[3], nil, []byte{0}))
	if extra != nil {
		logits = must(extra(logits))
	}
	cost := must(nn.CrossEntropy(logits, y, nn.CrossEntropyOpts{}))
	return cost, params, vals
}

// TestDirectionalCNN: the conv/relu/pool/linear model's derivatives agree
// with finite differences at orders 1..3, θ is restored, and the report
// holds the measured numbers.
func TestDirectionalCNN(t *testing.T) {
	cost, params, vals := cnn(t, 7, nil)
	want, err := graphtest.Eval(cost.Graph(), cost)
	if err != nil {
		t.Fatal(err)
	}
	before := make([][]float64, len(vals))
	for i, v := range vals {
		before[i] = append([]float64(nil), v.Float64s()...)
	}
	r, err := graphtest.Directional(cost, params, graphtest.DirectionalOpts{Order: 3, Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%v", err, r)
	}
	t.Logf("\n%v", r)
	if r.Params != 36+4+108+3 || len(r.Orders) != 3 || r.Step != 1e-5 {
		t.Fatalf("report %+v", r)
	}
	for _, o := range r.Orders {
		if o.AD == 0 || math.IsNaN(o.AD) || o.RelErr > 1e-5 {
			t.Errorf("order %d: %+v", o.Order, o)
		}
	}
	if r.Cost != want[0][0] {
		t.Errorf("report's cost %v, the graph's %v", r.Cost, want[0][0])
	}
	for i, v := range vals {
		for e, x := range v.Float64s() {
			if x != before[i][e] {
				t.Fatalf("parameter %d element %d: %v after the check, %v before", i, e, x, before[i][e])
			}
		}
	}
}

// scaledBackward is x² with its backward 2x·G multiplied by factor.
func scaledBackward(factor float64) func(*gorgonia.Node) (*gorgonia.Node, error) {
	return func(x *gorgonia.Node) (*gorgonia.Node, error) {
		return ad.Apply(ad.OpSpec{
			Name:       "ScaledSquare",
			InputDims:  []int{2},
			OutputDims: 2,
			Shape:      func(s []tensor.Shape) (tensor.Shape, error) { return s[0].Clone(), nil },
			Kernel:     ad.Floats(square[float32], square[float64]),
			Backward: func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
				b := ad.NewBuilder(in[0])
				return b.Nodes(b.Scale(b.HadamardProd(in[0], g), 2*factor))
			},
		}, x)
	}
}

// square is out = in², elementwise.
func square[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	for i, v := range in[0].Data {
		out.Data[i] = v * v
	}
	return nil
}

// TestDirectionalCatchesWrongBackward: the same model with a square whose
// backward is scaled by 1.1 fails at order 1 (and the right one passes).
func TestDirectionalCatchesWrongBackward(t *testing.T) {
	cost, params, _ := cnn(t, 7, scaledBackward(1))
	if r, err := graphtest.Directional(cost, params, graphtest.DirectionalOpts{Order: 2, Seed: 1}); err != nil {
		t.Fatalf("the right backward fails: %v\n%v", err, r)
	}
	cost, params, _ = cnn(t, 7, scaledBackward(1.1))
	r, err := graphtest.Directional(cost, params, graphtest.DirectionalOpts{Order: 2, Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "order 1 derivative") {
		t.Fatalf("error %v for a backward scaled by 1.1\n%v", err, r)
	}
	if r == nil || len(r.Orders) != 2 || r.Orders[0].RelErr < 0.01 {
		t.Fatalf("report %v", r)
	}
	t.Logf("%v\n%v", err, r)
}

// TestDirectionalBadInput: wrong nodes and options are errors naming them.
func TestDirectionalBadInput(t *testing.T) {
	cost, params, _ := cnn(t, 7, nil)
	g := cost.Graph()
	other := gorgonia.NewVector(gorgonia.NewGraph(), tensor.Float64, gorgonia.WithShape(2), gorgonia.WithInit(gorgonia.Zeroes()), gorgonia.WithName("elsewhere"))
	f32 := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(2), gorgonia.WithInit(gorgonia.Zeroes()), gorgonia.WithName("w32"))
	unset := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("unset"))
	for _, tc := range []struct {
		name string
		cost *gorgonia.Node
		wrt  gorgonia.Nodes
		opts graphtest.DirectionalOpts
		want string
	}{
		{"nil cost", nil, params, graphtest.DirectionalOpts{}, "cost is nil"},
		{"tensor cost", params[1], params, graphtest.DirectionalOpts{}, "want a scalar"},
		{"no wrt", cost, nil, graphtest.DirectionalOpts{}, "no wrt"},
		{"nil wrt", cost, gorgonia.Nodes{params[0], nil}, graphtest.DirectionalOpts{}, "wrt 1 is nil"},
		{"other graph", cost, gorgonia.Nodes{other}, graphtest.DirectionalOpts{}, "wrt 0 (elsewhere) is a node of another graph"},
		{"twice", cost, gorgonia.Nodes{params[0], params[0]}, graphtest.DirectionalOpts{}, "listed twice"},
		{"not input", cost, gorgonia.Nodes{cost}, graphtest.DirectionalOpts{}, "not an input node"},
		{"float32", cost, gorgonia.Nodes{f32}, graphtest.DirectionalOpts{}, "wrt 0 (w32) is float32; finite differences need float64"},
		{"no value", cost, gorgonia.Nodes{unset}, graphtest.DirectionalOpts{}, "wrt 0 (unset) holds <nil>"},
		{"negative order", cost, params, graphtest.DirectionalOpts{Order: -1}, "must be finite and >= 0"},
		{"negative eps", cost, params, graphtest.DirectionalOpts{Eps: -1e-5}, "must be finite and >= 0"},
		{"NaN rtol", cost, params, graphtest.DirectionalOpts{RTol: math.NaN()}, "must be finite and >= 0"},
		{"Inf eps", cost, params, graphtest.DirectionalOpts{Eps: math.Inf(1)}, "must be finite and >= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := graphtest.Directional(tc.cost, tc.wrt, tc.opts)
			if err == nil || r != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Directional = %v, %v; want an error with %q", r, err, tc.want)
			}
		})
	}
}

// TestDirectionalKink: the documented pitfall. Σ ReLU(w) at w = (0, 1, -1)
// sits on ReLU's kink: AD takes ReLU'(0) = 0, the central difference
// averages both sides, so the check fails there and passes a step away.
func TestDirectionalKink(t *testing.T) {
	for _, tc := range []struct {
		w    []float64
		fail bool
	}{{[]float64{0, 1, -1}, true}, {[]float64{0.01, 1, -1}, false}} {
		g := gorgonia.NewGraph()
		w := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("w"),
			gorgonia.WithValue(tensor.New(tensor.WithBacking(tc.w))))
		r, err := nn.ReLU(w)
		if err != nil {
			t.Fatal(err)
		}
		cost, err := gorgonia.Sum(r)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := graphtest.Directional(cost, gorgonia.Nodes{w}, graphtest.DirectionalOpts{Seed: 3})
		if (err != nil) != tc.fail {
			t.Errorf("w = %v: error %v, want one: %v\n%v", tc.w, err, tc.fail, rep)
		}
	}
}
