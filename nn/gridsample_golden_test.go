package nn_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// gridSampleGoldenCase is one grid_sample case of
// testdata/gen_golden_gridsample.py: torch's forward and first-order
// gradients of L = <out, G>, and second-order terms from a float64
// gather-based reference (checked there against torch's first order and
// central differences of it).
type gridSampleGoldenCase struct {
	Name         string    `json:"name"`
	Mode         string    `json:"mode"`
	PaddingMode  string    `json:"padding_mode"`
	AlignCorners bool      `json:"align_corners"`
	InputShape   []int     `json:"input_shape"`
	Input        []float64 `json:"input"`
	GridShape    []int     `json:"grid_shape"`
	Grid         []float64 `json:"grid"`
	GradOutput   []float64 `json:"grad_output"`
	OutputShape  []int     `json:"output_shape"`
	Output       []float64 `json:"output"`
	GradInput    []float64 `json:"grad_input"`
	GradGrid     []float64 `json:"grad_grid"`
	UInput       []float64 `json:"u_input"`
	VGrid        []float64 `json:"v_grid"`
	HVPVInput    []float64 `json:"hvp_v_input"` // ∂<∂L/∂grid, V>/∂input
	HVPVGrid     []float64 `json:"hvp_v_grid"`  // ∂<∂L/∂grid, V>/∂grid
	HVPUInput    []float64 `json:"hvp_u_input"` // ∂<∂L/∂input, U>/∂input (zero)
	HVPUGrid     []float64 `json:"hvp_u_grid"`  // ∂<∂L/∂input, U>/∂grid
	KinkPoints   []int     `json:"kink_points"` // V is zero there
}

// affineGridGoldenCase is one affine_grid case: the grid and the gradient
// of <grid, G> w.r.t. theta.
type affineGridGoldenCase struct {
	Name         string    `json:"name"`
	AlignCorners bool      `json:"align_corners"`
	Size         []int     `json:"size"`
	Theta        []float64 `json:"theta"`
	GradOutput   []float64 `json:"grad_output"`
	OutputShape  []int     `json:"output_shape"`
	Output       []float64 `json:"output"`
	GradTheta    []float64 `json:"grad_theta"`
}

// composedGoldenCase is GridSample(input, AffineGrid(theta)) with
// L = <out, G>: torch's first order and the reference's gradients of
// <∂L/∂theta, V_theta>.
type composedGoldenCase struct {
	Name          string    `json:"name"`
	Mode          string    `json:"mode"`
	PaddingMode   string    `json:"padding_mode"`
	AlignCorners  bool      `json:"align_corners"`
	Theta         []float64 `json:"theta"`
	Size          []int     `json:"size"`
	InputShape    []int     `json:"input_shape"`
	Input         []float64 `json:"input"`
	GradOutput    []float64 `json:"grad_output"`
	OutputShape   []int     `json:"output_shape"`
	Output        []float64 `json:"output"`
	GradTheta     []float64 `json:"grad_theta"`
	GradInput     []float64 `json:"grad_input"`
	VTheta        []float64 `json:"v_theta"`
	HVPTheta      []float64 `json:"hvp_theta"`
	HVPThetaInput []float64 `json:"hvp_theta_input"`
}

// gridSampleGolden is testdata/gridsample_golden.json.gz.
type gridSampleGolden struct {
	Cases         []gridSampleGoldenCase `json:"cases"`
	BicubicCases  []gridSampleGoldenCase `json:"bicubic_cases"`
	AffineCases   []affineGridGoldenCase `json:"affine_cases"`
	ComposedCases []composedGoldenCase   `json:"composed_cases"`
}

func loadGridSampleGolden(t *testing.T) *gridSampleGolden {
	var doc gridSampleGolden
	golden.Decode(t, filepath.Join("..", "testdata", "gridsample_golden.json.gz"), &doc)
	if len(doc.Cases) == 0 || len(doc.BicubicCases) == 0 || len(doc.AffineCases) == 0 || len(doc.ComposedCases) == 0 {
		t.Fatal("gridsample_golden.json.gz: a list of cases is empty")
	}
	return &doc
}

// gridGoldenDtypes: every case runs in float64 and, from the same values
// (all exact in float32), in float32.
var gridGoldenDtypes = []string{"float64", "float32"}

