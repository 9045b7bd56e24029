//go:build linux && amd64 && !purego

package vmath

import (
	"fmt"
	"testing"

	"github.com/gops-dev/gops/internal/guardpage"
)

// TestReLUStream: ReLU with non-temporal stores (streamBytes lowered to
// 0, so that every call streams) gives reluGo's bits for every length to
// 100 and every alignment of dst and src (the head before dst's 32-byte
// boundary, the streamed middle, the tail), with src and dst against a
// guard page at their end or their start; in place it does not stream.
// PositiveMul (LeakyReLU's gradient) likewise.
func TestReLUStream(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	old := streamBytes
	defer func() { streamBytes = old }()
	streamBytes = 0
	testReLUStream[float32](t)
	testReLUStream[float64](t)
}

func testReLUStream[T Float](t *testing.T) {
	for n := 0; n <= 100; n++ {
		for _, tail := range []bool{true, false} {
			for off := 0; off < 8; off++ {
				src, f1, err := guardpage.Slice[T](n+8, tail)
				if err != nil {
					t.Fatal(err)
				}
				dst, f2, err := guardpage.Slice[T](n+8, !tail)
				if err != nil {
					t.Fatal(err)
				}
				x := reluInputs[T](n + 8)
				copy(src, x)
				s, d := src[off:off+n], dst[8-off:8-off+n]
				if tail {
					s, d = src[8:], dst[off:off+n]
				}
				if n > 0 && !streams(d, s, nil) {
					t.Fatalf("n %d: not streamed", n)
				}
				for i := range dst {
					dst[i] = -7
				}
				want := make([]T, n)
				reluGo(want, s)
				ReLU(d, s)
				sameFloats(t, fmt.Sprintf("n %d off %d tail %v", n, off, tail), d, want)
				// PositiveMul (LeakyReLU's gradient) streams the same way.
				u, f3, err := guardpage.Slice[T](n, tail)
				if err != nil {
					t.Fatal(err)
				}
				for i := range u {
					u[i] = x[(i*7+3)%len(x)]
				}
				positiveMulGo(want, s, u, 1, -0.25)
				PositiveMul(d, s, u, 1, -0.25)
				sameFloats(t, fmt.Sprintf("PositiveMul n %d off %d tail %v", n, off, tail), d, want)
				f1()
				f2()
				f3()
			}
		}
	}
	x := reluInputs[T](40)
	if streams(x, x, nil) || streams(x[1:], x[:39], nil) || !overlaps(x[3:], x[:10]) || overlaps(x[10:], x[:10]) {
		t.Fatal("overlapping slices streamed")
	}
}
