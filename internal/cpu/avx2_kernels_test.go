//go:build linux && amd64 && !purego

package cpu

// The AVX2 Winograd transforms and AdaptiveAvgPool2d(1) kernels (a fresh
// reviewer's tests, 2026-12-06): NaN-dense inputs, plane sizes hw 1..40
// and windows inside the plane, every slice against a guard page. NaNs
// compare as values in the Winograd test: where an addition meets two
// NaNs the Go compiler may order its operands otherwise than the
// assembly, so the payload may differ.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func nanPayload32(r *rand.Rand) float32 {
	return math.Float32frombits(0x7fc00000 | uint32(r.IntN(1<<22)) | uint32(r.IntN(2))<<31)
}

// sprinkleDense fills s with NaNs of random payloads (and some normals,
// ±Inf, −0).
func sprinkleDense(r *rand.Rand, s []float32, dense bool) {
	for i := range s {
		switch k := r.IntN(10); {
		case dense && k < 7:
			s[i] = nanPayload32(r)
		case k == 7:
			s[i] = float32(math.Copysign(0, -1))
		case k == 8 && dense:
			s[i] = float32(math.Inf(2*r.IntN(2) - 1))
		default:
			s[i] = float32(r.NormFloat64())
		}
	}
}

// canon maps every NaN to one payload: the values, not the payloads.
func canon(s []float32) []uint64 {
	out := bitsOf(s)
	for i, v := range s {
		if v != v {
			out[i] = 1
		}
	}
	return out
}

// TestWinoAVX2NaNDense: the AVX2 transforms against the Go loops, NaNs
// compared as values.
func TestWinoAVX2NaNDense(t *testing.T) { winoAVX2Dense(t, canon) }

func winoAVX2Dense(t *testing.T, bits func([]float32) []uint64) {
	if !winoAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(51, 52))
	for tw := 1; tw <= 26; tw++ {
		for _, extraW := range []int{0, 5} {
			for _, extraS := range []int{0, 7} {
				for _, dense := range []bool{true, false} {
					for _, tail := range []bool{true, false} {
						o := 2
						width := 2*tw + 2 + extraW
						src := make([]float32, 3*width+2*tw+2) // the last row exactly what is read
						sprinkleDense(r, src, dense)
						stride := o + tw + extraS
						var outs [2][]float32
						for i, m := range []string{"avx2", "go"} {
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
						if !slices.Equal(bits(outs[0]), bits(outs[1])) {
							t.Fatalf("input tw %d width %d stride %d dense %v: avx2 and Go differ", tw, width, stride, dense)
						}
						for _, wo := range []int{2 * tw, 2*tw - 1} {
							if wo == 0 {
								continue
							}
							msrc := make([]float32, 15*stride+o+tw)
							sprinkleDense(r, msrc, dense)
							var tops, bots [2][]float32
							for i, mm := range []string{"avx2", "go"} {
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
							if !slices.Equal(bits(tops[0]), bits(tops[1])) || !slices.Equal(bits(bots[0]), bits(bots[1])) {
								t.Fatalf("output tw %d wo %d dense %v: avx2 and Go differ", tw, wo, dense)
							}
						}
					}
				}
			}
		}
	}
}

func axisOf(first, end int) PoolAxis {
	return PoolAxis{First: []int{first}, End: []int{end}, Full: []int{end - first}, Clip: []int{end - first}, Step: 1}
}

// TestAvgOne2Sizes: AvgPool with one window per plane, the AVX2 kernels
// against the Go loops, heights 1..5 and widths 1..10, 12, 13 and 37
// (every remainder of 8 and 4; windows of more than 8 columns take the
// kernels' column loop, the others their unrolled rows), windows
// the whole plane and inside it, x and out against guard pages, NaN-dense
// inputs.
func TestAvgOne2Sizes(t *testing.T) {
	if !avgOneAVX2 {
		t.Skip("no AVX2")
	}
	if raceBuild {
		t.Skip("race build: the Go loops' operand order may differ")
	}
	avgOne2Sizes[float32](t)
	avgOne2Sizes[float64](t)
}

func avgOne2Sizes[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	s2 := avgOneAVX2
	defer func() { avgOneAVX2 = s2 }()
	for h := 1; h <= 5; h++ {
		for _, w := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 37} { // beyond 8: the column loop
			for _, planes := range []int{8, 12, 17, 24, 40} {
				for trial := 0; trial < 3; trial++ {
					r0, r1, c0, c1 := 0, h, 0, w
					if trial > 0 {
						r0 = r.IntN(h)
						r1 = r0 + 1 + r.IntN(h-r0)
						c0 = r.IntN(w)
						c1 = c0 + 1 + r.IntN(w-c0)
					}
					g := Pool2dGeom{Planes: planes, H: h, W: w, Rows: axisOf(r0, r1), Cols: axisOf(c0, c1)}
					x := make([]T, planes*h*w)
					for i := range x {
						switch r.IntN(4) {
						case 0:
							x[i] = T(r.NormFloat64())
						case 1:
							x[i] = T(math.Copysign(0, -1))
						default:
							x[i] = nanOf[T](uint64(r.IntN(1 << 20)))
						}
					}
					if trial == 2 { // no NaN: -0 sums
						for i := range x {
							if x[i] != x[i] {
								x[i] = T(math.Copysign(0, -1))
							}
						}
					}
					var res [2][]T
					for i, on := range []bool{true, false} {
						avgOneAVX2 = on
						for _, tail := range []bool{true, false} {
							gx, f1 := guarded[T](t, len(x), tail)
							out, f2 := guarded[T](t, planes, tail)
							copy(gx, x)
							AvgPool(&g, AvgDivisor{Override: 3}, gx, out)
							if tail {
								res[i] = slices.Clone(out)
							} else if !slices.Equal(bitsOf(out), bitsOf(res[i])) {
								t.Fatalf("tail/head differ")
							}
							f1()
							f2()
						}
					}
					if !slices.Equal(bitsOf(res[0]), bitsOf(res[1])) {
						t.Fatal(fmt.Sprintf("%T %dx%d planes %d window %d..%d×%d..%d: avx2 %v, Go %v", T(0), h, w, planes, r0, r1, c0, c1, res[0], res[1]))
					}
				}
			}
		}
	}
}
