package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
)

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
