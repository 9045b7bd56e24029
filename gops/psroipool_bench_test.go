package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
)

// BenchmarkPSRoIPool times PSRoIPool on PSRoIAlign's data, [2, 490, 50, 68]
// with 256 boxes, output 7x7, float32 (benchPS).
func BenchmarkPSRoIPool(b *testing.B) {
	g := benchPSGeom()
	g.SamplingRatio = 0
	opts := gops.PSRoIPoolOpts{OutputSize: [2]int{7, 7}, SpatialScale: 1.0 / 16}
	benchPS(b, g, func(x, bx *gorgonia.Node) (*gorgonia.Node, error) { return gops.PSRoIPool(x, bx, opts) },
		cpu.PSRoIPoolForward[float32], cpu.PSRoIPoolTranspose[float32])
}
