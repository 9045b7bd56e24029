package gemm

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestGemmPackedASegments checks GemmPackedASegments against GemmPackedA
// on each segment alone, bitwise, for every kernel: segments narrower and
// wider than a panel and of whole panels, the columns split into ranges
// at arbitrary points (as goroutines would take them), several K blocks,
// a bias with −0, NaN payloads and infinities, specials in A and B, and C
// filled with NaN around and between the segments (left as it was).
func TestGemmPackedASegments(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		testGemmPackedASegments[float32](t)
		testGemmPackedASegments[float64](t)
	})
}

func testGemmPackedASegments[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(11, 3))
	for _, s := range []struct{ m, k, segLen, segs, short int }{
		{1, 1, 1, 3, 0}, {12, 7, 196, 8, 0}, {100, 300, 196, 3, 0}, {25, 260, 5, 9, 0}, {13, 40, 32, 4, 0},
		{64, 17, 16, 5, 0}, {30, 3, 33, 6, 0}, {7, 129, 100, 2, 0}, {0, 4, 4, 2, 0}, {5, 0, 7, 3, 0}, {40, 9, 49, 1, 0},
		{25, 300, 32, 5, 7}, {13, 300, 32, 4, 0}, {30, 260, 16, 5, 3}, {9, 20, 40, 3, 39},
		{130, 40, 196, 3, 0}, // a second row block (mc 96) of full tiles
	} {
		n := s.segLen*s.segs - s.short // the last segment s.short columns short
		ldb, ldc := s.segLen+3, s.segLen+1
		bStride, cStride := s.k*ldb+5, max(1, s.m)*ldc+7
		bseg, cseg := Segments{Len: s.segLen, Stride: bStride}, Segments{Len: s.segLen, Stride: cStride}
		a := specialSlice[T](r, s.m*s.k, true)
		b := specialSlice[T](r, s.segs*bStride, true)
		bias := specialSlice[T](r, s.m, true)
		for i := 0; i < s.m; i += 3 {
			bias[i] = nanPayload[T](r)
		}
		pa, err := PackA(s.m, s.k, a, max(1, s.k))
		if err != nil {
			t.Fatal(err)
		}
		nans := func() []T {
			c := make([]T, s.segs*cStride)
			for i := range c {
				c[i] = T(math.NaN())
			}
			return c
		}
		for _, bs := range [][]T{nil, bias} {
			want := nans()
			for q := 0; q < s.segs; q++ {
				if err := GemmPackedA(pa, min(s.segLen, n-q*s.segLen), b[q*bStride:], ldb, want[q*cStride:], ldc, bs); err != nil {
					t.Fatal(err)
				}
			}
			// The columns in ranges: one, two at a random point, or runs
			// of a random width.
			for _, cuts := range [][]int{{0, n}, {0, r.IntN(n + 1), n}, runs(r, n)} {
				cuts = slices.Clone(cuts)
				slices.Sort(cuts)
				got := nans()
				for i := 0; i+1 < len(cuts); i++ {
					if err := GemmPackedASegments(pa, n, b, ldb, bseg, got, ldc, cseg, bs, cuts[i], cuts[i+1]); err != nil {
						t.Fatal(err)
					}
				}
				if i := bitsEq(got, want); i >= 0 {
					t.Fatalf("%T %+v bias %v cuts %v: C[%d] = %v, want %v", T(0), s, bs != nil, cuts, i, got[i], want[i])
				}
			}
			// One range alone: its columns, nothing else (NaN stays NaN).
			j0 := r.IntN(n + 1)
			j1 := j0 + r.IntN(n-j0+1)
			got, only := nans(), nans()
			for j := j0; j < j1; j++ {
				for i := 0; i < s.m; i++ {
					at := j/s.segLen*cStride + i*ldc + j%s.segLen
					only[at] = want[at]
				}
			}
			if err := GemmPackedASegments(pa, n, b, ldb, bseg, got, ldc, cseg, bs, j0, j1); err != nil {
				t.Fatal(err)
			}
			if i := bitsEq(got, only); i >= 0 {
				t.Fatalf("%T %+v bias %v columns [%d, %d) alone: C[%d] = %v, want %v", T(0), s, bs != nil, j0, j1, i, got[i], only[i])
			}
		}
		// The zero Segments: B and C in one piece, GemmPackedA's product.
		if s.segs == 1 {
			want, got := nans(), nans()
			if err := GemmPackedA(pa, n, b, ldb, want, ldc, bias); err != nil {
				t.Fatal(err)
			}
			if err := GemmPackedASegments(pa, n, b, ldb, Segments{}, got, ldc, Segments{}, bias, 0, n); err != nil {
				t.Fatal(err)
			}
			if i := bitsEq(got, want); i >= 0 {
				t.Fatalf("%T %+v, zero Segments: C[%d] = %v, want %v", T(0), s, i, got[i], want[i])
			}
		}
		pa.Release()
	}
}

