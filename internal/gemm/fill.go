package gemm

import (
	"fmt"
	"unsafe"
)

// FillB writes one panel of a right operand B [k, n] that GemmFillB asks
// for: rows [pc, pc+kb) and columns [j0, j0+cols) (cols ≤ PanelWidth) as
// dst[p·NR+j] for p < kb, j < cols, NR = PanelWidth. dst holds kb·NR
// elements; the columns from cols to NR are already 0 and must stay so.
type FillB[T Float] func(dst []T, pc, kb, j0, cols int)

// PanelWidth is NR, the columns of B in one packed panel, of the
// micro-kernel products of T use now.
func PanelWidth[T Float]() int { return pick[T]().nr }

// TileRows is MR, the rows of C in one micro-kernel tile, of the
// micro-kernel products of T use now.
func TileRows[T Float]() int { return pick[T]().mr }

// Interleave writes dst[p·st+j] = src[j·ld+p] for j < rows, p < kb: rows
// of src become the columns of a panel (B's packing for a transposed B,
// a FillB's tool). It panics, as slicing does, when dst or src is too
// short.
func Interleave[T Float](dst []T, st int, src []T, ld, rows, kb int) {
	if rows == 0 || kb == 0 {
		return
	}
	_ = dst[(kb-1)*st+rows-1]
	_ = src[(rows-1)*ld+kb-1]
	interleave(dst, st, src, ld, 0, rows, 0, kb, 1)
}

// InterleaveRows is Interleave with each row from its own slice:
// dst[p·st+j] = rows[j][p] for j < len(rows), p < kb (a FillB's tool for
// rows that lie apart at no one stride: a convolution's column rows read
// in place from shifted input planes). Each element is Interleave's (the
// product by 1 that packing makes). st is at least len(rows) (a panel's
// rows do not overlap). It panics, as slicing does, when dst or a row is
// too short.
func InterleaveRows[T Float](dst []T, st int, rows [][]T, kb int) {
	if len(rows) == 0 || kb == 0 {
		return
	}
	_ = dst[(kb-1)*st+len(rows)-1]
	for _, r := range rows {
		_ = r[kb-1]
	}
	j := 0
	if vr := interleaveRows[T](); vr > 0 && kb >= vr {
		kv := kb / vr * vr
		for ; j+vr <= len(rows); j += vr {
			interleavePtrsBlock(dst[j:(kv-1)*st+j+vr], st, rows[j:j+vr], kv)
			for r, row := range rows[j : j+vr] {
				if kv < kb {
					interleave(dst[kv*st+j+r:], st, row[kv:], 0, 0, 1, 0, kb-kv, 1)
				}
			}
		}
	}
	for ; j < len(rows); j++ {
		interleave(dst[j:], st, rows[j], 0, 0, 1, 0, kb, 1)
	}
}

// FillA writes a K block of a left operand A [m, k] that GemmFill asks
// for: columns [pc, pc+kb) of every row, packed as the micro-kernel reads
// them, into dst of roundUp(m, MR)·kb elements; PackAColumns writes a part of A
// held in memory that way.
type FillA[T Float] func(dst []T, pc, kb int)

// PackAColumns writes columns [0, w) of A [m, ·] as columns [p0, p0+w)
// of a K block of kb columns that a FillA fills: MR-row panels, panel q at
// dst[q·MR·kb:], element (p, i) at p·MR + i, the rows past m 0. A is a
// row-major (lda), or, when trans, the transpose of a (a [·, m] with
// lda: A[i][p] = a[p·lda + i]). It panics, as slicing does, when dst or a
// is too short.
func PackAColumns[T Float](dst []T, kb, p0 int, a []T, lda, m, w int, trans bool) {
	mr := pick[T]().mr
	for r0 := 0; r0 < m; r0 += mr {
		panel := dst[r0*kb+p0*mr : r0*kb+(p0+w)*mr]
		rows := min(mr, m-r0)
		if trans {
			if rows == mr && (mr == 12 || mr == 6) && w > 0 && lda >= mr { // the AVX-512 and AVX2 kernels' full panels, rows apart
				_, _, _ = panel[(w-1)*mr+mr-1], a[r0], a[(w-1)*lda+r0+mr-1]
				copyRows(unsafe.Pointer(&panel[0]), unsafe.Pointer(&a[r0]), lda*int(unsafe.Sizeof(a[0])), w, mr, int(unsafe.Sizeof(a[0])))
				continue
			}
			for p := 0; p < w; p++ {
				copy(panel[p*mr:p*mr+rows], a[p*lda+r0:][:rows])
			}
		} else {
			interleave(panel, mr, a, lda, r0, rows, 0, w, 1)
		}
		for p := 0; rows < mr && p < w; p++ {
			clear(panel[p*mr+rows : (p+1)*mr])
		}
	}
}

