package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
)

// force makes every product use the kernel called name until the test ends.
func force(t *testing.T, name string) {
	t.Helper()
	forced.Store(name)
	t.Cleanup(func() { forced.Store("") })
}

// eachKernel runs f as a subtest per kernel, that kernel forced.
func eachKernel(t *testing.T, f func(t *testing.T)) {
	for _, name := range kernelNames() {
		t.Run(name, func(t *testing.T) {
			force(t, name)
			f(t)
		})
	}
}

func kernelNames() []string {
	var ns []string
	for _, k := range impls32 {
		ns = append(ns, k.name)
	}
	return ns
}

// refGemm is the product in float64, element by element: the reference BLAS
// loop without its shortcuts except those the BLAS defines (beta = 0 does not
// read C; alpha = 0 reads neither A nor B).
func refGemm[T Float](tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) []float64 {
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			if alpha != 0 {
				for p := 0; p < k; p++ {
					var av, bv T
					if tA {
						av = a[p*lda+i]
					} else {
						av = a[i*lda+p]
					}
					if tB {
						bv = b[j*ldb+p]
					} else {
						bv = b[p*ldb+j]
					}
					s += float64(av) * float64(bv)
				}
			}
			v := float64(alpha) * s
			if beta != 0 {
				v += float64(beta) * float64(c[i*ldc+j])
			}
			out[i*n+j] = v
		}
	}
	return out
}

type gemmCase struct {
	tA, tB      bool
	m, n, k     int
	alpha, beta float64
	pad         int // extra leading-dimension columns
}

func (g gemmCase) String() string {
	return fmt.Sprintf("tA=%v,tB=%v,m=%d,n=%d,k=%d,α=%g,β=%g,pad=%d", g.tA, g.tB, g.m, g.n, g.k, g.alpha, g.beta, g.pad)
}

func randSlice[T Float](r *rand.Rand, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = T(r.Float64()*2 - 1)
	}
	return s
}

// stored is the stored shapes of A and B (rows, columns) and the three
// leading dimensions of case g.
func (g gemmCase) stored() (ra, ca, rb, cb, lda, ldb, ldc int) {
	ra, ca = g.m, g.k
	if g.tA {
		ra, ca = g.k, g.m
	}
	rb, cb = g.k, g.n
	if g.tB {
		rb, cb = g.n, g.k
	}
	return ra, ca, rb, cb, max(1, ca+g.pad), max(1, cb+g.pad), max(1, g.n+g.pad)
}

// operands builds A, B, C for g (C's padding filled with a sentinel).
func operands[T Float](r *rand.Rand, g gemmCase) (a []T, lda int, b []T, ldb int, c []T, ldc int) {
	ra, _, rb, _, lda, ldb, ldc := g.stored()
	a = randSlice[T](r, ra*lda)
	b = randSlice[T](r, rb*ldb)
	c = randSlice[T](r, g.m*ldc)
	return
}

// sizes around every blocking factor and tile edge, primes and 1.
var edgeSizes = []int{1, 2, 3, 5, 6, 7, 11, 12, 13, 16, 17, 31, 32, 33, 95, 96, 97, 127, 128, 129, 255, 256, 257}

func randomCases(r *rand.Rand, n int) []gemmCase {
	var cs []gemmCase
	scal := []float64{0, 1, -0.5, 2.25}
	for i := 0; i < n; i++ {
		pick := func() int { return edgeSizes[r.IntN(len(edgeSizes))] }
		cs = append(cs, gemmCase{
			tA: r.IntN(2) == 1, tB: r.IntN(2) == 1,
			m: pick(), n: pick(), k: pick(),
			alpha: scal[r.IntN(4)], beta: scal[r.IntN(4)], pad: r.IntN(3) * 3,
		})
	}
	// every transpose case at sizes above KC and MC.
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			cs = append(cs, gemmCase{tA: tA, tB: tB, m: 197, n: 131, k: 301, alpha: 1.5, beta: 0.5, pad: 1})
		}
	}
	return cs
}

