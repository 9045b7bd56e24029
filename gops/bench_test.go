package gops_test

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The benchmarks of the RoI pooling family (RoIAlign, RoIPool, PSRoIAlign,
// PSRoIPool, the box gradients, MultiScaleRoIAlign) and the harness that the
// package's benchmarks share (timeVM, the data, poolBenchGraph). The sizes
// are those of scripts/bench_torchvision.py; scripts/bench.sh compares the
// two.

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
func benchRoIAlignGraph[T cpu.Float](b *testing.B, backward, reuse bool) {
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
	benchPool(b, op, d, benchC, backward, reuse, want)
}

// BenchmarkRoIAlign times RoIAlign at the Mask R-CNN box-head size.
//
//   - forward, forward+backward: the op on a TapeMachine, float32 (the
//     comparison with torchvision); reuse/... the same with
//     ad.ReuseResults (as torch's caching allocator); float64/... the same
//     in float64 (named so that -bench 'RoIAlign/^forward' selects float32
//     only).
//   - kernel/forward, kernel/transpose: cpu.RoIAlignForward and
//     cpu.RoIAlignTranspose alone on preallocated slices (transpose includes
//     zeroing its destination), float32. forward+backward minus the two is
//     the cost of the graph (allocation).
func BenchmarkRoIAlign(b *testing.B) {
	for _, reuse := range []bool{false, true} {
		b.Run(reusePrefix(reuse)+"forward", func(b *testing.B) { benchRoIAlignGraph[float32](b, false, reuse) })
		b.Run(reusePrefix(reuse)+"forward+backward", func(b *testing.B) { benchRoIAlignGraph[float32](b, true, reuse) })
	}
	b.Run("float64/forward", func(b *testing.B) { benchRoIAlignGraph[float64](b, false, false) })
	b.Run("float64/forward+backward", func(b *testing.B) { benchRoIAlignGraph[float64](b, true, false) })

	benchKernels(b, benchGeom(), newRoIAlignBenchData[float32](), cpu.RoIAlignForward[float32], cpu.RoIAlignTranspose[float32])
}

// benchKernels are an aligned pooling's kernel/forward and
// kernel/transpose benchmarks: its CPU kernels fwd and adj alone with
// geometry g on d, into preallocated slices (transpose includes zeroing
// its destination).
func benchKernels[G any](b *testing.B, g *G, d roiAlignBenchData[float32], fwd, adj func(*G, []float32, []float32, []float32) error) {
	b.Run("kernel/forward", func(b *testing.B) {
		out := make([]float32, len(d.grad))
		b.ReportAllocs()
		for b.Loop() {
			if err := fwd(g, d.x, d.boxes, out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kernel/transpose", func(b *testing.B) {
		dst := make([]float32, len(d.x))
		b.ReportAllocs()
		for b.Loop() {
			clear(dst)
			if err := adj(g, d.grad, d.boxes, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// reusePrefix names a benchmark with ad.ReuseResults on ("reuse/") or off
// (""), as nn's benchmarks and scripts/bench_torchvision.py's aliases.
func reusePrefix(reuse bool) string {
	if reuse {
		return "reuse/"
	}
	return ""
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

// RoIPool and PSRoIAlign at the sizes of scripts/bench_torchvision.py:
// RoIPool on RoIAlign's [2, 256, 50, 68] feature map with 512 boxes (the
// data of BenchmarkRoIAlign); PSRoIAlign on [2, 490, 50, 68] (10
// output channels per 7x7 bin) with 256 boxes and 2x2 samples per bin. Both
// 7x7, spatial scale 1/16, float32.
const (
	benchPSC, benchPSK = 490, 256
)

var (
	benchPoolOpts = gops.RoIPoolOpts{OutputSize: [2]int{7, 7}, SpatialScale: 1.0 / 16}
	benchPSOpts   = gops.PSRoIAlignOpts{OutputSize: [2]int{7, 7}, SpatialScale: 1.0 / 16, SamplingRatio: 2}
)

// poolBenchGraph builds out = op(x, boxes) and, with backward, dx =
// ad.VJP(out, G, x), on a TapeMachine: the work of torchvision's forward plus
// out.backward(G), with ad.ReuseResults(g, reuse). It returns the machine
// and where the result of the last node of interest (out or dx) is read
// to.
func poolBenchGraph[T cpu.Float](tb testing.TB, op func(x, b *gorgonia.Node) (*gorgonia.Node, error), d roiAlignBenchData[T], c int, backward, reuse bool) (gorgonia.VM, *gorgonia.Value) {
	tb.Helper()
	g, result := poolBenchNodes(tb, op, d, c, backward)
	ad.ReuseResults(g, reuse)
	v := new(gorgonia.Value)
	gorgonia.Read(result, v)
	return gorgonia.NewTapeMachine(g), v
}

// poolBenchNodes is poolBenchGraph's graph and its result node (out or dx).
func poolBenchNodes[T cpu.Float](tb testing.TB, op func(x, b *gorgonia.Node) (*gorgonia.Node, error), d roiAlignBenchData[T], c int, backward bool) (*gorgonia.ExprGraph, *gorgonia.Node) {
	tb.Helper()
	dt := benchDtype[T]()
	g := gorgonia.NewGraph()
	xs := []int{benchN, c, benchH, benchW}
	x := gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(xs...), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(xs...), tensor.WithBacking(d.x))))
	k := len(d.boxes) / 5
	boxes := gorgonia.NewMatrix(g, dt, gorgonia.WithShape(k, 5), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(k, 5), tensor.WithBacking(d.boxes))))
	out, err := op(x, boxes)
	if err != nil {
		tb.Fatal(err)
	}
	result := out
	if backward {
		ys := out.Shape().Clone()
		gr := gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(ys...), gorgonia.WithName("G"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(ys...), tensor.WithBacking(d.grad))))
		dx, err := ad.VJP(out, gr, x) // out.backward(G)
		if err != nil {
			tb.Fatal(err)
		}
		result = dx[0]
	}
	return g, result
}

// benchPool times the graph after checking once, outside the timed loop,
// that it computes exactly what the kernels compute (want computes that).
// The reference is dropped before the timing, so that the peak RSS that
// scripts/bench.sh measures is the graph's, not the check's.
func benchPool[T cpu.Float](b *testing.B, op func(x, b *gorgonia.Node) (*gorgonia.Node, error), d roiAlignBenchData[T], c int, backward, reuse bool, want func(b *testing.B) []T) {
	m, v := poolBenchGraph(b, op, d, c, backward, reuse)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		b.Fatal(err)
	}
	got, ok := (*v).Data().([]T)
	if !ok || !slices.Equal(got, want(b)) {
		b.Fatalf("graph result differs from the kernels' (backward=%t)", backward)
	}
	runtime.GC() // the reference is garbage now
	timeVM(b, m)
}

// benchPS times a position-sensitive op on the PSRoIAlign benchmark data
// (newPSRoIAlignBenchData) with geometry g:
//
//   - forward, forward+backward: the op on a TapeMachine (the comparison
//     with torchvision), checked once against the kernels' results;
//   - kernel/forward, kernel/transpose: the CPU kernels alone on
//     preallocated slices (transpose includes zeroing its destination).
func benchPS(b *testing.B, g *cpu.PoolGeom, op func(x, b *gorgonia.Node) (*gorgonia.Node, error), fwd, adj func(*cpu.PoolGeom, []float32, []float32, []float32) error) {
	d := newPSRoIAlignBenchData[float32]()
	forward := func(b *testing.B) []float32 {
		y := make([]float32, len(d.grad))
		if err := fwd(g, d.x, d.boxes, y); err != nil {
			b.Fatal(err)
		}
		return y
	}
	transpose := func(b *testing.B) []float32 {
		dx := make([]float32, len(d.x))
		if err := adj(g, d.grad, d.boxes, dx); err != nil {
			b.Fatal(err)
		}
		return dx
	}
	for _, reuse := range []bool{false, true} {
		b.Run(reusePrefix(reuse)+"forward", func(b *testing.B) { benchPool(b, op, d, benchPSC, false, reuse, forward) })
		b.Run(reusePrefix(reuse)+"forward+backward", func(b *testing.B) { benchPool(b, op, d, benchPSC, true, reuse, transpose) })
	}
	benchKernels(b, g, d, fwd, adj)
}

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
	for _, reuse := range []bool{false, true} {
		b.Run(reusePrefix(reuse)+"forward", func(b *testing.B) { benchPool(b, op, d, benchC, false, reuse, gather) })
		b.Run(reusePrefix(reuse)+"forward+backward", func(b *testing.B) { benchPool(b, op, d, benchC, true, reuse, scatter) })
	}

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

// BenchmarkPSRoIPool times PSRoIPool on PSRoIAlign's data, [2, 490, 50, 68]
// with 256 boxes, output 7x7, float32 (benchPS).
func BenchmarkPSRoIPool(b *testing.B) {
	g := benchPSGeom()
	g.SamplingRatio = 0
	opts := gops.PSRoIPoolOpts{OutputSize: [2]int{7, 7}, SpatialScale: 1.0 / 16}
	benchPS(b, g, func(x, bx *gorgonia.Node) (*gorgonia.Node, error) { return gops.PSRoIPool(x, bx, opts) },
		cpu.PSRoIPoolForward[float32], cpu.PSRoIPoolTranspose[float32])
}

// benchBoxGrad times op's gradients w.r.t. the input and the boxes at the
// RoIAlign benchmark size (c channels, k boxes), float32, on a
// TapeMachine: with second false, the forward and <G, out>'s gradients
// w.r.t. x and boxes (out.backward(G) with boxes.requires_grad in torch);
// with second, also the gradient w.r.t. x and boxes of
// <∂<G, out>/∂boxes, V>, a Hessian-vector product through the boxes.
func benchBoxGrad(b *testing.B, op func(x, bx *gorgonia.Node) (*gorgonia.Node, error), c, k, outLen int, second bool) {
	d := newRoIBenchData[float32](c, k, outLen)
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(benchN, c, benchH, benchW), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(benchN, c, benchH, benchW), tensor.WithBacking(d.x))))
	bx := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(k, 5), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(k, 5), tensor.WithBacking(d.boxes))))
	out, err := op(x, bx)
	if err != nil {
		b.Fatal(err)
	}
	gr := gorgonia.NewTensor(g, tensor.Float32, out.Dims(), gorgonia.WithShape(out.Shape()...), gorgonia.WithName("G"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(out.Shape()...), tensor.WithBacking(d.grad))))
	grads, err := ad.VJP(out, gr, x, bx)
	if err != nil {
		b.Fatal(err)
	}
	if second {
		v := make([]float32, 5*k)
		for i := range v {
			v[i] = float32(i%7) - 3
		}
		vn := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(k, 5), gorgonia.WithName("V"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(k, 5), tensor.WithBacking(v))))
		if _, err := ad.VJP(grads[1], vn, x, bx); err != nil {
			b.Fatal(err)
		}
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	timeVM(b, m)
}

