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
// float32.
//
//   - forward, forward+backward: the op on a TapeMachine (the comparison
//     with torchvision).
//   - kernel/forward, kernel/transpose: cpu.PSRoIAlignForward and
//     cpu.PSRoIAlignTranspose alone on preallocated slices (transpose includes
//     zeroing its destination).
func BenchmarkPSRoIAlign(b *testing.B) {
	d := newPSRoIAlignBenchData[float32]()
	g := benchPSGeom()
	forward := func(b *testing.B) []float32 {
		y := make([]float32, len(d.grad))
		if err := cpu.PSRoIAlignForward(g, d.x, d.boxes, y); err != nil {
			b.Fatal(err)
		}
		return y
	}
	transpose := func(b *testing.B) []float32 {
		dx := make([]float32, len(d.x))
		if err := cpu.PSRoIAlignTranspose(g, d.grad, d.boxes, dx); err != nil {
			b.Fatal(err)
		}
		return dx
	}
	op := func(x, bx *gorgonia.Node) (*gorgonia.Node, error) { return gops.PSRoIAlign(x, bx, benchPSOpts) }
	b.Run("forward", func(b *testing.B) { benchPool(b, op, d, benchPSC, false, forward) })
	b.Run("forward+backward", func(b *testing.B) { benchPool(b, op, d, benchPSC, true, transpose) })

	b.Run("kernel/forward", func(b *testing.B) {
		out := make([]float32, len(d.grad))
		b.ReportAllocs()
		for b.Loop() {
			if err := cpu.PSRoIAlignForward(g, d.x, d.boxes, out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kernel/transpose", func(b *testing.B) {
		dst := make([]float32, len(d.x))
		b.ReportAllocs()
		for b.Loop() {
			clear(dst)
			if err := cpu.PSRoIAlignTranspose(g, d.grad, d.boxes, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
}