func checkCase[T Float](t *testing.T, r *rand.Rand, g gemmCase, tol float64) []T {
	a, lda, b, ldb, c, ldc := operands[T](r, g)
	want := refGemm(g.tA, g.tB, g.m, g.n, g.k, T(g.alpha), a, lda, b, ldb, T(g.beta), c, ldc)
	pad := append([]T(nil), c...)
	if err := Gemm(g.tA, g.tB, g.m, g.n, g.k, T(g.alpha), a, lda, b, ldb, T(g.beta), c, ldc); err != nil {
		t.Fatalf("%v: %v", g, err)
	}
	for i := 0; i < g.m; i++ {
		for j := 0; j < ldc; j++ {
			got := float64(c[i*ldc+j])
			if j >= g.n {
				if c[i*ldc+j] != pad[i*ldc+j] {
					t.Fatalf("%v: C[%d,%d] beyond n changed", g, i, j)
				}
				continue
			}
			// tolerance relative to Σ|a||b|, bounded by k.
			bound := tol * float64(g.k+1) * (math.Abs(g.alpha) + math.Abs(g.beta) + 1)
			if d := math.Abs(got - want[i*g.n+j]); !(d <= bound) {
				t.Fatalf("%v: C[%d,%d] = %v, want %v (|diff| %g > %g)", g, i, j, got, want[i*g.n+j], d, bound)
			}
		}
	}
	return c
}

func TestGemmMatchesReference(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		cases := randomCases(r, 60)
		if testing.Short() {
			cases = cases[:20]
		}
		for _, g := range cases {
			checkCase[float32](t, r, g, 2e-7)
			checkCase[float64](t, r, g, 1e-15)
		}
	})
}

// The amd64 kernels and every thread count give bitwise the same C; the
// portable kernel does too in float64.
func TestGemmBitwiseAcrossKernelsAndThreads(t *testing.T) {
	g := gemmCase{m: 203, n: 157, k: 611, alpha: 1.25, beta: -0.75, pad: 2}
	for _, tr := range []struct{ tA, tB bool }{{false, false}, {true, true}} {
		g.tA, g.tB = tr.tA, tr.tB
		var ref32 []float32
		var ref64 []float64
		for _, name := range kernelNames() {
			for _, procs := range []int{1, 2, 3, 8} {
				force(t, name)
				old := runtime.GOMAXPROCS(procs)
				c32 := checkCase[float32](t, rand.New(rand.NewPCG(3, 4)), g, 2e-7)
				c64 := checkCase[float64](t, rand.New(rand.NewPCG(3, 4)), g, 1e-15)
				runtime.GOMAXPROCS(old)
				if ref64 == nil {
					ref32, ref64 = c32, c64
					continue
				}
				for i := range c64 {
					if math.Float64bits(c64[i]) != math.Float64bits(ref64[i]) {
						t.Fatalf("%v float64 kernel %s GOMAXPROCS %d: C[%d] = %v, first kernel %v", g, name, procs, i, c64[i], ref64[i])
					}
				}
				if name == "go" {
					continue
				}
				for i := range c32 {
					if math.Float32bits(c32[i]) != math.Float32bits(ref32[i]) {
						t.Fatalf("%v float32 kernel %s GOMAXPROCS %d: C[%d] = %v, first kernel %v", g, name, procs, i, c32[i], ref32[i])
					}
				}
			}
		}
	}
}

