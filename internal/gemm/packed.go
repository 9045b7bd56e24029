package gemm

import "fmt"

// PackedA is a left operand A [m, k] (row-major) packed once, as Gemm
// packs it, for many products A·B with different B (GemmPackedA):
// Winograd's U_ξ, the same for every block of tiles of a convolution.
// Its buffer comes from the package's keeper; Release gives it back.
type PackedA[T Float] struct {
	im      impl[T]
	m, k    int
	mc, pad int // rows packed at a time (Gemm's MC); m rounded up to MR
	buf     []T // K block pc (starting at column pc) at pc·pad, its row block ic at pc·pad + ic·kb
}

// PackA packs a [m, k] (leading dimension lda ≥ max(1, k)) for
// GemmPackedA with the micro-kernel Gemm runs now. It returns an error
// for negative sizes or a slice too short (Check's).
func PackA[T Float](m, k int, a []T, lda int) (*PackedA[T], error) {
	return packA2(false, m, k, a, lda)
}

// PackAT is PackA of a transposed operand: A [m, k] = aᵀ for a [k, m]
// (leading dimension lda ≥ max(1, m)), packed as Gemm packs it with
// transA, for GemmPackedA (bitwise Gemm(true, false, ...)'s products).
func PackAT[T Float](m, k int, a []T, lda int) (*PackedA[T], error) {
	return packA2(true, m, k, a, lda)
}

// packA2 is PackA (trans false) and PackAT.
func packA2[T Float](trans bool, m, k int, a []T, lda int) (*PackedA[T], error) {
	if err := Check(trans, false, m, 1, k, len(a), lda, k, 1, m, 1); err != nil {
		return nil, err
	}
	im := pick[T]()
	pa := &PackedA[T]{im: im, m: m, k: k, mc: mcOf(m, im.mr), pad: roundUp(m, im.mr)}
	pa.buf = keeperOf[T]().Get(pa.pad * k)
	kc := kcOf[T]()
	for pc := 0; pc < k; pc += kc {
		kb := min(kc, k-pc)
		for ic := 0; ic < m; ic += pa.mc {
			mb := min(pa.mc, m-ic)
			packABlock(pa.block(ic, mb, pc, kb), trans, a, lda, ic, mb, pc, kb, im.mr, 1)
		}
	}
	return pa, nil
}

// block is the packed rows [ic, ic+mb), columns [pc, pc+kb).
func (pa *PackedA[T]) block(ic, mb, pc, kb int) []T {
	return pa.buf[pc*pa.pad+ic*kb:][:roundUp(mb, pa.im.mr)*kb]
}

// check is an error for a nil or released pa and for a bias (nil: none)
// of other than m elements: GemmPackedA's and GemmFillPacked's checks.
func (pa *PackedA[T]) check(bias []T) error {
	if pa == nil || (pa.buf == nil && pa.pad*pa.k > 0) {
		return fmt.Errorf("gemm: packed A released or nil")
	}
	if bias != nil && len(bias) != pa.m {
		return fmt.Errorf("gemm: bias of %d elements for %d rows", len(bias), pa.m)
	}
	return nil
}

// Release gives pa's buffer back to the package's keeper; pa must not be
// used after it.
func (pa *PackedA[T]) Release() {
	if pa != nil && pa.buf != nil {
		keeperOf[T]().Put(pa.buf)
		pa.buf = nil
	}
}

// GemmPackedA computes C ← A·B (beta 0: C's values are not read) for the
// packed A [m, k], B [k, n] (ldb) and C [m, n] (ldc), bitwise what
// Gemm(false, false, m, n, k, 1, a, lda, b, ldb, 0, c, ldc) writes with
// the same micro-kernel; then, with bias [m] (nil: none), C[i][j] +=
// bias[i] on each block of C right after its products, while it is in
// cache (a convolution's bias): the bits of a pass of
// vmath.Axpb(c, c, 1, bias[i]) over each row. It returns an error for a
// released pa, negative n, leading dimensions too small, slices too short
// or a bias of other than m elements.
func GemmPackedA[T Float](pa *PackedA[T], n int, b []T, ldb int, c []T, ldc int, bias []T) error {
	if err := pa.check(bias); err != nil {
		return err
	}
	m, k := pa.m, pa.k
	if err := Check(false, false, m, n, k, pa.m*max(1, k), max(1, k), len(b), ldb, len(c), ldc); err != nil {
		return err
	}
	if m == 0 || n == 0 {
		return nil
	}
	if k == 0 {
		scaleC(m, n, 0, c, ldc)
		addRowBias(c, ldc, bias, n)
		return nil
	}
	p := &problem[T]{zeroC: true, im: pa.im, m: m, n: n, k: k, alpha: 1, b: b, ldb: ldb, c: c, ldc: ldc,
		kc: min(kcOf[T](), k), mc: pa.mc, pa: pa, bias: bias}
	p.run()
	return nil
}
