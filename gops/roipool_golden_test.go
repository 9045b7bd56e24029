package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
)

func TestRoIPoolGolden(t *testing.T) {
	checkPoolGolden(t, "roipool_golden.json.gz", func(c *poolGoldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
		return gops.RoIPool(x, b, gops.RoIPoolOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale})
	}, nil)
}