// NaN and Inf propagate as in the reference BLAS: 0·NaN is NaN, beta = 0
// ignores a NaN in C, alpha = 0 ignores NaN in A and B.
func TestGemmNaNInf(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		nan := math.NaN()
		// A = [0 1], B = [NaN; 2]: 0·NaN + 1·2 = NaN.
		c := []float64{5}
		if err := Gemm(false, false, 1, 1, 2, 1, []float64{0, 1}, 2, []float64{nan, 2}, 1, 0, c, 1); err != nil || !math.IsNaN(c[0]) {
			t.Fatalf("0·NaN: got %v, %v; want NaN", c[0], err)
		}
		c = []float64{nan}
		if err := Gemm(false, false, 1, 1, 2, 1, []float64{3, 1}, 2, []float64{1, 2}, 1, 0, c, 1); err != nil || c[0] != 5 {
			t.Fatalf("beta=0 with NaN in C: got %v, %v; want 5", c[0], err)
		}
		c = []float64{4}
		if err := Gemm(false, false, 1, 1, 2, 0, []float64{nan, 1}, 2, []float64{1, nan}, 1, 0.5, c, 1); err != nil || c[0] != 2 {
			t.Fatalf("alpha=0 with NaN in A, B: got %v, %v; want 2", c[0], err)
		}
		c32 := []float32{0}
		inf := float32(math.Inf(1))
		if err := Gemm(false, false, 1, 1, 2, 1, []float32{inf, 1}, 2, []float32{1, -inf}, 1, 0, c32, 1); err != nil || !math.IsNaN(float64(c32[0])) {
			t.Fatalf("Inf - Inf: got %v, %v; want NaN", c32[0], err)
		}
	})
}

func TestGemmErrors(t *testing.T) {
	s := make([]float32, 100)
	for _, c := range []struct {
		name                   string
		m, n, k, lda, ldb, ldc int
		a, b, cs               []float32
		want                   string
	}{
		{"negative m", -1, 2, 2, 2, 2, 2, s, s, s, "negative size"},
		{"lda too small", 3, 3, 4, 3, 3, 3, s, s, s, "a: leading dimension 3 < 4"},
		{"ldc too small", 3, 5, 4, 4, 5, 4, s, s, s, "c: leading dimension 4 < 5"},
		{"a short", 3, 3, 4, 4, 3, 3, s[:10], s, s, "a: 10 elements for 3×4"},
		{"b short", 3, 3, 4, 4, 3, 3, s, s[:11], s, "b: 11 elements for 4×3"},
		{"c short", 3, 3, 4, 4, 3, 3, s, s, s[:8], "c: 8 elements for 3×3"},
	} {
		err := Gemm(false, false, c.m, c.n, c.k, 1, c.a, c.lda, c.b, c.ldb, 0, c.cs, c.ldc)
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// guarded returns a slice of exactly n elements whose backing array goes on
// with guard elements, and a check that they are untouched (the assembly
// kernels write through pointers, past any Go bounds check).
func guarded[T Float](r *rand.Rand, n int) ([]T, func() bool) {
	const guard = 256
	back := randSlice[T](r, n+guard)
	for i := n; i < len(back); i++ {
		back[i] = 12345
	}
	return back[:n:n], func() bool {
		for _, v := range back[n:] {
			if v != 12345 {
				return false
			}
		}
		return true
	}
}

// Slices exactly as long as the arguments need, with nothing written or read
// outside the logical matrices (the guards after C stay, the padding columns
// of C stay).
func TestGemmMinimalSlices(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		sizes := append([]int{0}, edgeSizes[:14]...)
		for it := 0; it < 150; it++ {
			g := gemmCase{
				tA: r.IntN(2) == 1, tB: r.IntN(2) == 1,
				m: sizes[r.IntN(len(sizes))], n: sizes[r.IntN(len(sizes))], k: sizes[r.IntN(len(sizes))],
				alpha: 1.5, beta: 0.5, pad: r.IntN(3) * 5,
			}
			ra, ca, rb, cb, lda, ldb, ldc := g.stored()
			minLen := func(rows, cols, ld int) int {
				if rows == 0 || cols == 0 {
					return 0
				}
				return (rows-1)*ld + cols
			}
			a, _ := guarded[float32](r, minLen(ra, ca, lda))
			b, _ := guarded[float32](r, minLen(rb, cb, ldb))
			c, ok := guarded[float32](r, minLen(g.m, g.n, ldc))
			before := append([]float32(nil), c...)
			want := refGemm(g.tA, g.tB, g.m, g.n, g.k, float32(g.alpha), a, lda, b, ldb, float32(g.beta), c, ldc)
			if err := Gemm(g.tA, g.tB, g.m, g.n, g.k, float32(g.alpha), a, lda, b, ldb, float32(g.beta), c, ldc); err != nil {
				t.Fatalf("%v: %v", g, err)
			}
			if !ok() {
				t.Fatalf("%v: wrote past the end of C", g)
			}
			for i := range c {
				row, col := i/ldc, i%ldc
				if col >= g.n {
					if c[i] != before[i] {
						t.Fatalf("%v: C padding [%d,%d] changed", g, row, col)
					}
					continue
				}
				if d := math.Abs(float64(c[i]) - want[row*g.n+col]); d > 1e-4*float64(g.k+1) {
					t.Fatalf("%v: C[%d,%d] = %v, want %v", g, row, col, c[i], want[row*g.n+col])
				}
			}
		}
	})
}

