package gemm

import (
	"fmt"

	"github.com/gops-dev/gops/internal/par"
)

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
	if m == 0 || k == 0 {
		return pa, nil
	}
	// The row blocks on the workers: a convolution's weight is packed
	// once a call, before its products start (1×1 256 → 1024: 1 MiB, 2 %
	// of the forward, with the other worker waiting).
	blocks := (m + pa.mc - 1) / pa.mc
	par.ForWork(blocks, m*k, func(lo, hi int) {
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			for ic := lo * pa.mc; ic < min(m, hi*pa.mc); ic += pa.mc {
				mb := min(pa.mc, m-ic)
				packABlock(pa.block(ic, mb, pc, kb), trans, a, lda, ic, mb, pc, kb, im.mr, 1)
			}
		}
	})
	return pa, nil
}

// noSums does a beta-0 product C [m, n] (ldc) with no sums to compute
// and reports whether it was one: m or n 0 (nothing to write) or k 0
// (C ← 0, then the bias [m], nil for none, as GemmPackedA adds it).
func noSums[T Float](m, n, k int, c []T, ldc int, bias []T) bool {
	if m == 0 || n == 0 {
		return true
	}
	if k == 0 {
		scaleC(m, n, 0, c, ldc)
		addRowBias(c, ldc, bias, n)
		return true
	}
	return false
}

// block is the packed rows [ic, ic+mb), columns [pc, pc+kb).
func (pa *PackedA[T]) block(ic, mb, pc, kb int) []T {
	return pa.buf[pc*pa.pad+ic*kb:][:roundUp(mb, pa.im.mr)*kb]
}

// check is an error for a nil or released pa and for a bias (nil: none)
// of other than m elements: the checks of GemmPackedA, GemmPackedASegments and GemmPackedRows.
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
	if noSums(m, n, k, c, ldc, bias) {
		return nil
	}
	p := &problem[T]{zeroC: true, im: pa.im, m: m, n: n, k: k, alpha: 1, b: b, ldb: ldb, c: c, ldc: ldc,
		kc: min(kcOf[T](), k), mc: pa.mc, pa: pa, bias: bias}
	p.run()
	return nil
}

// GemmPackedASegments computes columns [j0, j1) of C ← A·B (beta 0) for
// the packed A [m, k] with B [k, n] and C [m, n] in segments: column j of
// B is column j mod bseg.Len of the segment at b[(j/bseg.Len)·bseg.Stride:]
// (rows ldb apart), and column j of C likewise in cseg (see Segments; the
// zero Segments is one piece). It is a batch's products side by side
// along n (a pointwise convolution's samples, each [k, L] in its own
// place): one product of n columns instead of one a sample, whose last
// panel narrower than NR costs a whole panel's time (1×1 at 14×14, 196 =
// 6·32 + 4 positions: a tenth of the product on the AVX-512 kernels),
// panels that cross from one segment into the next packed from both and
// stored in both (macroSegments: by masked stores on AVX-512, else
// through a full tile). It runs on the calling
// goroutine alone (a caller splits the columns over goroutines) and
// writes only C's columns [j0, j1), each element, with bias [m] (nil:
// none) added as in GemmPackedA, bitwise what GemmPackedA writes for its
// segment alone with the same micro-kernel. It returns an error for a
// released pa, negative n, columns outside [0, n], segments of fewer than
// one column or a negative stride, leading dimensions too small, segments
// that overlap or slices too short (each named), or a bias of other than
// m elements.
func GemmPackedASegments[T Float](pa *PackedA[T], n int, b []T, ldb int, bseg Segments, c []T, ldc int, cseg Segments, bias []T, j0, j1 int) error {
	if err := pa.check(bias); err != nil {
		return err
	}
	m, k := pa.m, pa.k
	if n < 0 || j0 < 0 || j1 < j0 || j1 > n {
		return fmt.Errorf("gemm: columns [%d, %d) of a product of %d", j0, j1, n)
	}
	if bseg == (Segments{}) {
		bseg = Segments{Len: max(1, n)}
	}
	if cseg == (Segments{}) {
		cseg = Segments{Len: max(1, n)}
	}
	if err := checkSegments("b", k, n, m, b, ldb, bseg); err != nil {
		return err
	}
	if err := checkSegments("c", m, n, k, c, ldc, cseg); err != nil {
		return err
	}
	if m == 0 || j0 == j1 {
		return nil
	}
	if k == 0 {
		eachSegment(j0, j1-j0, cseg, func(_, w, at int) {
			scaleC(m, w, 0, c[at:], ldc)
			addRowBias(c[at:], ldc, bias, w)
		})
		return nil
	}
	nr := pa.im.nr
	// B always packed (direct false): macroPieces hands macro a column
	// offset from C's segment, not from b.
	p := &problem[T]{zeroC: true, im: pa.im, m: m, n: n, k: k, alpha: 1, b: b, ldb: ldb, c: c, ldc: ldc,
		kc: min(kcOf[T](), k), mc: pa.mc, pa: pa, bias: bias, direct: false}
	nc := min(ncCols/nr*nr, roundUp(j1-j0, nr))
	s := p.getScratch(0, p.kc*nc)
	defer putScratch(&s)
	for jc := j0; jc < j1; jc += nc {
		nb := min(nc, j1-jc)
		for pc := 0; pc < k; pc += p.kc {
			kb := min(p.kc, k-pc)
			p.packBSegments(s.b, b, bseg, pc, kb, jc, nb)
			for ic := 0; ic < m; ic += p.mc {
				mb := min(p.mc, m-ic)
				p.macroPieces(&s, pa.block(ic, mb, pc, kb), ic, mb, pc, kb, jc, nb, s.b, c, cseg)
			}
		}
	}
	return nil
}

