package gemm

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// rowsB is GemmPackedRows' B[:, j0:j1] written out: B[p][j−j0] =
// src[offs[p] + (j/Len)·Stride + j mod Len], [k, j1−j0].
func rowsB[T Float](src []T, offs []int, seg Segments, j0, j1 int) []T {
	n := j1 - j0
	b := make([]T, len(offs)*n)
	for p, o := range offs {
		for j := j0; j < j1; j++ {
			b[p*n+j-j0] = src[o+j/seg.Len*seg.Stride+j%seg.Len]
		}
	}
	return b
}

// TestGemmPackedRows checks GemmPackedRows against GemmPackedA on B
// written out (rowsB), bitwise, for every kernel (the AVX-512 ones read
// the panels inside one segment in place, the others gather every
// panel): rows whose last block takes each edge kernel (and a full tile
// through a copy), segments narrower and wider than a panel, overlapping
// and coinciding ones, column ranges starting inside a segment, several K
// blocks, repeated offsets, a bias with NaN payloads, specials in A and
// src, and C's columns past the product left as they were (NaN).
func TestGemmPackedRows(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		testGemmPackedRows[float32](t)
		testGemmPackedRows[float64](t)
	})
}

func testGemmPackedRows[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(21, 5))
	for _, s := range []struct{ m, k, segLen, stride, j0, j1 int }{
		{64, 147, 112, 236, 0, 768}, {64, 147, 112, 236, 96, 864}, {64, 147, 112, 236, 12288, 12544},
		{1, 1, 1, 1, 0, 1}, {4, 9, 32, 40, 0, 64}, {5, 9, 32, 40, 3, 100}, {8, 30, 33, 33, 1, 131},
		{9, 30, 64, 70, 0, 200}, {11, 7, 16, 16, 5, 77}, {12, 260, 48, 60, 0, 150}, {13, 300, 100, 130, 17, 333},
		{24, 5, 200, 210, 0, 400}, {28, 129, 31, 20, 0, 190}, {70, 40, 96, 0, 10, 300}, {36, 3, 7, 9, 0, 50},
		{20, 64, 1000, 1000, 0, 40}, {0, 5, 10, 12, 0, 30}, {6, 0, 10, 12, 0, 30}, {6, 4, 10, 12, 7, 7},
		{29, 200, 40, 52, 0, 200}, {7, 48, 64, 64, 0, 128}, {7, 49, 64, 64, 0, 128}, {11, 30, 64, 70, 0, 200},
		{17, 300, 24, 24, 8, 200},
	} {
		// Offsets anywhere below room for the columns read, some repeated.
		last := max(0, s.j1-1) / s.segLen
		reach := last*s.stride + s.segLen
		offs := make([]int, s.k)
		for p := range offs {
			offs[p] = r.IntN(3 * max(1, s.k))
			if p > 0 && r.IntN(4) == 0 {
				offs[p] = offs[p-1]
			}
		}
		src := specialSlice[T](r, reach+4*s.k+5, true)
		a := specialSlice[T](r, s.m*s.k, true)
		bias := specialSlice[T](r, s.m, true)
		for i := 0; i < s.m; i += 3 {
			bias[i] = nanPayload[T](r)
		}
		pa, err := PackA(s.m, s.k, a, max(1, s.k))
		if err != nil {
			t.Fatal(err)
		}
		seg := Segments{Len: s.segLen, Stride: s.stride}
		n, ldc := s.j1-s.j0, s.j1-s.j0+3
		b := rowsB(src, offs, seg, s.j0, s.j1)
		// The panels read in place where the kernel can: full ones whose
		// halves lie each in one segment, once a K block.
		wantInPlace := 0
		if nr := pick[T]().nr; pick[T]().multiOffs != nil && s.m > 0 && s.k > 0 {
			inside := func(c int) bool { return c%s.segLen+nr/2 <= s.segLen }
			for jc := 0; jc+nr <= n; jc += nr {
				if inside(s.j0+jc) && inside(s.j0+jc+nr/2) {
					wantInPlace += (s.k + kcOf[T]() - 1) / kcOf[T]()
				}
			}
		}
		for _, bs := range [][]T{nil, bias} {
			inPlace := 0
			inPlaceHook = func() { inPlace++ }
			nans := func() []T {
				c := make([]T, max(1, s.m)*ldc)
				for i := range c {
					c[i] = T(math.NaN())
				}
				return c
			}
			want, got := nans(), nans()
			if err := GemmPackedA(pa, n, b, max(1, n), want, ldc, bs); err != nil {
				t.Fatal(err)
			}
			if err := GemmPackedRows(pa, src, NewPanelRows(offs), seg, s.j0, s.j1, got, ldc, bs); err != nil {
				t.Fatal(err)
			}
			inPlaceHook = nil
			if i := bitsEq(got, want); i >= 0 {
				t.Fatalf("%T %+v bias %v: C[%d] = %v, want %v", T(0), s, bs != nil, i, got[i], want[i])
			}
			if inPlace != wantInPlace {
				t.Fatalf("%T %+v: %d panels read in place, want %d", T(0), s, inPlace, wantInPlace)
			}
		}
		pa.Release()
	}
}

// TestGemmPackedRowsGuarded: src exactly as long as the columns read
// need, against a guard page at its end and then at its start (the
// least offset 0), for every kernel; the result rowsB's product.
func TestGemmPackedRowsGuarded(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		testGemmPackedRowsGuarded[float32](t)
		testGemmPackedRowsGuarded[float64](t)
	})
}

