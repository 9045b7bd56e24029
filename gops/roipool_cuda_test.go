//go:build cuda

package gops_test

import (
	"math/rand"
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestGPURoIPool(t *testing.T) {
	for _, dt := range gpuDtypes {
		t.Run(dt.String(), func(t *testing.T) {
			gpuCheck(t, dt, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes) {
				x := input(g, "x", randValue(rng, dt, tensor.Shape{2, 3, 6, 7}))
				b := input(g, "boxes", boxesValue(dt))
				y, err := gops.RoIPool(x, b, gops.RoIPoolOpts{OutputSize: [2]int{2, 2}})
				if err != nil {
					t.Fatal(err)
				}
				return y, gorgonia.Nodes{x}
			})
		})
	}
}

func TestGPUGoldenRoIPool(t *testing.T) {
	gpuPoolGolden(t, "roipool_golden.json.gz", func(c *poolGoldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
		return gops.RoIPool(x, b, gops.RoIPoolOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale})
	})
}
