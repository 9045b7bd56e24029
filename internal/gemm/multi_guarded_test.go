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

// TestSplitKernels: each kernel storing a column of tiles in two places
// (impl's multiSplit: kernS512ms, kernD512ms where the CPU has AVX-512)
// writes bitwise what its multi kernel writes into one C, columns below w
// in the first place and the others in the second, for every w from 1 to
// NR−1, kc 0, 1, 5, 13 and 256, 0 to 3 tiles, both stores, with and
// without a bias (NaN payloads in it, specials in A and B, NaN payloads in
// C); each place holds exactly its columns (rows ldc apart)
// against a guard page after it and then before it, so a lane of the
// other place read or written would fault.
func TestSplitKernels(t *testing.T) {
	for _, im := range impls32 {
		testSplit(t, im)
	}
	for _, im := range impls64 {
		testSplit(t, im)
	}
}

func testSplit[T Float](t *testing.T, im impl[T]) {
	if im.multiSplit == nil {
		return
	}
	r := rand.New(rand.NewPCG(9, 31))
	mr, nr := im.mr, im.nr
	for _, kc := range []int{0, 1, 5, 13, 256} {
		for tiles := 0; tiles <= 3; tiles++ {
			for w := 1; w < nr; w++ {
				for _, tail := range []bool{true, false} {
					overwrite, withBias := r.IntN(2) == 0, r.IntN(2) == 0
					ldb, ldc := nr+1, nr+2
					rows := max(1, tiles*mr)
					a := specialSlice[T](r, max(1, tiles*mr*kc), true)
					b := specialSlice[T](r, max(1, (kc-1)*ldb+nr), true)
					full := make([]T, (rows-1)*ldc+nr) // C in one place
					for i := range full {
						full[i] = nanPayload[T](r)
						if r.IntN(2) == 0 {
							full[i] = kernVal[T](r)
						}
					}
					c1, f1 := guardedSlice[T](t, (rows-1)*ldc+w, tail)
					c2, f2 := guardedSlice[T](t, (rows-1)*ldc+nr-w, tail)
					for i := range c1 { // between the rows: values no kernel may touch
						c1[i] = nanPayload[T](r)
					}
					for i := range c2 {
						c2[i] = nanPayload[T](r)
					}
					for i := 0; i < rows; i++ {
						copy(c1[i*ldc:][:w], full[i*ldc:][:w])
						copy(c2[i*ldc:][:nr-w], full[i*ldc+w:][:nr-w])
					}
					was1, was2 := append([]T(nil), c1...), append([]T(nil), c2...)
					var bias []T
					var bp *T
					if withBias {
						bias = make([]T, rows)
						for i := range bias {
							bias[i] = kernVal[T](r)
							if i%3 == 1 {
								bias[i] = nanPayload[T](r)
							}
						}
						bp = &bias[0]
					}
					im.multi(kc, &a[0], &b[0], &full[0], ldb, ldc, overwrite, tiles, bp)
					im.multiSplit(kc, &a[0], &b[0], &c1[0], ldb, ldc, overwrite, tiles, bp, &c2[0], w, splitMasks(w, nr/2))
					for i := 0; i < rows; i++ {
						for j := 0; j < nr; j++ {
							want, got := full[i*ldc+j], T(0)
							if j < w {
								got, was1[i*ldc+j] = c1[i*ldc+j], c1[i*ldc+j]
							} else {
								got, was2[i*ldc+j-w] = c2[i*ldc+j-w], c2[i*ldc+j-w]
							}
							if bitsOf(got) != bitsOf(want) {
								t.Fatalf("%s %T kc %d tiles %d w %d overwrite %v bias %v: C[%d][%d] = %v, want %v", im.name, T(0), kc, tiles, w, overwrite, withBias, i, j, got, want)
							}
						}
					}
					if i, j := bitsEq(c1, was1), bitsEq(c2, was2); i >= 0 || j >= 0 {
						t.Fatalf("%s %T kc %d tiles %d w %d: an element between the rows written (first place %d, second %d)", im.name, T(0), kc, tiles, w, i, j)
					}
					f1()
					f2()
				}
			}
		}
	}
}
