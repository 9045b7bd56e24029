package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
)

func benchPSGeom() *cpu.PoolGeom {
	return &cpu.PoolGeom{N: benchN, C: benchPSC, H: benchH, W: benchW, PH: 7, PW: 7, Scale: 1.0 / 16, SamplingRatio: 2}
}

// newPSRoIAlignBenchData draws PSRoIAlign's data as newRoIAlignBenchData
// does (x and G standard normal, valid boxes uniform over the image), for
// [2, 490, 50, 68] and 256 boxes.
func newPSRoIAlignBenchData[T cpu.Float]() roiAlignBenchData[T] {
	return newRoIBenchData[T](benchPSC, benchPSK, benchPSK*benchPSC)
}

// BenchmarkPSRoIAlign times PSRoIAlign on [2, 490, 50, 68] with 256 boxes,
// float32 (benchPS).
func BenchmarkPSRoIAlign(b *testing.B) {
	benchPS(b, benchPSGeom(), func(x, bx *gorgonia.Node) (*gorgonia.Node, error) { return gops.PSRoIAlign(x, bx, benchPSOpts) },
		cpu.PSRoIAlignForward[float32], cpu.PSRoIAlignTranspose[float32])
}
