package gemm

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestGemmFill checks GemmFill against Gemm bitwise, on every kernel,
// beta 0 (C NaN-filled: not read) and 1, over shapes with edge tiles in m
// and n and several K blocks: A given by a FillA that packs it with
// PackAColumns in two parts (a K block split at an odd column, as a
// convolution's samples split it), plain or transposed, B as panels by a
// FillB that interleaves the rows of Bᵀ (the weight gradient's way), C in
// one piece or in segments (panels inside one segment and across
// several), each segment Gemm's product of its columns.
func TestGemmFill(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		testGemmFill[float32](t)
		testGemmFill[float64](t)
	})
}

func testGemmFill[T Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	nr, mr := PanelWidth[T](), pick[T]().mr
	normal := func(n int) []T {
		x := make([]T, n)
		for i := range x {
			x[i] = T(rng.NormFloat64())
		}
		return x
	}
	for _, s := range []struct{ m, n, k int }{
		{1, 1, 1}, {5, 7, 3}, {12, 32, 256}, {97, 33, 257}, {256, 300, 600},
		{64, 576, 1024}, {13, 2000, 70}, {300, 5, 9}, {64, 0, 5}, {0, 4, 4}, {7, 9, 0},
	} {
		if testing.Short() && s.m*s.n*s.k > 1<<17 {
			continue // the race detector's CI run (-short): minutes each
		}
		for _, trans := range []bool{false, true} {
			for _, segLen := range []int{0, 5, 40} {
				for _, split := range []int{0, 7} {
					for _, beta := range []T{0, 1} {
						lda := s.k + 3
						na := s.m * lda
						if trans {
							lda = s.m + 5
							na = s.k * lda
						}
						a, bt := normal(na), normal(s.n*s.k) // bt: Bᵀ [n, k]
						ldc, seg := s.n+2, Segments{}
						segs, width := 1, s.n
						if segLen > 0 {
							ldc = segLen + 1
							seg = Segments{Len: segLen, Stride: (s.m-1)*ldc + segLen + 3}
							segs, width = max(1, (s.n+segLen-1)/segLen), segLen
						}
						stride := max(seg.Stride, s.m*ldc)
						c0 := normal(segs * stride)
						if beta == 0 {
							for i := range c0 {
								c0[i] = T(math.NaN())
							}
						}
						want := slices.Clone(c0)
						for sg := 0; sg < segs; sg++ {
							w := min(width, s.n-sg*width)
							if err := Gemm(trans, true, s.m, w, s.k, 1, a, max(1, lda), bt[sg*width*s.k:], max(1, s.k), beta, want[sg*stride:], max(1, ldc)); err != nil {
								t.Fatal(err)
							}
						}
						got := slices.Clone(c0)
						fillB := func(dst []T, pc, kb, j0, cols int) {
							if cols < 1 || cols > nr || len(dst) != kb*nr || pc+kb > s.k || j0+cols > s.n {
								t.Fatalf("fillB(len %d, pc %d, kb %d, j0 %d, cols %d) out of range", len(dst), pc, kb, j0, cols)
							}
							for p := 0; p < kb; p++ {
								for j := cols; j < nr; j++ {
									if dst[p*nr+j] != 0 {
										t.Fatalf("padding column %d not 0", j)
									}
								}
							}
							Interleave(dst, nr, bt[j0*s.k+pc:], s.k, cols, kb)
						}
						fillA := func(dst []T, pc, kb int) {
							if len(dst) != roundUp(s.m, mr)*kb {
								t.Fatalf("fillA: %d elements for %d rows, kb %d", len(dst), s.m, kb)
							}
							for i := range dst {
								dst[i] = T(math.NaN()) // PackAColumns writes every element
							}
							w := min(split, kb)
							at := func(p int) []T { // A's column p on
								if trans {
									return a[p*lda:]
								}
								return a[p:]
							}
							PackAColumns(dst, kb, 0, at(pc), lda, s.m, w, trans)
							PackAColumns(dst, kb, w, at(pc+w), lda, s.m, kb-w, trans)
						}
						if err := GemmFill(s.m, s.n, s.k, fillA, fillB, beta, got, max(1, ldc), seg); err != nil {
							t.Fatal(err)
						}
						if !slices.EqualFunc(got, want, func(x, y T) bool { return x == y || x != x && y != y }) {
							t.Fatalf("%T %+v trans %v segments %+v split %d beta %v: GemmFill differs from Gemm", T(0), s, trans, seg, split, beta)
						}
					}
				}
			}
		}
	}
}

