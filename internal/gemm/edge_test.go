package gemm

// Random products with edge kernels on and off (withoutEdges), bitwise:
// Gemm, GemmPackedA and GemmFill with segments, NaNs of random payloads,
// ±Inf, −0, denormals and large values in A, B and C, alpha and beta
// among 0, ±1, −0, NaN and +Inf.

import (
	"math"
	"math/rand/v2"
	"testing"
)

// specialSlice is n normals, with specials one in 40 when specials.
func specialSlice[T Float](r *rand.Rand, n int, specials bool) []T {
	s := make([]T, n)
	sp := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1e-40, 3e38}
	for i := range s {
		if specials && r.IntN(40) == 0 {
			v := sp[r.IntN(len(sp))]
			if math.IsNaN(v) { // vary the payload
				if _, ok := any(s[0]).(float32); ok {
					s[i] = T(math.Float32frombits(0x7fc00000 | uint32(r.IntN(1<<22)) | uint32(r.IntN(2))<<31))
					continue
				}
				f := math.Float64frombits(0x7ff8000000000000 | uint64(r.Int64N(1<<51)) | uint64(r.IntN(2))<<63)
				*(any(&s[i]).(*float64)) = f
				continue
			}
			s[i] = T(v)
			continue
		}
		s[i] = T(r.NormFloat64())
	}
	return s
}

// bitsEq is the first index where a and b differ in bits, or −1.
func bitsEq[T Float](a, b []T) int {
	for i := range a {
		switch x := any(a[i]).(type) {
		case float32:
			if math.Float32bits(x) != math.Float32bits(any(b[i]).(float32)) {
				return i
			}
		case float64:
			if math.Float64bits(x) != math.Float64bits(any(b[i]).(float64)) {
				return i
			}
		}
	}
	return -1
}

// edgesGemm checks iters random Gemm and GemmPackedA products.
func edgesGemm[T Float](t *testing.T, r *rand.Rand, iters int) {
	scal := []float64{0, 1, -1, 0.75, math.Copysign(0, -1), math.NaN(), math.Inf(1)}
	for it := 0; it < iters; it++ {
		m, n, k := 1+r.IntN(40), 1+r.IntN(70), 1+r.IntN(600)
		if r.IntN(4) == 0 {
			m = []int{4, 8, 16, 20, 28, 32, 36, 40}[r.IntN(8)]
		}
		tA, tB := r.IntN(2) == 1, r.IntN(2) == 1
		alpha, beta := T(scal[r.IntN(len(scal))]), T(scal[r.IntN(len(scal))])
		pad := r.IntN(3)
		specials := r.IntN(2) == 0
		ra, ca := m, k
		if tA {
			ra, ca = k, m
		}
		rb, cb := k, n
		if tB {
			rb, cb = n, k
		}
		lda, ldb, ldc := ca+pad, cb+pad, n+pad
		a := specialSlice[T](r, (ra-1)*lda+ca, specials)
		b := specialSlice[T](r, (rb-1)*ldb+cb, specials)
		c0 := specialSlice[T](r, (m-1)*ldc+n, specials)
		c1 := append([]T(nil), c0...)
		c2 := append([]T(nil), c0...)
		if err := Gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c1, ldc); err != nil {
			t.Fatal(err)
		}
		withoutEdges(func() {
			if err := Gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c2, ldc); err != nil {
				t.Fatal(err)
			}
		})
		if i := bitsEq(c1, c2); i >= 0 {
			t.Fatalf("%T m%d n%d k%d tA%v tB%v α%v β%v: C[%d] %v (edges) vs %v", T(0), m, n, k, tA, tB, alpha, beta, i, c1[i], c2[i])
		}
		// GemmPackedA, A packed with and without the edge kernels
		if !tA && !tB && specials {
			pa, err := PackA(m, k, a, lda)
			if err != nil {
				t.Fatal(err)
			}
			var pb *PackedA[T]
			withoutEdges(func() { pb, err = PackA(m, k, a, lda) })
			if err != nil {
				t.Fatal(err)
			}
			d1, d2 := append([]T(nil), c0...), append([]T(nil), c0...)
			if err := GemmPackedA(pa, n, b, ldb, d1, ldc, nil); err != nil {
				t.Fatal(err)
			}
			withoutEdges(func() { err = GemmPackedA(pb, n, b, ldb, d2, ldc, nil) })
			if err != nil {
				t.Fatal(err)
			}
			if i := bitsEq(d1, d2); i >= 0 {
				t.Fatalf("packedA %T m%d n%d k%d: C[%d] %v vs %v", T(0), m, n, k, i, d1[i], d2[i])
			}
			pa.Release()
			pb.Release()
		}
	}
}

