//go:build cuda

package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestGPUPSRoIAlign(t *testing.T) {
	for _, dt := range gpuDtypes {
		t.Run(dt.String(), func(t *testing.T) {
			roiGPUCheck(t, dt, tensor.Shape{2, 8, 6, 7}, false, func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
				return gops.PSRoIAlign(x, b, gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2})
			})
		})
	}
}

func TestGPUGoldenPSRoIAlign(t *testing.T) {
	gpuPoolGolden(t, "psroialign_golden.json.gz", func(c *poolGoldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
		return gops.PSRoIAlign(x, b, gops.PSRoIAlignOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale, SamplingRatio: c.SamplingRatio})
	})
}