// A leading dimension so large that (rows-1)·ld overflows is an error, not a
// write through the kernels' pointers.
func TestGemmHugeLeadingDimension(t *testing.T) {
	c := make([]float32, 40)
	lds := []int{math.MaxInt}
	if strconv.IntSize == 64 {
		// 11·ldc and 5·ldc wrap around to small numbers (variables, so that
		// 32-bit builds compile).
		wrap11, wrap5 := uint64(7378697629483820647), uint64(3353953467947191203)
		lds = append(lds, int(wrap11), int(wrap5))
	}
	for _, ldc := range lds {
		err := Gemm(false, false, 12, 32, 1, 1, make([]float32, 12), 1, make([]float32, 32), 32, 1, c, ldc)
		if err == nil || !contains(err.Error(), "c: 40 elements for 12×32") {
			t.Errorf("ldc %d: err %v, want the short-slice error", ldc, err)
		}
	}
}

// Edge tiles compute like full ones: -0 + -0 stays -0, and a NaN's payload
// is chosen alike by every amd64 kernel.
func TestGemmEdgeTilesSignedZeroAndNaNPayload(t *testing.T) {
	nan1, nan2 := math.Float32frombits(0x7fc00001), math.Float32frombits(0x7fc00002)
	var first []uint32
	for _, name := range kernelNames() {
		force(t, name)
		for _, m := range []int{1, 4, 6, 8, 12, 13, 16, 20} {
			n := 16
			a := make([]float32, m)
			b := make([]float32, n)
			c := make([]float32, m*n)
			for i := range a {
				a[i] = 1e-30
			}
			for j := range b {
				b[j] = -1e-30
			}
			for i := range c {
				c[i] = float32(math.Copysign(0, -1))
			}
			if err := Gemm(false, false, m, n, 1, 1, a, 1, b, n, 1, c, n); err != nil {
				t.Fatal(err)
			}
			for i, v := range c {
				if math.Float32bits(v) != 0x80000000 {
					t.Fatalf("%s m=%d: C[%d] = %x, want -0", name, m, i, math.Float32bits(v))
				}
			}
		}
		if name == "go" {
			continue
		}
		a, b, c := []float32{nan1}, []float32{nan2}, []float32{0}
		if err := Gemm(false, false, 1, 1, 1, 1, a, 1, b, 1, 0, c, 1); err != nil {
			t.Fatal(err)
		}
		got := []uint32{math.Float32bits(c[0])}
		if first == nil {
			first = got
		} else if got[0] != first[0] {
			t.Fatalf("%s: NaN·NaN = %x, first kernel %x", name, got[0], first[0])
		}
	}
}

// interleave (the packing transpose, in AVX registers where the CPU has
// AVX2) writes exactly alpha·x for every element, -0 and NaN included,
// and nothing outside the panel's rows.
func TestInterleave(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ rows, kb, st, p0 int }{{8, 8, 8, 0}, {12, 256, 12, 3}, {7, 9, 8, 1}, {16, 17, 32, 0}, {32, 64, 32, 5}, {5, 3, 6, 0}} {
		for _, alpha := range []float64{1, -0.5} {
			testInterleave[float32](t, r, c.rows, c.kb, c.st, c.p0, float32(alpha))
			testInterleave[float64](t, r, c.rows, c.kb, c.st, c.p0, alpha)
		}
	}
}