// edgesFill checks iters random GemmFill products with segments.
func edgesFill[T Float](t *testing.T, r *rand.Rand, iters int) {
	nr := PanelWidth[T]()
	for it := 0; it < iters; it++ {
		m, n, k := 1+r.IntN(40), 1+r.IntN(140), 1+r.IntN(600)
		if r.IntN(3) == 0 {
			m = []int{4, 8, 16, 20, 28, 32}[r.IntN(6)]
		}
		segLen := []int{0, 3, 5, 17, 40, nr}[r.IntN(6)]
		beta := T(r.IntN(2))
		a := specialSlice[T](r, m*k, true)
		bt := specialSlice[T](r, n*k, true)
		ldc, seg := n+1, Segments{}
		segs := 1
		if segLen > 0 {
			ldc = segLen + 2
			seg = Segments{Len: segLen, Stride: (m-1)*ldc + segLen + 1}
			segs = (n + segLen - 1) / segLen
		}
		stride := max(seg.Stride, m*ldc)
		c0 := specialSlice[T](r, segs*stride, true)
		fillB := func(dst []T, pc, kb, j0, cols int) { Interleave(dst, nr, bt[j0*k+pc:], k, cols, kb) }
		fillA := func(dst []T, pc, kb int) { PackAColumns(dst, kb, 0, a[pc:], k, m, kb, false) }
		c1, c2 := append([]T(nil), c0...), append([]T(nil), c0...)
		if err := GemmFill(m, n, k, fillA, fillB, beta, c1, ldc, seg); err != nil {
			t.Fatal(err)
		}
		withoutEdges(func() {
			if err := GemmFill(m, n, k, fillA, fillB, beta, c2, ldc, seg); err != nil {
				t.Fatal(err)
			}
		})
		if i := bitsEq(c1, c2); i >= 0 {
			t.Fatalf("fill %T m%d n%d k%d seg%+v β%v: C[%d] %v vs %v", T(0), m, n, k, seg, beta, i, c1[i], c2[i])
		}
	}
}

// TestGemmEdgeKernelsRandom: see the top of the file.
func TestGemmEdgeKernelsRandom(t *testing.T) {
	ran := false
	for _, name := range []string{"avx512", "avx2"} {
		t.Run(name, func(t *testing.T) {
			force(t, name)
			if pick[float32]().name != name {
				t.Skip("no " + name)
			}
			ran = true
			r := rand.New(rand.NewPCG(11, 12))
			n, nf := 600, 200
			if testing.Short() {
				n, nf = 100, 40
			}
			edgesGemm[float32](t, r, n)
			edgesGemm[float64](t, r, n)
			edgesFill[float32](t, r, nf)
			edgesFill[float64](t, r, nf)
		})
	}
	if !ran {
		t.Skip("no kernel with edge kernels on this CPU")
	}
}

// nanPayload is a quiet NaN of T with a random payload and sign.
func nanPayload[T Float](r *rand.Rand) T {
	var z T
	if _, ok := any(z).(float32); ok {
		return T(math.Float32frombits(0x7fc00000 | uint32(r.IntN(1<<22)) | uint32(r.IntN(2))<<31))
	}
	var v T
	*(any(&v).(*float64)) = math.Float64frombits(0x7ff8000000000000 | uint64(r.Int64N(1<<51)) | uint64(r.IntN(2))<<63)
	return v
}
