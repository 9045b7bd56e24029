package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
)

func TestRoIPoolGolden(t *testing.T) {
	for _, c := range loadGoldenFile[poolGoldenCase](t, "roipool_golden.json.gz") {
		if c.BoxesShape[0] == 0 {
			continue // K = 0: the conformance table's empty case
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