// gridGoldenClose compares got with want: in float64 to 1e-10 (relative,
// and absolute times the values' scale max(1, max|want|)), in float32 to
// 1e-4 (the inputs are exact in float32; the float32 results differ from
// the float64 golden values by rounding only).
func gridGoldenClose(t *testing.T, dtype, what string, got, want []float64) {
	t.Helper()
	scale := 1.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	tol := 1e-10
	if dtype == "float32" {
		tol = 1e-4
	}
	golden.AssertClose(t, what, got, want, tol, tol*scale)
}

// gridSampleAccepts reports whether nn.GridSample builds a node for mode
// (the bicubic cases run only if it does), and the error if not.
func gridSampleAccepts(mode string) error {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 3, 3), gorgonia.WithName("x"))
	grid := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 2, 2, 2), gorgonia.WithName("grid"))
	_, err := nn.GridSample(x, grid, nn.GridSampleOpts{Mode: mode})
	return err
}

// TestGridSampleGolden: for every mode × padding × align_corners (bicubic
// only if GridSample accepts it) and the identity grids, in float64 and
// float32: the output, the gradients of L = <out, G> w.r.t. input and grid
// (ad.Grad) equal torch's, and the second-order terms ∂<∂L/∂grid, V>/∂input,
// ∂<∂L/∂grid, V>/∂grid, ∂<∂L/∂input, U>/∂input (zero) and
// ∂<∂L/∂input, U>/∂grid equal the reference's. Grid points include pixel
// centres, borders, corners, half-integers, points just and far outside;
// V is zero at the points where the sampling is not twice differentiable.
func TestGridSampleGolden(t *testing.T) {
	doc := loadGridSampleGolden(t)
	run := func(t *testing.T, cases []gridSampleGoldenCase) {
		for _, c := range cases {
			for _, dt := range gridGoldenDtypes {
				t.Run(c.Name+"/"+dt, func(t *testing.T) { checkGridSampleGolden(t, dt, &c) })
			}
		}
	}
	run(t, doc.Cases)
	t.Run("bicubic", func(t *testing.T) {
		if err := gridSampleAccepts("bicubic"); err != nil {
			t.Skipf("nn.GridSample does not accept bicubic: %v", err)
		}
		run(t, doc.BicubicCases)
	})
}

func checkGridSampleGolden(t *testing.T, dtype string, c *gridSampleGoldenCase) {
	gg := newGoldenGraph(t, dtype)
	x := gg.node("x", c.InputShape, c.Input)
	grid := gg.node("grid", c.GridShape, c.Grid)
	y, err := nn.GridSample(x, grid, nn.GridSampleOpts{Mode: c.Mode, PaddingMode: c.PaddingMode, AlignCorners: c.AlignCorners})
	if err != nil {
		t.Fatal(err)
	}
	if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
		t.Fatalf("shape %v, want %v", y.Shape(), c.OutputShape)
	}
	d := gg.grads(gg.dot(y, gg.node("G", c.OutputShape, c.GradOutput)), x, grid)
	hv := gg.grads(gg.dot(d[1], gg.node("V", c.GridShape, c.VGrid)), x, grid)
	hu := gg.grads(gg.dot(d[0], gg.node("U", c.InputShape, c.UInput)), x, grid)
	got, err := graphtest.Eval(gg.g, y, d[0], d[1], hv[0], hv[1], hu[0], hu[1])
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []struct {
		what string
		want []float64
	}{
		{"output", c.Output}, {"grad_input", c.GradInput}, {"grad_grid", c.GradGrid},
		{"hvp_v_input", c.HVPVInput}, {"hvp_v_grid", c.HVPVGrid},
		{"hvp_u_input", c.HVPUInput}, {"hvp_u_grid", c.HVPUGrid},
	} {
		gridGoldenClose(t, dtype, w.what, got[i], w.want)
	}
}

