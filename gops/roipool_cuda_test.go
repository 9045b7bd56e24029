//go:build cuda

package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestGPURoIPool(t *testing.T) {
	for _, dt := range gpuDtypes {
		t.Run(dt.String(), func(t *testing.T) {
			roiGPUCheck(t, dt, tensor.Shape{2, 3, 6, 7}, false, func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
				return gops.RoIPool(x, b, gops.RoIPoolOpts{OutputSize: [2]int{2, 2}})
			})
		})
	}
}

func TestGPUGoldenRoIPool(t *testing.T) {
	gpuPoolGolden(t, "roipool_golden.json.gz", func(c *poolGoldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
		return gops.RoIPool(x, b, gops.RoIPoolOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale})
	})
}