// BenchmarkBoxGradients times the gradients w.r.t. boxes (issue 14's
// section 1), float32, at the sizes of the ops' own benchmarks:
//
//   - RoIAlign/forward+backward: RoIAlign with the gradients w.r.t. input
//     and boxes (F_10, F_01 and the transpose); scripts/bench_torchvision.py
//     times the same on torch autograd over a gather-based roi_align (the
//     only way to get these gradients with torchvision's sampling in torch);
//   - RoIAlign/second-order: also the gradient of <∂L/∂boxes, V> w.r.t.
//     input and boxes (F_11, F_20 = 0, transposes);
//   - PSRoIAlign/forward+backward: the same for PSRoIAlign at its benchmark
//     size (490 channels, 256 boxes).
func BenchmarkBoxGradients(b *testing.B) {
	outLen := benchK * benchC * 49
	roi := func(x, bx *gorgonia.Node) (*gorgonia.Node, error) { return gops.RoIAlign(x, bx, benchOpts) }
	b.Run("RoIAlign/forward+backward", func(b *testing.B) { benchBoxGrad(b, roi, benchC, benchK, outLen, false) })
	b.Run("RoIAlign/second-order", func(b *testing.B) { benchBoxGrad(b, roi, benchC, benchK, outLen, true) })
	ps := func(x, bx *gorgonia.Node) (*gorgonia.Node, error) {
		return gops.PSRoIAlign(x, bx, gops.PSRoIAlignOpts{OutputSize: [2]int{7, 7}, SpatialScale: 1.0 / 16, SamplingRatio: 2})
	}
	b.Run("PSRoIAlign/forward+backward", func(b *testing.B) { benchBoxGrad(b, ps, 490, 256, 256*10*49, false) })
}

