package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// roiCase is one case of the RoI kernels' tests: its name, the geometry
// (PoolGeom or RoIAlignGeom) and the number of boxes.
type roiCase[G any] struct {
	name string
	g    G
	k    int
}

// pairAcrossProcs runs a kernel (into y, ny elements first set to 42, so that
// every output must be written) and its transpose (into dx, nx zeros) at
// each GOMAXPROCS of procs, and fails unless every run gives the bits of
// the first, whose results it returns.
func pairAcrossProcs[T Float](t *testing.T, procs []int, ny, nx int, fwd func(y []T) error, adj func(dx []T) error) (y, dx []T) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for i, p := range procs {
		runtime.GOMAXPROCS(p)
		yi, dxi := make([]T, ny), make([]T, nx)
		for j := range yi {
			yi[j] = 42
		}
		if err := fwd(yi); err != nil {
			t.Fatal(err)
		}
		if err := adj(dxi); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			y, dx = yi, dxi
			continue
		}
		if !slices.Equal(bitsOf(yi), bitsOf(y)) || !slices.Equal(bitsOf(dxi), bitsOf(dx)) {
			t.Fatalf("GOMAXPROCS=%d: results differ from GOMAXPROCS=%d", p, procs[0])
		}
	}
	return y, dx
}

// bitsOf is the IEEE bits of each element, so that NaNs compare too.
func bitsOf[T Float](s []T) []uint64 {
	out := make([]uint64, len(s))
	for i, v := range s {
		out[i] = math.Float64bits(float64(v))
	}
	return out
}

// expectClose fails unless |got - want| <= tol·(1 + |want|) elementwise.
func expectClose[T Float](t *testing.T, what string, got []T, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i, v := range got {
		if d := math.Abs(float64(v) - want[i]); !(d <= tol*(1+math.Abs(want[i]))) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, v, want[i])
		}
	}
}

// randNormal is n draws of N(0, 1) as T.
func randNormal[T Float](r *rand.Rand, n int) []T {
	x := make([]T, n)
	for i := range x {
		x[i] = T(r.NormFloat64())
	}
	return x
}

// randBoxes is k boxes [batch index, x1, y1, x2, y2] in input coordinates
// (1/scale pixels of an H×W feature map), each corner uniform in
// [−0.2, 1.2] of the map: inside, across the border and outside.
func randBoxes[T Float](r *rand.Rand, k, n, h, w int, scale float64) []T {
	var boxes []T
	s := 1 / scale
	for i := 0; i < k; i++ {
		x1, x2 := (r.Float64()*1.4-0.2)*float64(w)*s, (r.Float64()*1.4-0.2)*float64(w)*s
		y1, y2 := (r.Float64()*1.4-0.2)*float64(h)*s, (r.Float64()*1.4-0.2)*float64(h)*s
		boxes = append(boxes, T(i%n), T(min(x1, x2)), T(min(y1, y2)), T(max(x1, x2)), T(max(y1, y2)))
	}
	return boxes
}

// benchKernel is a named kernel call of a benchmark.
type benchKernel struct {
	name string
	run  func()
}

// benchKernels runs each kernel as a sub-benchmark and reports the
// process's CPU time per call (cpu-ns/op, where measured): on a shared
// machine the wall time varies with the load, the CPU time less.
func benchKernels(b *testing.B, kernels []benchKernel) {
	for _, k := range kernels {
		b.Run(k.name, func(b *testing.B) {
			t0, ok := processCPU()
			for b.Loop() {
				k.run()
			}
			if t1, ok1 := processCPU(); ok && ok1 {
				b.ReportMetric(float64(t1-t0)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// dot is Σ a[i]·b[i], summed in index order (the adjoint checks'
// <T(G), X> and <G, S(X)>).
func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
