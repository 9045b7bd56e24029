package nn_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// goldenGraph is the graph of one golden case: its dtype, default
// tolerances (rtol, atol: 1e-11 and 1e-12 in float64, 2e-5 and 2e-6 in
// float32), and nodes holding the case's values.
type goldenGraph struct {
	t          *testing.T
	g          *gorgonia.ExprGraph
	dtype      string
	dt         tensor.Dtype
	rtol, atol float64
}

func newGoldenGraph(t *testing.T, dtype string) *goldenGraph {
	gg := &goldenGraph{t: t, g: gorgonia.NewGraph(), dtype: dtype, dt: tensor.Float64, rtol: 1e-11, atol: 1e-12}
	if dtype == "float32" {
		gg.dt, gg.rtol, gg.atol = tensor.Float32, 2e-5, 2e-6
	}
	return gg
}

// node is a named input node with the given values (a scalar for an empty
// shape).
func (gg *goldenGraph) node(name string, shape []int, data []float64) *gorgonia.Node {
	if len(shape) == 0 {
		var s gorgonia.Value = gorgonia.NewF64(data[0])
		if gg.dt == tensor.Float32 {
			s = gorgonia.NewF32(float32(data[0]))
		}
		return gorgonia.NewScalar(gg.g, gg.dt, gorgonia.WithName(name), gorgonia.WithValue(s))
	}
	return gorgonia.NewTensor(gg.g, gg.dt, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
		gorgonia.WithValue(golden.Tensor(gg.dtype, shape, data)))
}

// errCase is a call that must fail with an error containing want.
type errCase struct {
	name string
	f    func() (*gorgonia.Node, error)
	want string
}