// Mask R-CNN's box-head pooler at the size of scripts/bench_torchvision.py
// (MultiScaleRoIAlign/...): the four FPN levels of one 800x1088 image,
// [1, 256, 200, 272], [1, 256, 100, 136], [1, 256, 50, 68] and
// [1, 256, 25, 34] (strides 4 to 32, scales inferred), 512 boxes, 7x7
// output, 2x2 samples per bin, float32.
var benchPyramidShapes = [][]int{{1, 256, 200, 272}, {1, 256, 100, 136}, {1, 256, 50, 68}, {1, 256, 25, 34}}

const benchPyramidK = 512

// benchPyramidBoxes are the benchmark's boxes, the same numbers as
// bench_torchvision.py's pyramid_boxes: box i has size s = 32·28^u (u the
// fractional part of i·0.618...) and aspect ratio 2^(2v−1), centred at a
// point of a low-discrepancy sequence, clipped to the image. About 37% of
// them pool from map 0 (s < 112), 21% from each of the others.
func benchPyramidBoxes() []float32 {
	frac := func(x float64) float64 { return x - math.Floor(x) }
	d := make([]float32, 0, 4*benchPyramidK)
	for i := 0; i < benchPyramidK; i++ {
		fi := float64(i)
		s := 32 * math.Pow(28, frac(fi*0.6180339887498949))
		a := math.Sqrt(math.Pow(2, 2*frac(fi*1.4142135623730951)-1))
		w, h := s*a, s/a
		cx, cy := frac(fi*0.7548776662466927)*benchImgW, frac(fi*0.5698402909980532)*benchImgH
		d = append(d, float32(max(cx-w/2, 0)), float32(max(cy-h/2, 0)), float32(min(cx+w/2, benchImgW)), float32(min(cy+h/2, benchImgH)))
	}
	return d
}

