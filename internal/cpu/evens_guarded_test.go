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
