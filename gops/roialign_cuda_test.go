//go:build cuda

package gops_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestGPURoIAlign(t *testing.T) {
	for _, dt := range gpuDtypes {
		for _, o := range []gops.RoIAlignOpts{{OutputSize: [2]int{2, 3}, SamplingRatio: 2}, {OutputSize: [2]int{3, 2}, SpatialScale: 0.5, Aligned: true}} {
			t.Run(fmt.Sprintf("%v/%+v", dt, o), func(t *testing.T) {
				gpuCheck(t, dt, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes) {
					x := input(g, "x", randValue(rng, dt, tensor.Shape{2, 3, 6, 7}))
					b := input(g, "boxes", boxesValue(dt))
					y, err := gops.RoIAlign(x, b, o)
					if err != nil {
						t.Fatal(err)
					}
					return y, gorgonia.Nodes{x}
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
