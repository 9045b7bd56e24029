//go:build amd64 && !purego

package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// expSum32Blocks is the AVX-512 float32 ExpSum one block of 16 at a time,
// the tail padded with −Inf as expSum32 pads it: each call takes the
// kernel's lone-block path and widens its block's sum into float64 at
// once, as the single-block loop before the paired one did.
func expSum32Blocks(dst, src []float32, shift float32) float64 {
	var s float64
	for i := 0; i < len(src); i += 16 {
		var pad [16]float32
		for j := range pad {
			pad[j] = float32(math.Inf(-1))
		}
		copy(pad[:], src[i:])
		var lanes [16]float64
		expSumS512(&pad[0], &pad[0], 16, shift, &lanes)
		copy(dst[i:], pad[:])
		s += sumLanes(lanes[:])
	}
	return s
}

// TestExpSum512Pairs checks the AVX-512 float32 exp's paired loop and its
// float32 lane sums against the kernel one block at a time: every dst
// bitwise the same, whatever the input (NaN and infinities included, the
// call lengths straddling expChunk32 and an odd number of blocks), and
// the sum within the bound that ExpSum documents, 31 roundings of 2⁻²⁴
// relative, which inputs built for it reach.
func TestExpSum512Pairs(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512")
	}
	const bound = 31 * 0x1p-24 * (1 + 1e-6)
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{1, 16, 17, 32, 48, 64, 1008, 1023, 1024, 1040, 1056, 2047, 3000, 4112} {
		for _, special := range []bool{false, true} {
			x := make([]float32, n)
			for i := range x {
				x[i] = -88 * r.Float32()
				if special {
					x[i] = []float32{x[i], float32(math.NaN()), float32(math.Inf(-1)), float32(math.Inf(1)), 100, -1e30}[r.IntN(6)]
				}
			}
			shift := float32(0.5)
			got, want := make([]float32, n), make([]float32, (n+15)&^15)
			s := ExpSum(got, x, shift)
			w := expSum32Blocks(want, x, shift)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d: exp(%v − %v) = %v, one block at a time %v", n, x[i], shift, got[i], want[i])
				}
			}
			if !special && math.Abs(s-w) > bound*w {
				t.Errorf("n=%d: sum %v, one block at a time %v: relative error %.3g > %.3g", n, s, w, math.Abs(s-w)/w, bound)
			}
		}
	}
	// The worst case: each lane adds 31 values just under half an ulp of
	// its 1 to it, all rounded away.
	for _, n := range []int{1024, 2048} {
		x := make([]float32, n)
		for i := range x {
			if i%1024 >= 32 {
				x[i] = float32(math.Log(0.99 * 0x1p-24))
			}
		}
		d := make([]float32, n)
		s := ExpSum(d, x, 0)
		w := expSum32Blocks(d, x, 0)
		if e := math.Abs(s-w) / w; e > bound || e < 1e-6 {
			t.Errorf("n=%d worst case: sum %v, one block at a time %v: relative error %.3g, want in [1e-6, %.3g]", n, s, w, e, bound)
		}
	}
}
