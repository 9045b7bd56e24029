package nn_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/graphtest/conformance"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// linearGoldenCase is one torch evaluation written by
// scripts/gen_linear_golden.py (layout at its top).
type linearGoldenCase struct {
	Name        string    `json:"name"`
	Dtype       string    `json:"dtype"`
	XShape      []int     `json:"x_shape"`
	X           []float64 `json:"x"`
	WeightShape []int     `json:"weight_shape"`
	Weight      []float64 `json:"weight"`
	Bias        []float64 `json:"bias"`
	GradOutput  []float64 `json:"grad_output"`
	OutputShape []int     `json:"output_shape"`
	Output      []float64 `json:"output"`
	GradX       []float64 `json:"grad_x"`
	GradWeight  []float64 `json:"grad_weight"`
	GradBias    []float64 `json:"grad_bias"`
	VX          []float64 `json:"v_x"`
	VWeight     []float64 `json:"v_weight"`
	VBias       []float64 `json:"v_bias"`
	HvpX        []float64 `json:"hvp_x"`
	HvpWeight   []float64 `json:"hvp_weight"`
	HvpBias     []float64 `json:"hvp_bias"`
}

// TestLinearGolden: Linear's value, its gradients w.r.t. x, weight and
// bias of L = Σ G·y², and the Hessian-vector product of L along
// (v_x, v_weight, v_bias) (torch's double backward) equal torch's
// F.linear, float32 and float64, for 1-D, 2-D and 3-D x, in = 1, out = 1,
// N = 1, N = 0 and no bias. For N = 0 (an empty y, on which Gorgonia's
// elementwise ops panic) the first order is ad.VJP's and the second order
// is not built; torch's are zeros there, and VJP's must be too.
func TestLinearGolden(t *testing.T) {
	for _, c := range golden.Load[linearGoldenCase](t, filepath.Join("..", "testdata", "linear_golden.json.gz")) {
		t.Run(c.Name, func(t *testing.T) {
			dt := tensor.Float64
			rtol, atol := 1e-12, 1e-12
			if c.Dtype == "float32" {
				dt, rtol, atol = tensor.Float32, 2e-5, 2e-5
			}
			g := gorgonia.NewGraph()
			node := func(name string, shape []int, data []float64) *gorgonia.Node {
				return gorgonia.NewTensor(g, dt, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
					gorgonia.WithValue(golden.Tensor(c.Dtype, shape, data)))
			}
			out := c.WeightShape[0]
			params := gorgonia.Nodes{node("x", c.XShape, c.X), node("weight", c.WeightShape, c.Weight)}
			vs := gorgonia.Nodes{node("vx", c.XShape, c.VX), node("vw", c.WeightShape, c.VWeight)}
			var bias *gorgonia.Node
			if c.Bias != nil {
				bias = node("bias", []int{out}, c.Bias)
				params, vs = append(params, bias), append(vs, node("vb", []int{out}, c.VBias))
			}
			y, err := nn.Linear(params[0], params[1], bias)
			if err != nil {
				t.Fatal(err)
			}
			if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
				t.Fatalf("shape %v, want %v", y.Shape(), c.OutputShape)
			}
			gy := node("G", c.OutputShape, c.GradOutput)
			want := [][]float64{c.Output, c.GradX, c.GradWeight, c.GradBias, c.HvpX, c.HvpWeight, c.HvpBias}
			names := []string{"output", "grad_x", "grad_weight", "grad_bias", "hvp_x", "hvp_weight", "hvp_bias"}
			nodes := gorgonia.Nodes{y}
			if y.Shape().TotalSize() == 0 {
				grads, err := ad.VJP(y, gy, params...)
				if err != nil {
					t.Fatal(err)
				}
				nodes = append(nodes, grads...)
			} else {
				b := ad.NewBuilder(y)
				loss, err := b.Node(b.Sum(b.HadamardProd(gy, b.Square(y))))
				if err != nil {
					t.Fatal(err)
				}
				gs, err := ad.Grad(loss, params...)
				if err != nil {
					t.Fatal(err)
				}
				var h *gorgonia.Node
				for i, gi := range gs {
					hi := b.Sum(b.HadamardProd(gi, vs[i]))
					if h == nil {
						h = hi
					} else {
						h = b.Add(h, hi)
					}
				}
				if err := b.Err(); err != nil {
					t.Fatal(err)
				}
				hvp, err := ad.Grad(h, params...)
				if err != nil {
					t.Fatal(err)
				}
				nodes = append(append(nodes, gs...), hvp...)
			}
			got, err := graphtest.Eval(g, nodes...)
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for i, w := range want {
				if w == nil || k >= len(got) {
					continue // no bias; or N = 0: no second order
				}
				golden.AssertClose(t, names[i], got[k], w, rtol, atol)
				k++
			}
			if k != len(got) {
				t.Fatalf("compared %d of %d values", k, len(got))
			}
		})
	}
}