// Segments lays out an operand's columns in segments: column j of C is
// column j mod Len of segment j / Len, which starts at c[(j/Len)·Stride]
// (its rows ldc apart), and likewise B's for GemmPackedASegments: the
// products of a batch side by side along n, each read and written in its
// own place (a convolution's samples, Len positions each). The zero
// Segments is the operand in one piece.
type Segments struct{ Len, Stride int }

// GemmFill computes C ← A·B + beta·C, beta 0 or 1, with A m×k and B k×n
// packed by fillA one K block at a time and by fillB one panel at a time
// (see FillA, FillB), never held whole, and C m×n (ldc, laid out in seg):
// a caller builds them from data of other layouts (a convolution's
// weight, gradient and columns, several samples' side by side along n or
// k) while they are in cache. It runs on the calling goroutine alone (a
// caller splits C over goroutines). Every element of C is Gemm's chain:
// K blocks of BlockK in order, each block's sum of FMAs from +0 added to C
// once (the first overwriting it when beta is 0), so C is bitwise what
// Gemm(false, false, m, n, k, 1, A, k, B, n, beta, c, ldc) writes with
// the same micro-kernel, segment by segment. It returns an error for a
// beta other than 0 and 1, negative sizes, ldc too small, segments that
// overlap or c too short.
func GemmFill[T Float](m, n, k int, fillA FillA[T], fillB FillB[T], beta T, c []T, ldc int, seg Segments) error {
	if beta != 0 && beta != 1 {
		return fmt.Errorf("gemm: GemmFill: beta %v is not 0 or 1", beta)
	}
	if seg == (Segments{}) {
		seg = Segments{Len: max(1, n)}
	}
	if err := checkSegments("c", m, n, k, c, ldc, seg); err != nil {
		return err
	}
	if m == 0 || n == 0 {
		return nil
	}
	if k == 0 {
		for j0 := 0; j0 < n; j0 += seg.Len {
			scaleC(m, min(seg.Len, n-j0), beta, c[j0/seg.Len*seg.Stride:], ldc)
		}
		return nil
	}
	im := pick[T]()
	mr, nr := im.mr, im.nr
	p := &problem[T]{zeroC: beta == 0, im: im, m: m, n: n, k: k, alpha: 1,
		c: c, ldc: ldc, kc: min(kcOf[T](), k), mc: roundUp(m, mr)}
	// One goroutine's buffers: all of A's rows for a K block, one panel.
	s := p.getScratch(roundUp(m, mr)*p.kc, p.kc*nr)
	defer putScratch(&s)
	for pc := 0; pc < k; pc += p.kc {
		kb := min(p.kc, k-pc)
		a := s.a[:roundUp(m, mr)*kb]
		fillA(a, pc, kb)
		for jc := 0; jc < n; jc += nr {
			nw := min(nr, n-jc)
			panel := s.b[:kb*nr]
			if nw < nr {
				clear(panel)
			}
			fillB(panel, pc, kb, jc, nw)
			if s0 := jc / seg.Len; s0 == (jc+nw-1)/seg.Len {
				// The panel lies in one segment.
				p.c = c[s0*seg.Stride:]
				p.macro(&s, a, 0, m, pc, kb, jc-s0*seg.Len, 0, nw, panel)
				continue
			}
			p.macroSegments(&s, a, 0, m, pc, kb, jc, nw, panel, c, seg)
		}
	}
	return nil
}