func testInterleave[T Float](t *testing.T, r *rand.Rand, rows, kb, st, p0 int, alpha T) {
	t.Helper()
	ld := p0 + kb + 2
	x := randSlice[T](r, (rows+1)*ld)
	x[ld+p0] = T(math.Copysign(0, -1))
	x[2*ld+p0+1] = T(math.NaN())
	sentinel := T(12345)
	dst := make([]T, kb*st+st)
	for i := range dst {
		dst[i] = sentinel
	}
	interleave(dst, st, x, ld, 1, rows, p0, kb, alpha)
	for p := 0; p < kb; p++ {
		for j := 0; j < st; j++ {
			got := dst[p*st+j]
			if j >= rows {
				if got != sentinel {
					t.Fatalf("rows %d kb %d st %d: dst[%d·st+%d] written", rows, kb, st, p, j)
				}
				continue
			}
			want := alpha * x[(1+j)*ld+p0+p]
			if math.Float64bits(float64(got)) != math.Float64bits(float64(want)) {
				t.Fatalf("%T rows %d kb %d st %d: dst[%d·st+%d] = %v, want %v", got, rows, kb, st, p, j, got, want)
			}
		}
	}
	for _, v := range dst[kb*st:] {
		if v != sentinel {
			t.Fatalf("rows %d kb %d st %d: written past the panel", rows, kb, st)
		}
	}
}

// withoutEdges runs f with the kernels' edge and half-width kernels switched off: every
// row block and every panel run the whole tile.
func withoutEdges(f func()) {
	e32, e64 := make([][2][]edge[float32], len(impls32)), make([][2][]edge[float64], len(impls64))
	for i := range impls32 {
		e32[i] = [2][]edge[float32]{impls32[i].edges, impls32[i].halves}
		impls32[i].edges, impls32[i].halves = nil, nil
	}
	for i := range impls64 {
		e64[i] = [2][]edge[float64]{impls64[i].edges, impls64[i].halves}
		impls64[i].edges, impls64[i].halves = nil, nil
	}
	defer func() {
		for i := range impls32 {
			impls32[i].edges, impls32[i].halves = e32[i][0], e32[i][1]
		}
		for i := range impls64 {
			impls64[i].edges, impls64[i].halves = e64[i][0], e64[i][1]
		}
	}()
	f()
}

// TestGemmEdgeKernels: the edge kernels (the last row block of a product
// computed on 4 or 8 rows instead of the whole tile) give bitwise the
// whole tile's C, for every remainder of m by MR, on full and partial
// panels, one K block and several, beta 0 and not, packed and in-place B.
func TestGemmEdgeKernels(t *testing.T) {
	edges := 0
	for _, k := range impls32 {
		edges += len(k.edges)
	}
	if edges == 0 {
		t.Skip("no kernel with edge kernels on this CPU")
	}
	eachKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for m := 1; m <= 26; m++ {
			for _, n := range []int{5, 32, 45, 200} {
				for _, k := range []int{1, 9, 300} {
					g := gemmCase{tA: m%3 == 0, tB: n == 45, m: m, n: n, k: k, alpha: 1.25, beta: float64(m % 2), pad: m % 3}
					seed := r.Uint64()
					c32 := checkCase[float32](t, rand.New(rand.NewPCG(seed, 1)), g, 2e-7)
					c64 := checkCase[float64](t, rand.New(rand.NewPCG(seed, 1)), g, 1e-15)
					withoutEdges(func() {
						w32 := checkCase[float32](t, rand.New(rand.NewPCG(seed, 1)), g, 2e-7)
						w64 := checkCase[float64](t, rand.New(rand.NewPCG(seed, 1)), g, 1e-15)
						for i := range w32 {
							if math.Float32bits(c32[i]) != math.Float32bits(w32[i]) {
								t.Fatalf("%v float32: C[%d] = %v with edge kernels, %v without", g, i, c32[i], w32[i])
							}
						}
						for i := range w64 {
							if math.Float64bits(c64[i]) != math.Float64bits(w64[i]) {
								t.Fatalf("%v float64: C[%d] = %v with edge kernels, %v without", g, i, c64[i], w64[i])
							}
						}
					})
				}
			}
		}
	})
}