// benchMultiScale times MultiScaleRoIAlign (with backward, the gradients
// w.r.t. all four maps of <G, out>, as out.backward(G)) on a TapeMachine.
func benchMultiScale(b *testing.B, backward bool) {
	r := rand.New(rand.NewPCG(benchSeed, benchSeed))
	randn := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		return s
	}
	g := gorgonia.NewGraph()
	var feats gorgonia.Nodes
	for l, s := range benchPyramidShapes {
		feats = append(feats, gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(s...), gorgonia.WithName("p"+string(rune('2'+l))),
			gorgonia.WithValue(tensor.New(tensor.WithShape(s...), tensor.WithBacking(randn(tensor.Shape(s).TotalSize()))))))
	}
	boxes := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(benchPyramidK, 4), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(benchPyramidK, 4), tensor.WithBacking(benchPyramidBoxes()))))
	out, err := gops.MultiScaleRoIAlign(feats, gorgonia.Nodes{boxes}, [][2]int{{benchImgH, benchImgW}},
		gops.MultiScaleRoIAlignOpts{OutputSize: [2]int{7, 7}, SamplingRatio: 2})
	if err != nil {
		b.Fatal(err)
	}
	if backward {
		ys := out.Shape().Clone()
		gr := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(ys...), gorgonia.WithName("G"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(ys...), tensor.WithBacking(randn(ys.TotalSize())))))
		if _, err := ad.VJP(out, gr, feats...); err != nil { // out.backward(G)
			b.Fatal(err)
		}
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	timeVM(b, m)
}

// BenchmarkMultiScaleRoIAlign times Mask R-CNN's box-head pooler:
// forward, and forward+backward (gradients w.r.t. the four maps).
func BenchmarkMultiScaleRoIAlign(b *testing.B) {
	b.Run("forward", func(b *testing.B) { benchMultiScale(b, false) })
	b.Run("forward+backward", func(b *testing.B) { benchMultiScale(b, true) })
}
