package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
)

func benchPoolGeom() *cpu.PoolGeom {
	return &cpu.PoolGeom{N: benchN, C: benchC, H: benchH, W: benchW, PH: 7, PW: 7, Scale: 1.0 / 16}
}

// BenchmarkRoIPool times RoIPool at the RoIAlign benchmark size, float32.
//
//   - forward, forward+backward: the op on a TapeMachine (the comparison with
//     torchvision); forward is argmax + gather, forward+backward adds the
//     scatter-add of G.
//   - kernel/argmax, kernel/gather, kernel/scatter-add: the three kernels
//     alone on preallocated slices (scatter-add includes zeroing its
//     destination).
func BenchmarkRoIPool(b *testing.B) {
	d := newRoIAlignBenchData[float32]()
	g := benchPoolGeom()
	argmax := func(b *testing.B) []int {
		idx := make([]int, len(d.grad))
		if err := cpu.RoIPoolArgmax(g, d.x, d.boxes, idx); err != nil {
			b.Fatal(err)
		}
		return idx
	}
	gather := func(b *testing.B) []float32 {
		y := make([]float32, len(d.grad))
		if err := cpu.RoIGather(d.x, argmax(b), y, 49); err != nil {
			b.Fatal(err)
		}
		return y
	}
	scatter := func(b *testing.B) []float32 {
		dx := make([]float32, len(d.x))
		if err := cpu.RoIScatterAdd(g, d.grad, argmax(b), dx); err != nil {
			b.Fatal(err)
		}
		return dx
	}
	op := func(x, bx *gorgonia.Node) (*gorgonia.Node, error) { return gops.RoIPool(x, bx, benchPoolOpts) }
	b.Run("forward", func(b *testing.B) { benchPool(b, op, d, benchC, false, gather) })
	b.Run("forward+backward", func(b *testing.B) { benchPool(b, op, d, benchC, true, scatter) })

	b.Run("kernel/argmax", func(b *testing.B) {
		out := make([]int, len(d.grad))
		b.ReportAllocs()
		for b.Loop() {
			if err := cpu.RoIPoolArgmax(g, d.x, d.boxes, out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kernel/gather", func(b *testing.B) {
		idx := argmax(b)
		out := make([]float32, len(idx))
		b.ReportAllocs()
		for b.Loop() {
			if err := cpu.RoIGather(d.x, idx, out, 49); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kernel/scatter-add", func(b *testing.B) {
		idx := argmax(b)
		dst := make([]float32, len(d.x))
		b.ReportAllocs()
		for b.Loop() {
			clear(dst)
			if err := cpu.RoIScatterAdd(g, d.grad, idx, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
}