// TestAffineGridGolden: AffineGrid's grid and the gradient of <grid, G>
// w.r.t. theta equal torch's affine_grid (non-square sizes, a unit height,
// align_corners both ways), float64 and float32.
func TestAffineGridGolden(t *testing.T) {
	for _, c := range loadGridSampleGolden(t).AffineCases {
		for _, dt := range gridGoldenDtypes {
			t.Run(c.Name+"/"+dt, func(t *testing.T) {
				gg := newGoldenGraph(t, dt)
				n := c.Size[0]
				theta := gg.node("theta", []int{n, 2, 3}, c.Theta)
				y, err := nn.AffineGrid(theta, [4]int{c.Size[0], c.Size[1], c.Size[2], c.Size[3]}, c.AlignCorners)
				if err != nil {
					t.Fatal(err)
				}
				if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
					t.Fatalf("shape %v, want %v", y.Shape(), c.OutputShape)
				}
				d := gg.grads(gg.dot(y, gg.node("G", c.OutputShape, c.GradOutput)), theta)
				got, err := graphtest.Eval(gg.g, y, d[0])
				if err != nil {
					t.Fatal(err)
				}
				gridGoldenClose(t, dt, "output", got[0], c.Output)
				gridGoldenClose(t, dt, "grad_theta", got[1], c.GradTheta)
			})
		}
	}
}

// TestAffineGridSampleGolden: GridSample(input, AffineGrid(theta)) with
// L = <out, G> (random rotations, scales and shifts near the identity, no
// sample within 1e-4 of a kink): the output and the gradients w.r.t. theta
// and input equal torch's, and the gradients w.r.t. theta and input of
// <∂L/∂theta, V_theta> (second order through the sampling grid) equal the
// reference's, float64 and float32; bicubic cases only if GridSample
// accepts bicubic.
func TestAffineGridSampleGolden(t *testing.T) {
	bicubicErr := gridSampleAccepts("bicubic")
	for _, c := range loadGridSampleGolden(t).ComposedCases {
		for _, dt := range gridGoldenDtypes {
			t.Run(c.Name+"/"+dt, func(t *testing.T) {
				if c.Mode == "bicubic" && bicubicErr != nil {
					t.Skipf("nn.GridSample does not accept bicubic: %v", bicubicErr)
				}
				gg := newGoldenGraph(t, dt)
				n := c.Size[0]
				theta := gg.node("theta", []int{n, 2, 3}, c.Theta)
				x := gg.node("x", c.InputShape, c.Input)
				grid, err := nn.AffineGrid(theta, [4]int{c.Size[0], c.Size[1], c.Size[2], c.Size[3]}, c.AlignCorners)
				if err != nil {
					t.Fatal(err)
				}
				y, err := nn.GridSample(x, grid, nn.GridSampleOpts{Mode: c.Mode, PaddingMode: c.PaddingMode, AlignCorners: c.AlignCorners})
				if err != nil {
					t.Fatal(err)
				}
				d := gg.grads(gg.dot(y, gg.node("G", c.OutputShape, c.GradOutput)), theta, x)
				h := gg.grads(gg.dot(d[0], gg.node("Vtheta", []int{n, 2, 3}, c.VTheta)), theta, x)
				got, err := graphtest.Eval(gg.g, y, d[0], d[1], h[0], h[1])
				if err != nil {
					t.Fatal(err)
				}
				gridGoldenClose(t, dt, "output", got[0], c.Output)
				gridGoldenClose(t, dt, "grad_theta", got[1], c.GradTheta)
				gridGoldenClose(t, dt, "grad_input", got[2], c.GradInput)
				gridGoldenClose(t, dt, "hvp_theta", got[3], c.HVPTheta)
				gridGoldenClose(t, dt, "hvp_theta_input", got[4], c.HVPThetaInput)
			})
		}
	}
}

// dot is Σ a ⊙ b, a scalar node.
func (gg *goldenGraph) dot(a, b *gorgonia.Node) *gorgonia.Node {
	gg.t.Helper()
	p, err := gorgonia.HadamardProd(a, b)
	if err != nil {
		gg.t.Fatal(err)
	}
	s, err := gorgonia.Sum(p)
	if err != nil {
		gg.t.Fatal(err)
	}
	return s
}

// grads is ad.Grad(cost, wrt...), failing the test on an error.
func (gg *goldenGraph) grads(cost *gorgonia.Node, wrt ...*gorgonia.Node) gorgonia.Nodes {
	gg.t.Helper()
	d, err := ad.Grad(cost, wrt...)
	if err != nil {
		names := make([]string, len(wrt))
		for i, w := range wrt {
			names[i] = w.Name()
		}
		gg.t.Fatalf("ad.Grad w.r.t. %s: %v", strings.Join(names, ", "), err)
	}
	return d
}
