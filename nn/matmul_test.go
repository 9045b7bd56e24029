package nn_test

import (
	"fmt"
	"math/rand/v2"
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

// matMulGoldenCase is one torch evaluation written by
// testdata/gen_golden_matmul.py.
type matMulGoldenCase struct {
	Name        string    `json:"name"`
	Dtype       string    `json:"dtype"`
	TransA      bool      `json:"trans_a"`
	TransB      bool      `json:"trans_b"`
	AShape      []int     `json:"a_shape"`
	A           []float64 `json:"a"`
	BShape      []int     `json:"b_shape"`
	B           []float64 `json:"b"`
	GradOutput  []float64 `json:"grad_output"`
	OutputShape []int     `json:"output_shape"`
	Output      []float64 `json:"output"`
	GradA       []float64 `json:"grad_a"`
	GradB       []float64 `json:"grad_b"`
	VA          []float64 `json:"v_a"`
	Grad2B      []float64 `json:"grad2_b"`
}

// TestMatMulGolden: MatMul's value, its gradients w.r.t. a and b, and the
// second-order term d/db <d/da <out, G>, V> equal torch's, in float32 and
// float64, for all four transpose cases, rank 2 and 3.
func TestMatMulGolden(t *testing.T) {
	for _, c := range golden.Load[matMulGoldenCase](t, filepath.Join("..", "testdata", "matmul_golden.json.gz")) {
		t.Run(c.Name, func(t *testing.T) {
			dt := tensor.Float64
			rtol, atol := 1e-12, 1e-12
			if c.Dtype == "float32" {
				dt, rtol, atol = tensor.Float32, 1e-5, 1e-5
			}
			g := gorgonia.NewGraph()
			node := func(name string, shape []int, data []float64) *gorgonia.Node {
				return gorgonia.NewTensor(g, dt, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
					gorgonia.WithValue(golden.Tensor(c.Dtype, shape, data)))
			}
			a, b := node("a", c.AShape, c.A), node("b", c.BShape, c.B)
			gy, v := node("G", c.OutputShape, c.GradOutput), node("V", c.AShape, c.VA)
			y, err := nn.MatMul(a, b, c.TransA, c.TransB)
			if err != nil {
				t.Fatal(err)
			}
			if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
				t.Fatalf("shape %v, want %v", y.Shape(), c.OutputShape)
			}
			cost := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, gy))))
			g1, err := ad.Grad(cost, a, b)
			if err != nil {
				t.Fatal(err)
			}
			h := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(g1[0], v))))
			g2, err := ad.Grad(h, b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := graphtest.Eval(g, y, g1[0], g1[1], g2[0])
			if err != nil {
				t.Fatal(err)
			}
			golden.AssertClose(t, "output", got[0], c.Output, rtol, atol)
			golden.AssertClose(t, "grad_a", got[1], c.GradA, rtol, atol)
			golden.AssertClose(t, "grad_b", got[2], c.GradB, rtol, atol)
			golden.AssertClose(t, "grad2_b", got[3], c.Grad2B, rtol, atol)
		})
	}
}

// TestMatMulReference: larger products than the golden file (beyond the
// micro-kernels' tiles and the blocking), with empty sizes, against a
// float64 reference.
func TestMatMulReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range []struct{ batch, m, n, k int }{
		{0, 37, 70, 300}, {0, 0, 4, 3}, {0, 4, 0, 3}, {0, 4, 3, 0}, {2, 25, 33, 129}, {0, 1, 1, 1}, {3, 0, 2, 2},
	} {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				name := fmt.Sprintf("b%d/%dx%dx%d/tA=%v,tB=%v/%v", s.batch, s.m, s.n, s.k, tr[0], tr[1], dt)
				t.Run(name, func(t *testing.T) {
					pre := []int{}
					if s.batch > 0 {
						pre = []int{s.batch}
					}
					shapeOf := func(rows, cols int, trans bool) []int {
						if trans {
							rows, cols = cols, rows
						}
						return append(append([]int{}, pre...), rows, cols)
					}
					sa, sb := shapeOf(s.m, s.k, tr[0]), shapeOf(s.k, s.n, tr[1])
					ad, bd := randData(r, sa), randData(r, sb)
					g := gorgonia.NewGraph()
					node := func(name string, shape []int, d []float64) *gorgonia.Node {
						v := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
						if dt == tensor.Float32 {
							v = graphtest.Float32([]*tensor.Dense{v})[0]
						}
						return gorgonia.NewTensor(g, dt, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name), gorgonia.WithValue(v))
					}
					y, err := nn.MatMul(node("a", sa, ad), node("b", sb, bd), tr[0], tr[1])
					if err != nil {
						t.Fatal(err)
					}
					out, err := graphtest.Eval(g, y)
					if err != nil {
						t.Fatal(err)
					}
					got := out[0]
					batch := max(s.batch, 1)
					want := make([]float64, batch*s.m*s.n)
					at := func(d []float64, shape []int, bi, i, j int, trans bool) float64 {
						rows, cols := shape[len(shape)-2], shape[len(shape)-1]
						if trans {
							i, j = j, i
						}
						return d[bi*rows*cols+i*cols+j]
					}
					for bi := 0; bi < batch; bi++ {
						for i := 0; i < s.m; i++ {
							for j := 0; j < s.n; j++ {
								var sum float64
								for p := 0; p < s.k; p++ {
									x, w := at(ad, sa, bi, i, p, tr[0]), at(bd, sb, bi, p, j, tr[1])
									if dt == tensor.Float32 {
										x, w = float64(float32(x)), float64(float32(w))
									}
									sum += x * w
								}
								want[(bi*s.m+i)*s.n+j] = sum
							}
						}
					}
					if s.batch == 0 && len(pre) == 0 {
						want = want[:s.m*s.n]
					}
					tol := 1e-12
					if dt == tensor.Float32 {
						tol = 1e-4
					}
					golden.AssertClose(t, "output", got, want, tol, tol)
				})
			}
		}
	}
}