// TestLinearBadInput: errors that name the input, its shape and the
// problem.
func TestLinearBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	m := func(dt tensor.Dtype, shape ...int) *gorgonia.Node {
		if len(shape) == 0 {
			return gorgonia.NewScalar(g, dt)
		}
		return gorgonia.NewTensor(g, dt, len(shape), gorgonia.WithShape(shape...))
	}
	f32, f64 := tensor.Float32, tensor.Float64
	for _, c := range []struct {
		name    string
		x, w, b *gorgonia.Node
		want    string
	}{
		{"nil x", nil, m(f64, 3, 2), nil, "nn: Linear: x is nil"},
		{"nil weight", m(f64, 4, 2), nil, nil, "nn: Linear: weight is nil"},
		{"int x", m(tensor.Int, 4, 2), m(f64, 3, 2), nil, "x dtype int, want float32 or float64"},
		{"int weight", m(f64, 4, 2), m(tensor.Int, 3, 2), nil, "weight dtype int, want float32 or float64"},
		{"weight float32, x float64", m(f64, 4, 2), m(f32, 3, 2), nil, "weight dtype float32 differs from x dtype float64"},
		{"bias float32, x float64", m(f64, 4, 2), m(f64, 3, 2), m(f32, 3), "bias dtype float32 differs from x dtype float64"},
		{"weight vector", m(f64, 4, 2), m(f64, 2), nil, "weight must be [out, in], got shape (2)"},
		{"weight rank 3", m(f64, 4, 2), m(f64, 1, 3, 2), nil, "weight must be [out, in], got shape (1, 3, 2)"},
		{"weight scalar", m(f64, 4, 2), m(f64), nil, "weight must be [out, in]"},
		{"scalar x", m(f64), m(f64, 3, 2), nil, "x must be [..., in] with in = 2 (weight (3, 2)), got a scalar"},
		{"in mismatch", m(f64, 4, 5), m(f64, 3, 2), nil, "x (4, 5) has 5 input features in its last axis, weight (3, 2) [out, in] wants 2"},
		{"in mismatch 1-D", m(f64, 5), m(f64, 3, 2), nil, "x (5) has 5 input features"},
		{"x transposed", m(f64, 2, 4), m(f64, 3, 2), nil, "x (2, 4) has 4 input features"},
		{"bias length", m(f64, 4, 2), m(f64, 3, 2), m(f64, 2), "bias must be [out] = [3] (weight (3, 2)), got shape (2)"},
		{"bias matrix", m(f64, 4, 2), m(f64, 3, 2), m(f64, 1, 3), "bias must be [out] = [3]"},
		{"bias scalar", m(f64, 4, 2), m(f64, 3, 2), m(f64), "bias must be [out] = [3]"},
		{"float32 ok", m(f32, 4, 2), m(f32, 3, 2), m(f32, 3), ""},
		{"3-D ok", m(f64, 2, 4, 2), m(f64, 3, 2), nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := nn.Linear(c.x, c.w, c.b)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// linearRows are Linear's conformance rows: (sin(x)·weightᵀ + bias)³
// w.r.t. x, weight and bias, with and without bias, x 1-D, 2-D and 3-D;
// the first also checks N = 0.
func linearRows() []conformance.Row {
	var rows []conformance.Row
	for i, c := range []struct {
		name   string
		xshape []int
		out    int
		bias   bool
	}{
		{"2d/bias", []int{3, 4}, 5, true},
		{"2d/nobias", []int{3, 4}, 2, false},
		{"in1/out1", []int{2, 1}, 1, true},
		{"1d", []int{4}, 3, true},
		{"3d", []int{2, 2, 3}, 2, true},
	} {
		in := c.xshape[len(c.xshape)-1]
		apply := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			var b *gorgonia.Node
			if len(in) > 2 {
				b = in[2]
			}
			return nn.Linear(in[0], in[1], b)
		}
		x := smoothTensor(1, c.xshape...)
		w := shiftedTensor(0.4, 0.1, c.out, in)
		inputs := []*tensor.Dense{x, w}
		det := []*tensor.Dense{shiftedTensor(0.01, 0, 150, 70), shiftedTensor(0.01, 0.02, 90, 70)}
		if c.bias {
			inputs = append(inputs, smoothTensor(0.3, c.out))
			det = append(det, smoothTensor(0.3, 90))
		}
		row := conformance.Row{Op: "Linear", Name: c.name, F: cubeOf(apply), In: inputs,
			Check: graphtest.Options{Seed: 6}, Tol32: 1e-5, Det: det}
		for j := range inputs {
			row.Wrt = append(row.Wrt, j)
		}
		if i == 0 {
			row.Bare, row.Empty = apply, append([]*tensor.Dense{emptyTensor(0, in)}, inputs[1:]...)
		}
		rows = append(rows, row)
	}
	return rows
}
