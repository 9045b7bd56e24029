//go:build linux && amd64 && !purego

package gemm

// The AVX2 kernels (a fresh reviewer's tests, 2026-12-06): every AVX2
// kernel and edge and half kernel against an exactly rounded FMA chain, kc
// 0..21 (every remainder of the unroll by 4), A, B and C each against a
// guard page; NaN-dense inputs compared between the edge kernels and the
// full tile; packBPanels' row sweep with B against a guard page.

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

type rk256[T Float] struct {
	name       string
	kern       kernelFn[T]
	rows, cols int
}

func kernels256S() []rk256[float32] {
	return []rk256[float32]{
		{"kernS256", kernS256, 6, 16}, {"kernS256r2", kernS256r2, 2, 16}, {"kernS256r4", kernS256r4, 4, 16},
		{"kernS256h", kernS256h, 6, 8}, {"kernS256hr2", kernS256hr2, 2, 8}, {"kernS256hr4", kernS256hr4, 4, 8},
	}
}

func kernels256D() []rk256[float64] {
	return []rk256[float64]{
		{"kernD256", kernD256, 6, 8}, {"kernD256r2", kernD256r2, 2, 8}, {"kernD256r4", kernD256r4, 4, 8},
		{"kernD256h", kernD256h, 6, 4}, {"kernD256hr2", kernD256hr2, 2, 4}, {"kernD256hr4", kernD256hr4, 4, 4},
	}
}

// fmaExact is a·b + c rounded once to T (finite inputs, no overflow).
func fmaExact[T Float](a, b, c T) T {
	if _, ok := any(a).(float64); ok {
		return T(math.FMA(float64(a), float64(b), float64(c)))
	}
	x := new(big.Float).SetPrec(1200).SetFloat64(float64(a))
	y := new(big.Float).SetPrec(1200).SetFloat64(float64(b))
	x.Mul(x, y)
	x.Add(x, new(big.Float).SetPrec(1200).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return T(f)
}

func kernVal[T Float](r *rand.Rand) T {
	switch r.IntN(20) {
	case 0:
		return T(math.Copysign(0, -1))
	case 1:
		return 0
	case 2:
		return T(1e-40 * float64(r.IntN(3)-1))
	}
	return T(r.NormFloat64())
}

func testKernels256[T Float](t *testing.T, ks []rk256[T], nr int) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, k := range ks {
		for kc := 0; kc <= 21; kc++ {
			for _, ldbExtra := range []int{0, 3} {
				for _, overwrite := range []bool{false, true} {
					for _, tail := range []bool{true, false} {
						ldb, ldc := nr+ldbExtra, k.cols+2
						a, fa := guardedSlice[T](t, max(1, 6*kc), tail)
						b, fb := guardedSlice[T](t, max(1, (kc-1)*ldb+k.cols), tail)
						c, fc := guardedSlice[T](t, (k.rows-1)*ldc+k.cols, tail)
						for i := range a {
							a[i] = kernVal[T](r)
						}
						for i := range b {
							b[i] = kernVal[T](r)
						}
						for i := range c {
							c[i] = kernVal[T](r)
						}
						want := make([]T, len(c))
						copy(want, c)
						for i := 0; i < k.rows; i++ {
							for j := 0; j < k.cols; j++ {
								var acc T
								for p := 0; p < kc; p++ {
									acc = fmaExact(a[p*6+i], b[p*ldb+j], acc)
								}
								if overwrite {
									want[i*ldc+j] = acc + 0
								} else {
									want[i*ldc+j] = acc + want[i*ldc+j]
								}
							}
						}
						k.kern(kc, &a[0], &b[0], &c[0], ldb, ldc, overwrite)
						if i := bitsEq(c, want); i >= 0 {
							t.Fatalf("%s kc %d ldb %d overwrite %v: C[%d] = %v, want %v", k.name, kc, ldb, overwrite, i, c[i], want[i])
						}
						fa()
						fb()
						fc()
					}
				}
			}
		}
	}
}

// TestKernels256Exact: every AVX2 kernel is an exactly rounded FMA
// chain from +0, kc 0..21, nothing read or written past its operands.
func TestKernels256Exact(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	testKernels256(t, kernels256S(), 16)
	testKernels256(t, kernels256D(), 8)
}

// TestKernels256NaNDense: A, B and C mostly NaNs of distinct
// payloads: each edge and half kernel gives the full tile's bits.
func TestKernels256NaNDense(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	nanDense256(t, kernels256S(), 16)
	nanDense256(t, kernels256D(), 8)
}

func nanDense256[T Float](t *testing.T, ks []rk256[T], nr int) {
	r := rand.New(rand.NewPCG(43, 44))
	for kc := 1; kc <= 13; kc++ {
		for _, overwrite := range []bool{false, true} {
			a, b, c := make([]T, 6*kc), make([]T, kc*nr), make([]T, 6*nr)
			for _, s := range [][]T{a, b, c} {
				for i := range s {
					if r.IntN(4) == 0 {
						s[i] = T(r.NormFloat64())
					} else {
						s[i] = nanPayload[T](r)
					}
				}
			}
			full := append([]T(nil), c...)
			ks[0].kern(kc, &a[0], &b[0], &full[0], nr, nr, overwrite)
			for _, k := range ks[1:] {
				got := append([]T(nil), c...)
				k.kern(kc, &a[0], &b[0], &got[0], nr, nr, overwrite)
				for i := 0; i < 6; i++ {
					for j := 0; j < nr; j++ {
						w := full[i*nr+j]
						if i >= k.rows || j >= k.cols {
							w = c[i*nr+j]
						}
						if bitsEq([]T{got[i*nr+j]}, []T{w}) >= 0 {
							t.Fatalf("%s kc %d overwrite %v: C[%d,%d] = %v, full tile %v", k.name, kc, overwrite, i, j, got[i*nr+j], w)
						}
					}
				}
			}
		}
	}
}

// TestPackBPanelsGuarded: Gemm with B (not transposed, packed: m
// large) ending at, then starting after, a guard page; the bits of the
// same product on ordinary slices.
func TestPackBPanelsGuarded(t *testing.T) {
	packBGuarded[float32](t)
	packBGuarded[float64](t)
}

func packBGuarded[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	for _, n := range []int{16, 17, 32, 40, 48, 63, 64, 100} {
		for _, k := range []int{1, 5, 257, 300} {
			for _, pad := range []int{0, 3} {
				for _, tail := range []bool{true, false} {
					m := 50
					ldb := n + pad
					bsrc := randSlice[T](r, (k-1)*ldb+n)
					a := randSlice[T](r, m*k)
					b, free := guardedSlice[T](t, len(bsrc), tail)
					copy(b, bsrc)
					c1, c2 := make([]T, m*n), make([]T, m*n)
					if err := Gemm(false, false, m, n, k, 1, a, k, b, ldb, 0, c1, n); err != nil {
						t.Fatal(err)
					}
					if err := Gemm(false, false, m, n, k, 1, a, k, bsrc, ldb, 0, c2, n); err != nil {
						t.Fatal(err)
					}
					if i := bitsEq(c1, c2); i >= 0 {
						t.Fatal(fmt.Sprintf("%T n %d k %d: C[%d] differs", T(0), n, k, i))
					}
					free()
				}
			}
		}
	}
}