func randData(r *rand.Rand, shape []int) []float64 {
	d := make([]float64, tensor.Shape(shape).TotalSize())
	for i := range d {
		d[i] = r.NormFloat64()
	}
	return d
}

// TestMatMulBadInput: errors that name the input and the problem.
func TestMatMulBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	m := func(dt tensor.Dtype, shape ...int) *gorgonia.Node {
		if len(shape) == 0 {
			return gorgonia.NewScalar(g, dt)
		}
		return gorgonia.NewTensor(g, dt, len(shape), gorgonia.WithShape(shape...))
	}
	f32, f64 := tensor.Float32, tensor.Float64
	for _, c := range []struct {
		name   string
		a, b   *gorgonia.Node
		ta, tb bool
		want   string
	}{
		{"nil a", nil, m(f64, 2, 2), false, false, "a is nil"},
		{"nil b", m(f64, 2, 2), nil, false, false, "b is nil"},
		{"int a", m(tensor.Int, 2, 2), m(f64, 2, 2), false, false, "a dtype int"},
		{"dtypes differ", m(f32, 2, 2), m(f64, 2, 2), false, false, "b dtype float64 differs from a dtype float32"},
		{"vector", m(f64, 2), m(f64, 2, 2), false, false, "rank 2 or both rank 3"},
		{"scalar", m(f64), m(f64, 2, 2), false, false, "rank 2 or both rank 3"},
		{"ranks differ", m(f64, 2, 2), m(f64, 1, 2, 2), false, false, "rank 2 or both rank 3"},
		{"rank 4", m(f64, 1, 1, 2, 2), m(f64, 1, 1, 2, 2), false, false, "rank 2 or both rank 3"},
		{"inner", m(f64, 2, 3), m(f64, 2, 3), false, false, "inner sizes differ: op(a) has 3 columns, op(b) 2 rows"},
		{"inner transposed", m(f64, 2, 3), m(f64, 2, 3), true, false, ""},
		{"inner transB", m(f64, 2, 3), m(f64, 2, 3), false, true, ""},
		{"batch", m(f64, 2, 2, 2), m(f64, 3, 2, 2), false, false, "batch sizes differ"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := nn.MatMul(c.a, c.b, c.ta, c.tb)
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

// shiftedTensor is smoothTensor(scale, shape...) plus shift.
func shiftedTensor(scale, shift float64, shape ...int) *tensor.Dense {
	t := smoothTensor(scale, shape...)
	if t.Shape().TotalSize() == 0 {
		return t // Data() of an empty tensor panics
	}
	d := t.Data().([]float64)
	for i := range d {
		d[i] += shift
	}
	return t
}

// matMulRows are MatMul's rows: (op(sin a)·op(sin b))³ for the four
// transpose cases, rank 2 and rank 3, w.r.t. both inputs; the first also
// checks batch 0.
func matMulRows() []conformance.Row {
	var rows []conformance.Row
	for _, rank := range []int{2, 3} {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			ta, tb := tr[0], tr[1]
			m, n, k := 3, 4, 5
			shape := func(r, c int, trans bool) []int {
				if trans {
					r, c = c, r
				}
				if rank == 3 {
					return []int{2, r, c}
				}
				return []int{r, c}
			}
			f := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
				sa, err := gorgonia.Sin(in[0])
				if err != nil {
					return nil, err
				}
				sb, err := gorgonia.Sin(in[1])
				if err != nil {
					return nil, err
				}
				y, err := nn.MatMul(sa, sb, ta, tb)
				if err != nil {
					return nil, err
				}
				return gorgonia.Cube(y)
			}
			a, b := shape(m, k, ta), shape(k, n, tb)
			row := conformance.Row{
				Op: "MatMul", Name: fmt.Sprintf("rank%d/transA=%v,transB=%v", rank, ta, tb), F: f,
				In: []*tensor.Dense{shiftedTensor(0.3, 0.1, a...), shiftedTensor(0.2, -0.2, b...)}, Wrt: []int{0, 1},
				Check: graphtest.Options{Seed: 4}, Tol32: 1e-5,
				// The determinism inputs go through more than one tile and
				// block of the product.
				Det: []*tensor.Dense{shiftedTensor(0.01, 0, shape(100, 300, ta)...), shiftedTensor(0.01, 0, shape(300, 70, tb)...)},
			}
			if rank == 3 && !ta && !tb {
				row.Bare = func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.MatMul(in[0], in[1], false, false) }
				row.Empty = []*tensor.Dense{tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 3, 5)), tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 5, 4))}
			}
			rows = append(rows, row)
		}
	}
	return rows
}