// packBSegments packs B[pc:pc+kb, jc:jc+nb] (B's columns in seg within b)
// into bufB as packBPanels does: the full panels inside one segment by
// packBPanels on that segment, the others (crossing into the next
// segment, or narrower than NR) piece by piece, zeros after the last.
func (p *problem[T]) packBSegments(bufB, b []T, seg Segments, pc, kb, jc, nb int) {
	nr := p.im.nr
	for jr := 0; jr < nb; {
		col := jc + jr
		sg, off := col/seg.Len, col%seg.Len
		if full := min(seg.Len-off, nb-jr) / nr; full > 0 {
			p.b = b[sg*seg.Stride:]
			p.packBPanels(bufB[jr*kb:], pc, kb, off, full*nr, 0, full)
			jr += full * nr
			continue
		}
		nw := min(nr, nb-jr)
		dst := bufB[jr*kb : (jr+nr)*kb]
		if nw < nr {
			clear(dst)
		}
		eachSegment(col, nw, seg, func(j, w, at int) {
			for r := 0; r < kb; r++ {
				copy(dst[r*nr+j:r*nr+j+w], b[at+(pc+r)*p.ldb:][:w])
			}
		})
		jr += nw
	}
	p.b = b
}

// macroPieces is macro over rows [ic, ic+mb) of C's columns [jc, jc+nb)
// in seg within c (B packed in bufB from column jc): the panels inside
// one segment by macro on that segment, each panel that crosses into the
// next by macroSegments.
func (p *problem[T]) macroPieces(s *scratch[T], a []T, ic, mb, pc, kb, jc, nb int, bufB, c []T, seg Segments) {
	nr := p.im.nr
	for jr := 0; jr < nb; {
		col := jc + jr
		sg, off := col/seg.Len, col%seg.Len
		end := jr + min(seg.Len-off, nb-jr) // the end of the segment's columns
		if whole := jr + (end-jr)/nr*nr; end == nb || whole > jr {
			if end < nb {
				end = whole // the panel that crosses into the next segment comes next
			}
			p.c = c[sg*seg.Stride:]
			p.macro(s, a, ic, mb, pc, kb, off-jr, jr, end, bufB) // C's column off + (j − jr) for panel column j
			jr = end
			continue
		}
		nw := min(nr, nb-jr)
		p.macroSegments(s, a, ic, mb, pc, kb, col, nw, bufB[jr*kb:], c, seg)
		jr += nw
	}
	p.c = c
}
