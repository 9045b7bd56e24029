//go:build linux && amd64 && !purego

package gemm

import (
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/internal/vmath"
)

// TestMultiKernels: each assembly kernel over a column of tiles (impl's
// multi: kernS256m, and kernS512m … where the CPU has AVX-512) writes
// bitwise what its single kernel writes tile by tile, then with a bias
// what a vmath.Axpb pass of 1·c + bias[i] over each row makes of it, for
// kc 0..13 and 256, 0 to 5 tiles, both stores, C's rows ldc apart with
// other values between them, A, B, C and the bias each against a guard
// page, NaN payloads in C and in the bias.
func TestMultiKernels(t *testing.T) {
	for _, im := range impls32 {
		testMulti(t, im)
	}
	for _, im := range impls64 {
		testMulti(t, im)
	}
}

func testMulti[T Float](t *testing.T, im impl[T]) {
	if im.multi == nil {
		return
	}
	r := rand.New(rand.NewPCG(5, 77))
	mr, nr := im.mr, im.nr
	kcs := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 256}
	for _, kc := range kcs {
		for tiles := 0; tiles <= 5; tiles++ {
			for _, overwrite := range []bool{false, true} {
				for _, tail := range []bool{true, false} {
					for _, withBias := range []bool{false, true} {
						ldb, ldc := nr+3, nr+5
						a, fa := guardedSlice[T](t, max(1, tiles*mr*kc), tail)
						b, fb := guardedSlice[T](t, max(1, (kc-1)*ldb+nr), tail)
						rows := max(1, tiles*mr)
						c, fc := guardedSlice[T](t, (rows-1)*ldc+nr, tail)
						for i := range a {
							a[i] = kernVal[T](r)
						}
						for i := range b {
							b[i] = kernVal[T](r)
						}
						for i := range c {
							c[i] = nanPayload[T](r)
							if r.IntN(2) == 0 {
								c[i] = kernVal[T](r)
							}
						}
						want := append([]T(nil), c...)
						for q := 0; q < tiles; q++ {
							im.kern(kc, &a[min(len(a)-1, q*mr*kc)], &b[0], &want[q*mr*ldc], ldb, ldc, overwrite)
						}
						var bias []T
						var bp *T
						fbias := func() {}
						if withBias {
							bias, fbias = guardedSlice[T](t, rows, tail)
							for i := range bias {
								bias[i] = kernVal[T](r)
								if i%4 == 1 {
									bias[i] = nanPayload[T](r)
								}
							}
							bp = &bias[0]
							for i := 0; i < tiles*mr; i++ { // the bias pass the kernel replaces
								row := want[i*ldc:][:nr]
								vmath.Axpb(row, row, 1, bias[i])
							}
						}
						im.multi(kc, &a[0], &b[0], &c[0], ldb, ldc, overwrite, tiles, bp)
						if i := bitsEq(c, want); i >= 0 {
							t.Fatalf("%s %T kc %d tiles %d overwrite %v bias %v: C[%d] = %v, want %v", im.name, T(0), kc, tiles, overwrite, withBias, i, c[i], want[i])
						}
						fa()
						fb()
						fc()
						fbias()
					}
				}
			}
		}
	}
}