// eachSegment calls f for the pieces of C's columns [jc, jc+nw) in seg:
// columns [j, j+w) of the range at c[at:] (row i at at + i·ldc).
func eachSegment(jc, nw int, seg Segments, f func(j, w, at int)) {
	for j := 0; j < nw; {
		col := jc + j
		sg, off := col/seg.Len, col%seg.Len
		w := min(nw-j, seg.Len-off)
		f(j, w, sg*seg.Stride+off)
		j += w
	}
}

// checkSegments is GemmFill's check of C (and GemmPackedASegments' of B
// and C; name is the operand's in the errors): ldc, and every segment's
// m rows inside c and clear of the next segment's, by divisions (sizes
// whose products overflow int are errors, not wrapped around).
func checkSegments[T Float](name string, m, n, k int, c []T, ldc int, seg Segments) error {
	if m < 0 || n < 0 || k < 0 {
		return fmt.Errorf("gemm: negative size m=%d n=%d k=%d", m, n, k)
	}
	if seg.Len < 1 || seg.Stride < 0 {
		return fmt.Errorf("gemm: %s: segments of %d columns, %d apart", name, seg.Len, seg.Stride)
	}
	w := min(seg.Len, n) // the widest segment
	if ldc < max(1, w) {
		return fmt.Errorf("gemm: %s: leading dimension %d < %d columns", name, ldc, w)
	}
	if m == 0 || n == 0 {
		return nil
	}
	last := (n - 1) / seg.Len
	// Segments s and s+1 apart by Stride ≥ (m−1)·ldc + Len.
	if last > 0 && (seg.Stride < seg.Len || (seg.Stride-seg.Len)/ldc < m-1) {
		return fmt.Errorf("gemm: %s: segments %d apart overlap (%d rows of %d columns, leading dimension %d)", name, seg.Stride, m, seg.Len, ldc)
	}
	// The last segment ends last (the others end before it starts): its
	// end last·Stride + (m−1)·ldc + its width within len(c).
	rest := len(c) - (n - last*seg.Len)
	if rest >= 0 && last > 0 {
		if seg.Stride > 0 && last > rest/seg.Stride {
			rest = -1
		} else {
			rest -= last * seg.Stride
		}
	}
	if rest < 0 || rest/ldc < m-1 {
		return fmt.Errorf("gemm: %s: %d elements for %d segments of %d rows of %d columns, %d apart, leading dimension %d", name, len(c), last+1, m, seg.Len, seg.Stride, ldc)
	}
	return nil
}

// macroSegments is macro for rows [ic, ic+mb) (packed in a) of one panel
// of columns [jc, jc+nw) that spans segments: each tile of C gathered
// from its segments into a full tile (zeros around it), the same c += acc
// as macro's edge tiles, and scattered back, so that every element is
// computed as in a full tile; then, after the last K block, the rows'
// bias on each piece, as macro adds it to the rows its kernels leave.
// Where the micro-kernel has a version storing a tile in two places
// (AVX-512: masked stores), a full panel's full tiles in two segments go
// to it instead, in one call, their bias fused as macro's.
func (p *problem[T]) macroSegments(s *scratch[T], a []T, ic, mb, pc, kb, jc, nw int, panel, c []T, seg Segments) {
	mr, nr := p.im.mr, p.im.nr
	overwrite := p.zeroC && pc == 0
	last := p.bias != nil && pc+kb == p.k
	done := 0 // rows stored by the split kernel, with their bias
	s0, off := jc/seg.Len, jc%seg.Len
	if w := seg.Len - off; p.im.multiSplit != nil && nw == nr && mb >= mr && w < nr && nr-w <= seg.Len {
		// Columns [0, w) in segment s0, [w, nr) at the start of s0+1.
		var bias *T
		if last {
			bias = &p.bias[ic]
		}
		c1, c2 := c[s0*seg.Stride+off+ic*p.ldc:], c[(s0+1)*seg.Stride+ic*p.ldc:]
		p.im.multiSplit(kb, &a[0], &panel[0], &c1[0], nr, p.ldc, overwrite, mb/mr, bias, &c2[0], w, splitMasks(w, nr/2))
		done = mb / mr * mr
	}
	// eachSegment gives the panel's pieces: tile columns [j, j+w) at
	// c[at:] (row i at at + i·ldc).
	for ir := done; ir < mb; ir += mr {
		mh := min(mr, mb-ir)
		clear(s.tile)
		if !overwrite {
			eachSegment(jc, nw, seg, func(j, w, at int) {
				for i := 0; i < mh; i++ {
					copy(s.tile[i*nr+j:i*nr+j+w], c[at+(ic+ir+i)*p.ldc:][:w])
				}
			})
		}
		kern, _, _ := p.im.tileKernel(mh, nw)
		kern(kb, &a[ir*kb], &panel[0], &s.tile[0], nr, nr, overwrite)
		eachSegment(jc, nw, seg, func(j, w, at int) {
			for i := 0; i < mh; i++ {
				copy(c[at+(ic+ir+i)*p.ldc:][:w], s.tile[i*nr+j:i*nr+j+w])
			}
		})
	}
	if last && done < mb {
		eachSegment(jc, nw, seg, func(_, w, at int) { addRowBias(c[at+(ic+done)*p.ldc:], p.ldc, p.bias[ic+done:ic+mb], w) })
	}
}