func testGemmPackedRowsGuarded[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	for _, tail := range []bool{true, false} {
		for _, s := range []struct{ m, k, segLen, stride, j0, j1 int }{
			{64, 147, 112, 236, 0, 768}, {13, 20, 32, 32, 0, 96}, {25, 9, 40, 50, 5, 170}, {4, 3, 16, 17, 0, 64},
			{28, 40, 31, 20, 0, 190}, {9, 20, 96, 0, 10, 300}, {29, 60, 40, 52, 3, 200},
		} {
			offs := make([]int, s.k)
			for p := range offs {
				offs[p] = r.IntN(2 * s.k)
			}
			offs[0], offs[s.k-1] = 0, 2*s.k // the least and the greatest
			seg := Segments{Len: s.segLen, Stride: s.stride}
			hi := 0 // the greatest column offset read
			for j := s.j0; j < s.j1; j++ {
				hi = max(hi, j/s.segLen*s.stride+j%s.segLen)
			}
			src, free := guardedSlice[T](t, 2*s.k+hi+1, tail)
			copy(src, randSlice[T](r, len(src)))
			a := randSlice[T](r, s.m*s.k)
			pa, err := PackA(s.m, s.k, a, s.k)
			if err != nil {
				t.Fatal(err)
			}
			n := s.j1 - s.j0
			want, got := make([]T, s.m*n), make([]T, s.m*n)
			if err := GemmPackedA(pa, n, rowsB(src, offs, seg, s.j0, s.j1), n, want, n, nil); err != nil {
				t.Fatal(err)
			}
			if err := GemmPackedRows(pa, src, NewPanelRows(offs), seg, s.j0, s.j1, got, n, nil); err != nil {
				t.Fatal(err)
			}
			if i := bitsEq(got, want); i >= 0 {
				t.Fatalf("%T %+v tail %v: C[%d] = %v, want %v", T(0), s, tail, i, got[i], want[i])
			}
			// One element short: an error, nothing read.
			if err := GemmPackedRows(pa, src[:len(src)-1], NewPanelRows(offs), seg, s.j0, s.j1, got, n, nil); err == nil {
				t.Fatalf("%+v: src one element short: no error", s)
			}
			pa.Release()
			free()
		}
	}
}

// TestGemmPackedRowsErrors: bad arguments are errors naming the problem,
// C untouched.
func TestGemmPackedRowsErrors(t *testing.T) {
	a := make([]float32, 6*5)
	pa, err := PackA(6, 5, a, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer pa.Release()
	offs := NewPanelRows([]int{0, 1, 2, 3, 4})
	src := make([]float32, 100)
	c := make([]float32, 6*20)
	seg := Segments{Len: 10, Stride: 12}
	released, _ := PackA(6, 5, a, 5)
	released.Release()
	for _, e := range []struct {
		name, want string
		call       func() error
	}{
		{"nil A", "released or nil", func() error {
			return GemmPackedRows(nil, src, offs, seg, 0, 20, c, 20, nil)
		}},
		{"released A", "released or nil", func() error {
			return GemmPackedRows(released, src, offs, seg, 0, 20, c, 20, nil)
		}},
		{"bias", "bias of 5 elements", func() error {
			return GemmPackedRows(pa, src, offs, seg, 0, 20, c, 20, make([]float32, 5))
		}},
		{"offsets", "4 row offsets for k = 5", func() error {
			return GemmPackedRows(pa, src, NewPanelRows([]int{0, 1, 2, 3}), seg, 0, 20, c, 20, nil)
		}},
		{"negative j0", "columns [-1, 20)", func() error {
			return GemmPackedRows(pa, src, offs, seg, -1, 20, c, 20, nil)
		}},
		{"j1 < j0", "columns [5, 4)", func() error {
			return GemmPackedRows(pa, src, offs, seg, 5, 4, c, 20, nil)
		}},
		{"segment length", "segments of 0", func() error {
			return GemmPackedRows(pa, src, offs, Segments{Len: 0, Stride: 3}, 0, 20, c, 20, nil)
		}},
		{"negative stride", "-1 apart", func() error {
			return GemmPackedRows(pa, src, offs, Segments{Len: 10, Stride: -1}, 0, 20, c, 20, nil)
		}},
		{"ldc", "leading dimension 19 < 20", func() error {
			return GemmPackedRows(pa, src, offs, seg, 0, 20, c, 19, nil)
		}},
		{"c short", "c: 119 elements", func() error {
			return GemmPackedRows(pa, src, offs, seg, 0, 20, c[:119], 20, nil)
		}},
		{"src short", "outside src of 25 elements", func() error {
			return GemmPackedRows(pa, src[:25], offs, seg, 0, 20, c, 20, nil)
		}},
		{"negative offset", "offsets [-1, 4]", func() error {
			return GemmPackedRows(pa, src, NewPanelRows([]int{0, -1, 2, 3, 4}), seg, 0, 20, c, 20, nil)
		}},
		{"stride overflow", "outside src", func() error {
			return GemmPackedRows(pa, src, offs, Segments{Len: 1, Stride: math.MaxInt / 2}, 0, 20, c, 20, nil)
		}},
	} {
		for i := range c {
			c[i] = 7
		}
		err := e.call()
		if err == nil || !strings.Contains(err.Error(), e.want) {
			t.Errorf("%s: error %v, want one containing %q", e.name, err, e.want)
		}
		for i, v := range c {
			if v != 7 {
				t.Fatalf("%s: C[%d] written", e.name, i)
			}
		}
	}
}