// runs cuts [0, n) into runs of one random width.
func runs(r *rand.Rand, n int) []int {
	w := 1 + r.IntN(max(1, n/3))
	cuts := []int{0}
	for j := w; j < n; j += w {
		cuts = append(cuts, j)
	}
	return append(cuts, n)
}

// TestGemmPackedASegmentsErrors: a nil or released A, columns outside the
// product, a short bias, and B's or C's segments too short or
// overlapping are errors that name the operand.
func TestGemmPackedASegmentsErrors(t *testing.T) {
	pa, err := PackA(3, 4, make([]float32, 12), 4)
	if err != nil {
		t.Fatal(err)
	}
	b, c := make([]float32, 4*10), make([]float32, 3*10)
	one := Segments{Len: 5, Stride: 20}
	for _, tc := range []struct {
		name   string
		err    func() error
		substr string
	}{
		{"nil A", func() error {
			return GemmPackedASegments[float32](nil, 10, b, 5, one, c, 5, Segments{Len: 5, Stride: 15}, nil, 0, 10)
		}, "released or nil"},
		{"columns past n", func() error {
			return GemmPackedASegments(pa, 10, b, 5, one, c, 5, Segments{Len: 5, Stride: 15}, nil, 0, 11)
		}, "columns"},
		{"negative j0", func() error {
			return GemmPackedASegments(pa, 10, b, 5, one, c, 5, Segments{Len: 5, Stride: 15}, nil, -1, 3)
		}, "columns"},
		{"short bias", func() error {
			return GemmPackedASegments(pa, 10, b, 5, one, c, 5, Segments{Len: 5, Stride: 15}, make([]float32, 2), 0, 10)
		}, "bias"},
		{"b's segments overlap", func() error {
			return GemmPackedASegments(pa, 10, b, 5, Segments{Len: 5, Stride: 6}, c, 5, Segments{Len: 5, Stride: 15}, nil, 0, 10)
		}, "b: segments"},
		{"short b", func() error {
			return GemmPackedASegments(pa, 10, b[:30], 5, one, c, 5, Segments{Len: 5, Stride: 15}, nil, 0, 10)
		}, "b:"},
		{"short c", func() error {
			return GemmPackedASegments(pa, 10, b, 5, one, c[:25], 5, Segments{Len: 5, Stride: 15}, nil, 0, 10)
		}, "c:"},
		{"j1 before j0", func() error {
			return GemmPackedASegments(pa, 10, b, 5, one, c, 5, Segments{Len: 5, Stride: 15}, nil, 4, 3)
		}, "columns"},
		{"negative n", func() error {
			return GemmPackedASegments(pa, -1, b, 5, one, c, 5, Segments{Len: 5, Stride: 15}, nil, 0, 0)
		}, "columns"},
		{"segments of no columns", func() error {
			return GemmPackedASegments(pa, 10, b, 5, Segments{Len: 0, Stride: 20}, c, 5, Segments{Len: 5, Stride: 15}, nil, 0, 10)
		}, "segments of 0 columns"},
		{"negative stride", func() error {
			return GemmPackedASegments(pa, 10, b, 5, one, c, 5, Segments{Len: 5, Stride: -15}, nil, 0, 10)
		}, "apart"},
		{"ldb too small", func() error {
			return GemmPackedASegments(pa, 10, b, 4, one, c, 5, Segments{Len: 5, Stride: 15}, nil, 0, 10)
		}, "b: leading dimension"},
		{"ldc too small", func() error {
			return GemmPackedASegments(pa, 10, b, 5, one, c, 4, Segments{Len: 5, Stride: 15}, nil, 0, 10)
		}, "c: leading dimension"},
	} {
		if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.substr) {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.substr)
		}
	}
	pa.Release()
	if err := GemmPackedASegments(pa, 10, b, 5, one, c, 5, Segments{Len: 5, Stride: 15}, nil, 0, 10); err == nil || !strings.Contains(err.Error(), "released or nil") {
		t.Errorf("released A: error %v", err)
	}
}