// splitMasks is a split kernel's masks for w columns in the first place:
// bits 0–15 the first vector's lanes (lanes of them) below w, bits 16–31
// the second's.
func splitMasks(w, lanes int) int {
	first := 1<<min(w, lanes) - 1
	second := 1<<max(0, min(w-lanes, lanes)) - 1
	return first | second<<16
}

// copyRows copies w runs of mr elements of size bytes (4 or 8), mr 6 or
// 12 (the AVX2 and AVX-512 kernels' full panels), run p from src +
// p·stride bytes to dst + p·mr·size: a packed panel's rows, by loads into
// registers and stores (an array assignment through these pointers, which
// may overlap for all the compiler knows, is a call to memmove, and the
// call cost more than the 24 to 96 bytes it moved). The caller has
// checked the bounds; dst and src do not overlap.
func copyRows(dst, src unsafe.Pointer, stride, w, mr, size int) {
	for p := 0; p < w; p++ {
		for h := 0; h < mr; h += 6 {
			dp, sp := unsafe.Add(dst, (p*mr+h)*size), unsafe.Add(src, p*stride+h*size)
			if size == 4 {
				d, s := (*[6]uint32)(dp), (*[6]uint32)(sp)
				a0, a1, a2, a3, a4, a5 := s[0], s[1], s[2], s[3], s[4], s[5]
				d[0], d[1], d[2], d[3], d[4], d[5] = a0, a1, a2, a3, a4, a5
				continue
			}
			d, s := (*[6]uint64)(dp), (*[6]uint64)(sp)
			a0, a1, a2, a3, a4, a5 := s[0], s[1], s[2], s[3], s[4], s[5]
			d[0], d[1], d[2], d[3], d[4], d[5] = a0, a1, a2, a3, a4, a5
		}
	}
}

// CopyPanelRow copies the bytes (64 or 128) at src to dst: a packed
// panel's row of the AVX2 kernels (16 float32 or 8 float64) or the
// AVX-512 ones (32 or 16), by loads into registers and stores (an array
// assignment through these pointers, which may overlap for all the
// compiler knows, is a call to memmove, which cost more than the copy).
// The caller has checked the bounds; dst and src do not overlap and hold
// elements of 4 bytes or more (4-byte aligned).
func CopyPanelRow(dst, src unsafe.Pointer, bytes int) {
	copy64(dst, src)
	if bytes == 128 {
		copy64(unsafe.Add(dst, 64), unsafe.Add(src, 64))
	}
}

// copy64 is CopyPanelRow for 64 bytes.
func copy64(dst, src unsafe.Pointer) {
	d, s := (*[16]uint32)(dst), (*[16]uint32)(src)
	for i := 0; i < 16; i += 8 {
		a0, a1, a2, a3, a4, a5, a6, a7 := s[i], s[i+1], s[i+2], s[i+3], s[i+4], s[i+5], s[i+6], s[i+7]
		d[i], d[i+1], d[i+2], d[i+3], d[i+4], d[i+5], d[i+6], d[i+7] = a0, a1, a2, a3, a4, a5, a6, a7
	}
}
