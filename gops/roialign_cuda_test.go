//go:build cuda

package gops_test

import (
	"fmt"
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestGPURoIAlign(t *testing.T) {
	for _, dt := range gpuDtypes {
		for _, o := range []gops.RoIAlignOpts{{OutputSize: [2]int{2, 3}, SamplingRatio: 2}, {OutputSize: [2]int{3, 2}, SpatialScale: 0.5, Aligned: true}} {
			t.Run(fmt.Sprintf("%v/%+v", dt, o), func(t *testing.T) {
				roiGPUCheck(t, dt, tensor.Shape{2, 3, 6, 7}, false, func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
					return gops.RoIAlign(x, b, o)
				})
			})
		}
	}
}

func TestGPUGoldenRoIAlign(t *testing.T) {
	gpuPoolGolden(t, "roialign_golden.json.gz", func(c *poolGoldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
		return gops.RoIAlign(x, b, gops.RoIAlignOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale, SamplingRatio: c.SamplingRatio, Aligned: c.Aligned})
	})
}