// runErrCases runs each case as a subtest.
func runErrCases(t *testing.T, cases []errCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.f()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// valueFloats is the elements of v (a float32 or float64 tensor or
// scalar) as float64s.
func valueFloats(v gorgonia.Value) []float64 { return graphtest.Floats(v) }

// inputGolden are the fields of a golden case of an op on one input x,
// checked through L = Σ G·out² (or <out, G>): x, G, torch's output and
// ∂L/∂x, and the Hessian-vector product ∂<∂L/∂x, v>/∂x. The cases of
// each op embed it.
type inputGolden struct {
	Name       string    `json:"name"`
	Dtype      string    `json:"dtype"`
	InputShape []int     `json:"input_shape"`
	Input      []float64 `json:"input"`
	GradOutput []float64 `json:"grad_output"`
	Output     []float64 `json:"output"`
	GradInput  []float64 `json:"grad_input"`
	VInput     []float64 `json:"v_input"`
	HVPInput   []float64 `json:"hvp_input"`
}

// weightGolden adds a weight and a bias to inputGolden: their values and
// gradients, and the Hessian-vector product w.r.t. the weight (v_weight
// the weight's part of v).
type weightGolden struct {
	inputGolden
	Weight     []float64 `json:"weight"`
	Bias       []float64 `json:"bias"`
	GradWeight []float64 `json:"grad_weight"`
	GradBias   []float64 `json:"grad_bias"`
	VWeight    []float64 `json:"v_weight"`
	HVPWeight  []float64 `json:"hvp_weight"`
}

// checkInput requires y = op(x), with x the case's input node, to give the
// case's output, gradient and Hessian-vector product w.r.t. x of
// L = Σ G·y² (see gradHVP).
func (gg *goldenGraph) checkInput(y, x *gorgonia.Node, c *inputGolden) {
	gg.t.Helper()
	got := gg.gradHVP(y, x, nil, nil, false, c.GradOutput, c.VInput, nil)
	golden.AssertClose(gg.t, "output", got[0], c.Output, gg.rtol, gg.atol)
	golden.AssertClose(gg.t, "grad_input", got[1], c.GradInput, gg.rtol, gg.atol)
	golden.AssertClose(gg.t, "hvp_input", got[2], c.HVPInput, gg.rtol, gg.atol)
}

// gradHVP evaluates y, the gradients of L w.r.t. x, w and b, and the
// Hessian-vector product (the gradient of <∂L/∂x, vx> + <∂L/∂w, vw>)
// w.r.t. x and w, in that order. L is Σ G·y², or Σ G·y when linear (G
// of y's shape). w and b may be nil (no such parameter): their gradients
// and w's HVP are then left out.
func (gg *goldenGraph) gradHVP(y, x, w, b *gorgonia.Node, linear bool, g, vx, vw []float64) [][]float64 {
	gg.t.Helper()
	t := gg.t
	gy := gg.node("G", y.Shape(), g)
	cost := gorgonia.Must(gorgonia.HadamardProd(y, gy))
	if !linear {
		cost = gorgonia.Must(gorgonia.HadamardProd(cost, y))
	}
	wrt := gorgonia.Nodes{x}
	for _, n := range []*gorgonia.Node{w, b} {
		if n != nil {
			wrt = append(wrt, n)
		}
	}
	g1, err := ad.Grad(gorgonia.Must(gorgonia.Sum(cost)), wrt...)
	if err != nil {
		t.Fatal(err)
	}
	h := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(g1[0], gg.node("vx", x.Shape(), vx)))))
	hwrt := gorgonia.Nodes{x}
	if w != nil {
		h = gorgonia.Must(gorgonia.Add(h, gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(g1[1], gg.node("vw", w.Shape(), vw)))))))
		hwrt = append(hwrt, w)
	}
	hv, err := ad.Grad(h, hwrt...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := graphtest.Eval(gg.g, append(append(gorgonia.Nodes{y}, g1...), hv...)...)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// checkWeight requires y = op(x, w, b) to give the case's output and
// gradHVP's gradients and Hessian-vector product, in gg's tolerances.
func (gg *goldenGraph) checkWeight(y, x, w, b *gorgonia.Node, linear bool, c *weightGolden) {
	gg.t.Helper()
	got := gg.gradHVP(y, x, w, b, linear, c.GradOutput, c.VInput, c.VWeight)
	want := [][]float64{c.Output, c.GradInput}
	names := []string{"output", "grad_input"}
	if w != nil {
		want, names = append(want, c.GradWeight), append(names, "grad_weight")
	}
	if b != nil {
		want, names = append(want, c.GradBias), append(names, "grad_bias")
	}
	want, names = append(want, c.HVPInput), append(names, "hvp_input")
	if w != nil {
		want, names = append(want, c.HVPWeight), append(names, "hvp_weight")
	}
	for i := range want {
		golden.AssertClose(gg.t, names[i], got[i], want[i], gg.rtol, gg.atol)
	}
}

// goldenCase is a golden case that embeds inputGolden (its name and
// dtype).
type goldenCase interface{ base() *inputGolden }

func (c *inputGolden) base() *inputGolden { return c }

// runGolden runs check on each case of testdata/file (a gzipped JSON
// list of C) as a subtest named after the case, with a goldenGraph of the
// case's dtype.
func runGolden[C any, P interface {
	*C
	goldenCase
}](t *testing.T, file string, check func(t *testing.T, gg *goldenGraph, c P)) {
	t.Helper()
	for _, c := range golden.Load[C](t, filepath.Join("..", "testdata", file)) {
		p := P(&c)
		t.Run(p.base().Name, func(t *testing.T) { check(t, newGoldenGraph(t, p.base().Dtype), p) })
	}
}

// setTol sets gg's tolerances: rtol64 and atol64 in float64, rtol32 and
// atol32 in float32.
func (gg *goldenGraph) setTol(rtol64, atol64, rtol32, atol32 float64) {
	gg.rtol, gg.atol = rtol64, atol64
	if gg.dt == tensor.Float32 {
		gg.rtol, gg.atol = rtol32, atol32
	}
}
