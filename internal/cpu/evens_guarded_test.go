//go:build linux

package cpu

import (
	"fmt"
	"math"
	"testing"
)

// TestEvens: evens gives dst[i] = src[2i] for every i below the count it
// returns and writes nothing past it, with src and dst against a guard
// page at their end (a read or write past either faults), dst and src of
// every length up to 70 and src one element short of the last pair too.
// Float32 and float64, AVX2 on and off. (im2colRow's Go loop does the
// rest of a row; TestConvBlocksMatchWholeColumns and the convolution
// tests cover the two together.)
func TestEvens(t *testing.T) {
	old := avgAVX2
	defer func() { avgAVX2 = old }()
	for _, on := range []bool{false, old} {
		avgAVX2 = on
		t.Run(fmt.Sprintf("avx2=%v", on), func(t *testing.T) {
			testEvens[float32](t)
			testEvens[float64](t)
		})
	}
}

func testEvens[T Float](t *testing.T) {
	for n := 0; n <= 70; n++ {
		for _, ns := range []int{2 * n, max(0, 2*n-1), 2*n + 3} {
			src, freeS := guarded[T](t, ns, true)
			dst, freeD := guarded[T](t, n, true)
			for i := range src {
				src[i] = T(i) + 0.5
			}
			for i := range dst {
				dst[i] = T(math.NaN())
			}
			k := evens(dst, src)
			if k < 0 || k > n || 2*k > ns {
				t.Fatalf("n %d, src %d: evens did %d", n, ns, k)
			}
			for i := range dst {
				want := T(2*i) + 0.5
				if i >= k {
					if dst[i] == dst[i] {
						t.Fatalf("n %d, src %d: evens did %d and wrote dst[%d]", n, ns, k, i)
					}
					continue
				}
				if dst[i] != want {
					t.Fatalf("n %d, src %d: dst[%d] = %v, want %v", n, ns, i, dst[i], want)
				}
			}
			freeS()
			freeD()
		}
	}
}

// TestAddEvens: addEvens gives dst[2i] = dst[2i] + src[i] (the Go loop's
// bits) for every i below the count it returns, leaves every other
// element of dst as it was, bit for bit (−0 and a NaN's payload in the odd
// elements included), and reads or writes nothing past either slice:
// src and dst against a guard page at their end, every length of src up
// to 70, dst one element short of the last pair, exactly long enough and
// longer. Float32 and float64, AVX2 on and off.
func TestAddEvens(t *testing.T) {
	old := avgAVX2
	defer func() { avgAVX2 = old }()
	for _, on := range []bool{false, old} {
		avgAVX2 = on
		t.Run(fmt.Sprintf("avx2=%v", on), func(t *testing.T) {
			testAddEvens[float32](t)
			testAddEvens[float64](t)
		})
	}
}

func testAddEvens[T Float](t *testing.T) {
	bits := func(v T) uint64 {
		if f, ok := any(v).(float32); ok {
			return uint64(math.Float32bits(f))
		}
		return math.Float64bits(float64(v))
	}
	odd := []T{T(math.Copysign(0, -1)), T(math.NaN()), -1.25, T(math.Inf(-1))}
	for n := 0; n <= 70; n++ {
		for _, nd := range []int{2 * n, max(0, 2*n-1), 2*n + 3} {
			src, freeS := guarded[T](t, n, true)
			dst, freeD := guarded[T](t, nd, true)
			for i := range src {
				src[i] = T(i)*0.25 - 3
			}
			if n > 0 {
				src[n/2] = T(math.Copysign(0, -1))
			}
			want := make([]T, nd)
			for i := range dst {
				if i%2 == 1 {
					dst[i] = odd[i/2%len(odd)]
				} else {
					dst[i] = T(i%5) - 2
				}
				if i == 4 {
					dst[i] = T(math.Copysign(0, -1)) // −0 + −0 stays −0
				}
				want[i] = dst[i]
			}
			k := addEvens(dst, src)
			if k < 0 || k > n || 2*k > nd {
				t.Fatalf("n %d, dst %d: addEvens did %d", n, nd, k)
			}
			for i := 0; i < k; i++ {
				want[2*i] += src[i]
			}
			for i := range dst {
				if bits(dst[i]) != bits(want[i]) {
					t.Fatalf("n %d, dst %d (did %d): dst[%d] = %v, want %v", n, nd, k, i, dst[i], want[i])
				}
			}
			freeS()
			freeD()
		}
	}
}
