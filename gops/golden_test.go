package gops_test

import (
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// goldenCase is one torchvision evaluation written by testdata/gen_golden.py.
type goldenCase struct {
	Name          string    `json:"name"`
	Dtype         string    `json:"dtype"`
	OutputSize    [2]int    `json:"output_size"`
	SpatialScale  float64   `json:"spatial_scale"`
	SamplingRatio int       `json:"sampling_ratio"`
	Aligned       bool      `json:"aligned"`
	InputShape    []int     `json:"input_shape"`
	Input         []float64 `json:"input"`
	BoxesShape    []int     `json:"boxes_shape"`
	Boxes         []float64 `json:"boxes"`
	GradOutput    []float64 `json:"grad_output"`
	OutputShape   []int     `json:"output_shape"`
	Output        []float64 `json:"output"`
	GradInput     []float64 `json:"grad_input"`
}

// loadGoldenFile reads the cases of a testdata/*.json.gz file written by one
// of the testdata/gen_golden*.py scripts.
func loadGoldenFile[C any](t *testing.T, file string) []C {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []C `json:"cases"`
	}
	if err := json.NewDecoder(zr).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) == 0 {
		t.Fatalf("%s has no cases", file)
	}
	return doc.Cases
}

// goldenTensor builds a tensor of the case's dtype.
func goldenTensor(dtype string, shape []int, data []float64) *tensor.Dense {
	if dtype == "float32" {
		d := make([]float32, len(data))
		for i, v := range data {
			d[i] = float32(v)
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), data...)))
}

// assertClose compares got to want elementwise with |got-want| <= atol + rtol|want|.
func assertClose(t *testing.T, what string, got, want []float64, rtol, atol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(got[i] - want[i]); !(d <= atol+rtol*math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %.10g, want %.10g (diff %.3g)", what, i, got[i], want[i], d)
		}
	}
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

// runPoolGolden builds op(x, boxes) and the input gradient of
// sum(op ⊙ grad_output) for one golden case and runs them on a TapeMachine.
func runPoolGolden(t *testing.T, c *poolGoldenCase, op func(x, b *gorgonia.Node) (*gorgonia.Node, error)) (y, dx []float64) {
	t.Helper()
	dt := tensor.Float64
	if c.Dtype == "float32" {
		dt = tensor.Float32
	}
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(c.InputShape...), gorgonia.WithName("x"),
		gorgonia.WithValue(goldenTensor(c.Dtype, c.InputShape, c.Input)))
	b := gorgonia.NewTensor(g, dt, 2, gorgonia.WithShape(c.BoxesShape...), gorgonia.WithName("boxes"),
		gorgonia.WithValue(goldenTensor(c.Dtype, c.BoxesShape, c.Boxes)))
	gy := gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(c.OutputShape...), gorgonia.WithName("gy"),
		gorgonia.WithValue(goldenTensor(c.Dtype, c.OutputShape, c.GradOutput)))
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

func goldenTol(c *poolGoldenCase) (rtol, atol float64) {
	if c.Dtype == "float32" {
		return 1e-5, 1e-5
	}
	return 1e-12, 1e-12
}
