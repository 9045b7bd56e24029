package gops_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The Mask R-CNN box-head size of scripts/bench_torchvision.py: a [2, 256,
// 50, 68] stride-16 feature map of an 800x1088 image, 512 random valid boxes
// with batch indices 0, 1, 0, 1, ..., a 7x7 output with 2x2 samples per bin.
// scripts/bench.sh compares these benchmarks with torchvision's.
const (
	benchN, benchC, benchH, benchW = 2, 256, 50, 68
	benchK                         = 512
	benchImgH, benchImgW           = 800, 1088
	benchSeed                      = 0
)

var benchOpts = gops.RoIAlignOpts{
	OutputSize:    [2]int{7, 7},
	SpatialScale:  1.0 / 16,
	SamplingRatio: 2,
	Aligned:       true,
}

// roiAlignBenchData is the benchmark's input, boxes and upstream gradient G.
type roiAlignBenchData[T cpu.Float] struct {
	x, boxes, grad []T
}

// newRoIAlignBenchData draws the data from a fixed seed: x and G standard
// normal; box corners uniform over the image, sorted so that x1 <= x2 and
// y1 <= y2 (as random_boxes in the python script; the same distribution,
// not the same numbers).
func newRoIAlignBenchData[T cpu.Float]() roiAlignBenchData[T] {
	return newRoIBenchData[T](benchC, benchK, benchK*benchC*benchOpts.OutputSize[0]*benchOpts.OutputSize[1])
}

// newRoIBenchData draws x [benchN, c, benchH, benchW], k boxes and a G of
// gradLen elements as newRoIAlignBenchData describes.
func newRoIBenchData[T cpu.Float](c, k, gradLen int) roiAlignBenchData[T] {
	r := rand.New(rand.NewPCG(benchSeed, benchSeed))
	randn := func(n int) []T {
		s := make([]T, n)
		for i := range s {
			s[i] = T(float32(r.NormFloat64()))
		}
		return s
	}
	var d roiAlignBenchData[T]
	d.x = randn(benchN * c * benchH * benchW)
	d.boxes = make([]T, 0, 5*k)
	for i := 0; i < k; i++ {
		x1, x2 := float32(r.Float64()*benchImgW), float32(r.Float64()*benchImgW)
		y1, y2 := float32(r.Float64()*benchImgH), float32(r.Float64()*benchImgH)
		d.boxes = append(d.boxes, T(i%benchN), T(min(x1, x2)), T(min(y1, y2)), T(max(x1, x2)), T(max(y1, y2)))
	}
	d.grad = randn(gradLen)
	return d
}

func benchGeom() *cpu.RoIAlignGeom {
	return &cpu.RoIAlignGeom{
		N: benchN, C: benchC, H: benchH, W: benchW,
		PH: benchOpts.OutputSize[0], PW: benchOpts.OutputSize[1],
		Scale: benchOpts.SpatialScale, SamplingRatio: benchOpts.SamplingRatio, Aligned: benchOpts.Aligned,
	}
}

func benchDtype[T cpu.Float]() tensor.Dtype {
	var z T
	if _, ok := any(z).(float32); ok {
		return tensor.Float32
	}
	return tensor.Float64
}

// benchRoIAlignGraph times RoIAlign (and, with backward, its input
// gradient) on a TapeMachine with benchPool, checking the result once
// against the CPU kernels (dx = Fᵀ(1·G) bitwise).
func benchRoIAlignGraph[T cpu.Float](b *testing.B, backward bool) {
	d := newRoIAlignBenchData[T]()
	want := func(b *testing.B) []T {
		g := benchGeom()
		if backward {
			dx := make([]T, benchN*benchC*benchH*benchW)
			if err := cpu.RoIAlignTranspose(g, d.grad, d.boxes, dx); err != nil {
				b.Fatal(err)
			}
			return dx
		}
		y := make([]T, len(d.grad))
		if err := cpu.RoIAlignForward(g, d.x, d.boxes, y); err != nil {
			b.Fatal(err)
		}
		return y
	}
	op := func(x, bx *gorgonia.Node) (*gorgonia.Node, error) { return gops.RoIAlign(x, bx, benchOpts) }
	benchPool(b, op, d, benchC, backward, want)
}

// BenchmarkRoIAlign times RoIAlign at the Mask R-CNN box-head size.
//
//   - forward, forward+backward: the op on a TapeMachine, float32 (the
//     comparison with torchvision); float64/... the same in float64 (named
//     so that -bench 'RoIAlign/^forward' selects float32 only).
//   - kernel/forward, kernel/transpose: cpu.RoIAlignForward and
//     cpu.RoIAlignTranspose alone on preallocated slices (transpose includes
//     zeroing its destination), float32. forward+backward minus the two is
//     the cost of the graph (allocation).
func BenchmarkRoIAlign(b *testing.B) {
	b.Run("forward", func(b *testing.B) { benchRoIAlignGraph[float32](b, false) })
	b.Run("forward+backward", func(b *testing.B) { benchRoIAlignGraph[float32](b, true) })
	b.Run("float64/forward", func(b *testing.B) { benchRoIAlignGraph[float64](b, false) })
	b.Run("float64/forward+backward", func(b *testing.B) { benchRoIAlignGraph[float64](b, true) })

	b.Run("kernel/forward", func(b *testing.B) {
		d := newRoIAlignBenchData[float32]()
		g := benchGeom()
		out := make([]float32, len(d.grad))
		b.ReportAllocs()
		for b.Loop() {
			if err := cpu.RoIAlignForward(g, d.x, d.boxes, out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kernel/transpose", func(b *testing.B) {
		d := newRoIAlignBenchData[float32]()
		g := benchGeom()
		dst := make([]float32, len(d.x))
		b.ReportAllocs()
		for b.Loop() {
			clear(dst)
			if err := cpu.RoIAlignTranspose(g, d.grad, d.boxes, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// timeVM is a benchmark's timed loop: the graph built once, rerun with
// m.Reset(); m.RunAll().
func timeVM(b *testing.B, m gorgonia.VM) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m.Reset()
		if err := m.RunAll(); err != nil {
			b.Fatal(err)
		}
	}
}
