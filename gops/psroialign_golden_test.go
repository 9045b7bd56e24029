package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
)

func TestPSRoIAlignGolden(t *testing.T) {
	ran := checkPoolGolden(t, "psroialign_golden.json.gz", func(c *poolGoldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
		return gops.PSRoIAlign(x, b, gops.PSRoIAlignOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale, SamplingRatio: c.SamplingRatio})
	}, func(t *testing.T, c *poolGoldenCase, y, dx []float64, rtol, atol float64) {
		// torchvision's NaN (a bin without samples) is 0 here, as the
		// golden file already holds it; check that it is exactly 0.
		for _, i := range c.NaNOutput {
			if y[i] != 0 {
				t.Fatalf("output[%d] = %v where torchvision has NaN, want 0", i, y[i])
			}
		}
		assertPoolGolden(t, c, y, dx, rtol, atol)
	})
	nans := 0
	for _, c := range ran {
		nans += len(c.NaNOutput)
	}
	if nans == 0 {
		t.Errorf("no golden case has a bin without samples")
	}
}
