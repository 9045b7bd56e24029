//go:build linux && amd64 && !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestWinoTailsGuarded runs winoInputRow and winoOutputRow directly, for
// every tile count 1..40 (every tail length of the masked blocks: input
// tw%8 = 1..7, output n%16 = 1..15) and odd and even output widths, with
// every slice the assembly reads or writes (the padded rows, the V and M
// planes, the output rows top and bottom) placed against a guard page at
// its end and then at its start; the results bitwise the Go loops'
// (winoAVX512 and winoAVX2 off), NaN, ±Inf and −0 in the inputs; the
// AVX-512 loops and the AVX2 ones (the masked blocks of 8 tiles, input and
// output) where the CPU has them.
func TestWinoTailsGuarded(t *testing.T) {
	for _, mode := range winoAsmModes(t) {
		t.Run(mode, func(t *testing.T) { winoTailsGuarded(t, mode) })
	}
}

func winoTailsGuarded(t *testing.T, mode string) {
	r := rand.New(rand.NewPCG(5, 6))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), math.Float32frombits(0x7f800001)}
	sprinkle := func(s []float32) {
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		for range 3 {
			if len(s) > 0 {
				s[r.IntN(len(s))] = specials[r.IntN(len(specials))]
			}
		}
	}
	for tw := 1; tw <= 40; tw++ {
		for _, tail := range []bool{true, false} {
			for _, o := range []int{0, 3} {
				t.Run(fmt.Sprintf("tw%d/o%d/tail%v", tw, o, tail), func(t *testing.T) {
					// Input transform.
					width := 2*tw + 2
					src := make([]float32, 4*width)
					sprinkle(src)
					stride := o + tw // tightest spacing: planes back to back
					var outs [2][]float32
					for i, m := range []string{mode, "go"} {
						setWinoAsm(t, m)
						guard, free := guardedCopies[float32](t, tail)
						rows := guard(src)
						v := guard(fill[float32](15*stride+o+tw, 77))
						var vs [16][]float32
						for xi := range vs {
							vs[xi] = v[xi*stride:][:o+tw]
						}
						winoInputRow(rows, width, &vs, o, tw)
						outs[i] = slices.Clone(v)
						free()
					}
					if !slices.Equal(bitsOf(outs[0]), bitsOf(outs[1])) {
						t.Fatalf("input: asm and Go differ")
					}
					// Output transform, wo = 2tw and 2tw−1.
					for _, wo := range []int{2 * tw, 2*tw - 1} {
						if wo == 0 {
							continue
						}
						msrc := make([]float32, 15*stride+o+tw)
						sprinkle(msrc)
						var tops, bots [2][]float32
						for i, mm := range []string{mode, "go"} {
							setWinoAsm(t, mm)
							guard, free := guardedCopies[float32](t, tail)
							m := guard(msrc)
							var ms [16][]float32
							for xi := range ms {
								ms[xi] = m[xi*stride:][:o+tw]
							}
							top, bot := guard(fill[float32](wo, 99)), guard(fill[float32](wo, 98))
							winoOutputRow(&ms, o, tw, stride, top, bot)
							tops[i], bots[i] = slices.Clone(top), slices.Clone(bot)
							free()
						}
						if !slices.Equal(bitsOf(tops[0]), bitsOf(tops[1])) || !slices.Equal(bitsOf(bots[0]), bitsOf(bots[1])) {
							t.Fatalf("output wo %d: asm and Go differ", wo)
						}
					}
				})
			}
		}
	}
}
