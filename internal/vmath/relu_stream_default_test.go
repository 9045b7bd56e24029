//go:build amd64 && !purego

package vmath

import (
	"fmt"
	"math"
	"testing"
)

// TestReLUStreamDefault: ReLU at the default streamBytes, on
// destinations just below, at and above it, at every element offset of
// dst within 32 bytes, with ±0, ±Inf and NaNs of both signs spread
// through (so that they land in the head, the streamed middle and the
// tail): reluGo's bits, and nothing past dst's end written.
func TestReLUStreamDefault(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	testReviewReLUStreamDefault[float32](t)
	testReviewReLUStreamDefault[float64](t)
}

func testReviewReLUStreamDefault[T Float](t *testing.T) {
	size := 4
	if _, ok := any(T(0)).(float64); ok {
		size = 8
	}
	at := streamBytes / size
	special := []T{0, T(math.Copysign(0, -1)), T(math.Inf(1)), T(math.Inf(-1)), T(math.NaN()), T(math.Copysign(math.NaN(), -1)), -1, 1}
	for _, n := range []int{at - 1, at, at + 13} {
		src := reluInputs[T](n)
		for i := 0; i < n; i += 97 {
			src[i] = special[i/97%len(special)]
		}
		want := make([]T, n)
		reluGo(want, src)
		buf := make([]T, n+32/size+1)
		for off := 0; off < 32/size; off++ {
			d := buf[off : off+n]
			streams := streams(d, src, nil)
			if streams != (n*size >= streamBytes) {
				t.Fatalf("n %d: streams %v", n, streams)
			}
			for i := range buf {
				buf[i] = -3
			}
			ReLU(d, src)
			sameFloats(t, fmt.Sprintf("n %d off %d", n, off), d, want)
			for i := off + n; i < len(buf); i++ {
				if buf[i] != -3 {
					t.Fatalf("n %d off %d: buf[%d] written past dst", n, off, i)
				}
			}
			for i := 0; i < off; i++ {
				if buf[i] != -3 {
					t.Fatalf("n %d off %d: buf[%d] written before dst", n, off, i)
				}
			}
		}
	}
}
