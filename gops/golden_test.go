package gops_test

import (
	"path/filepath"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// goldenCase is one torchvision evaluation written by testdata/gen_golden.py.
type goldenCase struct {
	golden.RoI
	Name        string    `json:"name"`
	Dtype       string    `json:"dtype"`
	BoxesShape  []int     `json:"boxes_shape"`
	OutputShape []int     `json:"output_shape"`
	Output      []float64 `json:"output"`
	GradInput   []float64 `json:"grad_input"`
}

// loadGoldenFile reads the cases of a testdata/*.json.gz file written by one
// of the testdata/gen_golden*.py scripts.
func loadGoldenFile[C any](t *testing.T, file string) []C {
	t.Helper()
	return golden.Load[C](t, filepath.Join("..", "testdata", file))
}

// goldenTensor builds a tensor of the case's dtype.
func goldenTensor(dtype string, shape []int, data []float64) *tensor.Dense {
	return golden.Tensor(dtype, shape, data)
}

// goldenDtype is the tensor dtype of a case's "float32" or "float64".
func goldenDtype(s string) tensor.Dtype {
	if s == "float32" {
		return tensor.Float32
	}
	return tensor.Float64
}

// goldenNode is a tensor input named name holding a golden case's values in
// the case's dtype.
func goldenNode(g *gorgonia.ExprGraph, dtype, name string, shape []int, data []float64) *gorgonia.Node {
	return gorgonia.NewTensor(g, goldenDtype(dtype), len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
		gorgonia.WithValue(goldenTensor(dtype, shape, data)))
}

// assertClose compares got to want elementwise with |got-want| <= atol + rtol|want|.
func assertClose(t *testing.T, what string, got, want []float64, rtol, atol float64) {
	t.Helper()
	golden.AssertClose(t, what, got, want, rtol, atol)
}

// poolGoldenCase is one torchvision evaluation written by
// testdata/gen_golden_pool.py: goldenCase's fields plus those of
// ps_roi_align and ps_roi_pool.
type poolGoldenCase struct {
	goldenCase
	NaNOutput   []int     `json:"nan_output"`   // ps_roi_align: torchvision's NaN bins ("output" holds 0)
	OutputGops  []float64 `json:"output_gops"`  // ps_roi_pool: clipped at [0, H] x [0, W]
	BorderBoxes []int     `json:"border_boxes"` // ps_roi_pool: boxes where torchvision's forward differs
}

// goldenPoolOp is a pooled op with a golden case's parameters, shared by the
// CPU golden tests and the GPU ones (cuda_test.go).
type goldenPoolOp func(c *goldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error)

func goldenRoIAlign(c *goldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
	return gops.RoIAlign(x, b, gops.RoIAlignOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale, SamplingRatio: c.SamplingRatio, Aligned: c.Aligned})
}

func goldenRoIPool(c *goldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
	return gops.RoIPool(x, b, gops.RoIPoolOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale})
}

func goldenPSRoIAlign(c *goldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
	return gops.PSRoIAlign(x, b, gops.PSRoIAlignOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale, SamplingRatio: c.SamplingRatio})
}

func goldenPSRoIPool(c *goldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
	return gops.PSRoIPool(x, b, gops.PSRoIPoolOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale})
}

// runPoolGolden builds op(x, boxes) and the input gradient of
// sum(op ⊙ grad_output) for one golden case and runs them on a TapeMachine.
func runPoolGolden(t *testing.T, c *poolGoldenCase, op func(x, b *gorgonia.Node) (*gorgonia.Node, error)) (y, dx []float64) {
	t.Helper()
	g := gorgonia.NewGraph()
	x := goldenNode(g, c.Dtype, "x", c.InputShape, c.Input)
	b := goldenNode(g, c.Dtype, "boxes", c.BoxesShape, c.Boxes)
	gy := goldenNode(g, c.Dtype, "gy", c.OutputShape, c.GradOutput)
	yn, err := op(x, b)
	if err != nil {
		t.Fatal(err)
	}
	if !yn.Shape().Eq(tensor.Shape(c.OutputShape)) {
		t.Fatalf("output shape %v, want %v", yn.Shape(), c.OutputShape)
	}
	cost := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(yn, gy))))
	grads, err := ad.Grad(cost, x)
	if err != nil {
		t.Fatal(err)
	}
	got := runRead(t, g, yn, grads[0])
	return got[0], got[1]
}

// checkPoolGolden runs op on each case of file with boxes (K = 0 is the
// conformance table's empty case), one subtest per case, and checks its
// output y and input gradient dx with check (nil: assertPoolGolden). It
// returns the cases it ran.
func checkPoolGolden(t *testing.T, file string, op goldenPoolOp,
	check func(t *testing.T, c *poolGoldenCase, y, dx []float64, rtol, atol float64)) []poolGoldenCase {
	if check == nil {
		check = assertPoolGolden
	}
	var ran []poolGoldenCase
	for _, c := range loadGoldenFile[poolGoldenCase](t, file) {
		if c.BoxesShape[0] == 0 {
			continue
		}
		ran = append(ran, c)
		t.Run(c.Name, func(t *testing.T) {
			y, dx := runPoolGolden(t, &c, func(x, b *gorgonia.Node) (*gorgonia.Node, error) { return op(&c.goldenCase, x, b) })
			rtol, atol := goldenTol(&c)
			check(t, &c, y, dx, rtol, atol)
		})
	}
	return ran
}

// assertPoolGolden checks y and dx against torch's output and input
// gradient.
func assertPoolGolden(t *testing.T, c *poolGoldenCase, y, dx []float64, rtol, atol float64) {
	t.Helper()
	assertClose(t, "output", y, c.Output, rtol, atol)
	assertClose(t, "grad_input", dx, c.GradInput, rtol, atol)
}

func goldenTol(c *poolGoldenCase) (rtol, atol float64) {
	if c.Dtype == "float32" {
		return 1e-5, 1e-5
	}
	return 1e-12, 1e-12
}
