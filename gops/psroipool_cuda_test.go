//go:build cuda

package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestGPUPSRoIPool(t *testing.T) {
	for _, dt := range gpuDtypes {
		t.Run(dt.String(), func(t *testing.T) {
			roiGPUCheck(t, dt, tensor.Shape{2, 8, 6, 7}, false, func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
				return gops.PSRoIPool(x, b, gops.PSRoIPoolOpts{OutputSize: [2]int{2, 2}})
			})
		})
	}
}

func TestGPUGoldenPSRoIPool(t *testing.T) {
	gpuPoolGolden(t, "psroipool_golden.json.gz", func(c *poolGoldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
		return gops.PSRoIPool(x, b, gops.PSRoIPoolOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale})
	})
}