// TestGemmFillErrors: a beta other than 0 and 1, a short C, a small ldc
// and negative sizes are errors, and neither fill is called.
func TestGemmFillErrors(t *testing.T) {
	fill := func(dst []float32, pc, kb, j0, cols int) { t.Fatal("fillB called") }
	fillA := func(dst []float32, pc, kb int) { t.Fatal("fillA called") }
	c := make([]float32, 12)
	for _, tc := range []struct {
		name    string
		m, n, k int
		beta    float32
		ldc     int
		seg     Segments
		want    string
	}{
		{"beta", 3, 4, 4, 2, 4, Segments{}, "beta"},
		{"short c", 3, 5, 4, 0, 5, Segments{}, "c:"},
		{"ldc", 3, 4, 4, 0, 3, Segments{}, "leading dimension"},
		{"negative", -1, 4, 4, 0, 4, Segments{}, "negative"},
		{"overlap", 2, 4, 4, 0, 2, Segments{Len: 2, Stride: 3}, "overlap"},
		{"short segments", 2, 6, 4, 0, 2, Segments{Len: 2, Stride: 5}, "c:"},
		{"segment length", 2, 6, 4, 0, 2, Segments{Len: -1, Stride: 4}, "segments"},
	} {
		err := GemmFill(tc.m, tc.n, tc.k, fillA, fill, tc.beta, c, tc.ldc, tc.seg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.want)
		}
	}
}

// TestGemmFillOverflow: sizes whose products overflow int are errors (a
// wrapped product passed a check once, and the kernel wrote far past C),
// and PackAColumns does not read before a with a negative lda.
func TestGemmFillOverflow(t *testing.T) {
	fillB := func(dst []float32, pc, kb, j0, cols int) {}
	fillA := func(dst []float32, pc, kb int) {}
	c := make([]float32, 38)
	huge := int(^uint(0)>>1)/11 + 1 // 11·huge overflows
	for _, tc := range []struct {
		name string
		m, n int
		ldc  int
		seg  Segments
	}{
		{"ldc", 12, 32, huge, Segments{}},
		{"stride", 2, 6, 2, Segments{Len: 2, Stride: huge}},
		{"stride and rows", 3, 6, huge, Segments{Len: 2, Stride: 2 * huge}},
	} {
		if err := GemmFill(tc.m, tc.n, 1, fillA, fillB, 0, c, tc.ldc, tc.seg); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	big := make([]float32, 64)
	dst := make([]float32, 2*12)
	func() {
		defer func() { _ = recover() }() // a panic is the documented answer to a too-short a
		PackAColumns(dst, 2, 0, big[32:], -5, 12, 2, true)
		for _, v := range dst {
			if v != 0 {
				t.Fatal("PackAColumns read before a (negative lda)")
			}
		}
	}()
}

// TestInterleaveRows checks InterleaveRows against Interleave, bit for
// bit (signalling NaN payloads, −0, ±Inf): rows each in a slice of its own
// (some shared, some overlapping), every row count to 33 and widths on
// both sides of the vector blocks, nothing written outside the panel's
// rows and columns.
func TestInterleaveRows(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	testInterleaveRows[float32](t, r, math.Float32frombits(0x7f800001))
	testInterleaveRows[float64](t, r, float64(math.Float64frombits(0x7ff0000000000001)))
}

func testInterleaveRows[T Float](t *testing.T, r *rand.Rand, snan T) {
	specials := []T{snan, T(math.Copysign(0, -1)), T(math.Inf(1)), T(math.Inf(-1)), T(math.NaN())}
	for rows := 0; rows <= 33; rows++ {
		for _, kb := range []int{0, 1, 3, 4, 7, 8, 9, 16, 31, 40} {
			st := rows + r.IntN(3)
			if st == 0 {
				st = 1
			}
			// One pool the rows are cut from: at random offsets, so
			// they share and overlap elements.
			pool := randSlice[T](r, 4*kb+64)
			for i := range specials {
				pool[r.IntN(len(pool))] = specials[i]
			}
			src := make([][]T, rows)
			for j := range src {
				o := r.IntN(len(pool) - kb + 1)
				src[j] = pool[o : o+kb]
			}
			sentinel := T(12345)
			got := make([]T, (kb+1)*st)
			want := make([]T, (kb+1)*st)
			for i := range got {
				got[i], want[i] = sentinel, sentinel
			}
			InterleaveRows(got, st, src, kb)
			for j, row := range src { // each row alone: Interleave's result
				if kb > 0 {
					Interleave(want[j:], st, row, kb, 1, kb)
				}
			}
			for i := range got {
				if bitsOf(got[i]) != bitsOf(want[i]) {
					t.Fatalf("%T rows %d kb %d st %d: element %d (p %d, row %d) = %v, want %v", got[i], rows, kb, st, i, i/st, i%st, got[i], want[i])
				}
			}
		}
	}
}

// bitsOf is x's bits in its own width (a float32's NaN payload survives
// no conversion to float64 unchanged when it is signalling).
func bitsOf[T Float](x T) uint64 {
	switch v := any(x).(type) {
	case float32:
		return uint64(math.Float32bits(v))
	case float64:
		return math.Float64bits(v)
	}
	return 0
}
