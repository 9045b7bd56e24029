package gops_test

import (
	"slices"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

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

func TestRoIPoolGolden(t *testing.T) {
	for _, c := range loadGoldenFile[poolGoldenCase](t, "roipool_golden.json.gz") {
		if c.BoxesShape[0] == 0 {
			continue // K = 0: TestPoolNoBoxes
		}
		t.Run(c.Name, func(t *testing.T) {
			y, dx := runPoolGolden(t, &c, func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
				return gops.RoIPool(x, b, gops.RoIPoolOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale})
			})
			rtol, atol := goldenTol(&c)
			assertClose(t, "output", y, c.Output, rtol, atol)
			assertClose(t, "grad_input", dx, c.GradInput, rtol, atol)
		})
	}
}

func TestPSRoIAlignGolden(t *testing.T) {
	nans := 0
	for _, c := range loadGoldenFile[poolGoldenCase](t, "psroialign_golden.json.gz") {
		if c.BoxesShape[0] == 0 {
			continue
		}
		nans += len(c.NaNOutput)
		t.Run(c.Name, func(t *testing.T) {
			y, dx := runPoolGolden(t, &c, func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
				return gops.PSRoIAlign(x, b, gops.PSRoIAlignOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale, SamplingRatio: c.SamplingRatio})
			})
			rtol, atol := goldenTol(&c)
			// torchvision's NaN (a bin without samples) is 0 here, as the
			// golden file already holds it; check that it is exactly 0.
			for _, i := range c.NaNOutput {
				if y[i] != 0 {
					t.Fatalf("output[%d] = %v where torchvision has NaN, want 0", i, y[i])
				}
			}
			assertClose(t, "output", y, c.Output, rtol, atol)
			assertClose(t, "grad_input", dx, c.GradInput, rtol, atol)
		})
	}
	if nans == 0 {
		t.Errorf("no golden case has a bin without samples")
	}
}

// PSRoIPool equals torchvision's forward on the input padded by a zero row
// and column everywhere (the clip at [0, H]), torchvision's own forward on
// every box that does not reach the border, and torchvision's gradient
// everywhere (its backward clips at [0, H] too).
func TestPSRoIPoolGolden(t *testing.T) {
	differ := 0
	for _, c := range loadGoldenFile[poolGoldenCase](t, "psroipool_golden.json.gz") {
		if c.BoxesShape[0] == 0 {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			y, dx := runPoolGolden(t, &c, func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
				return gops.PSRoIPool(x, b, gops.PSRoIPoolOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale})
			})
			rtol, atol := goldenTol(&c)
			assertClose(t, "output (clipped at H, W)", y, c.OutputGops, rtol, atol)
			assertClose(t, "grad_input", dx, c.GradInput, rtol, atol)
			per := len(y) / c.BoxesShape[0]
			for k := 0; k < c.BoxesShape[0]; k++ {
				got, want := y[k*per:(k+1)*per], c.Output[k*per:(k+1)*per]
				if slices.Contains(c.BorderBoxes, k) {
					if !slices.Equal(got, want) {
						differ++
					}
					continue
				}
				assertClose(t, "output of a box inside", got, want, rtol, atol)
			}
		})
	}
	if differ == 0 {
		t.Errorf("no border box where torchvision's forward differs: the golden grid misses the case")
	}
}
