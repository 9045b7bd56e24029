package cpu

import (
	"math"
	"runtime"
	"slices"
	"testing"
)

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
