package gemm

import "fmt"

// GemmPackedRows computes C ← A·B[:, j0:j1] (beta 0: C's values are not
// read) for the packed A [m, k] (PackA), C [m, j1−j0] (ldc) and B [k, ·]
// read where it lies: B[p][j] = src[offs[p] + (j/seg.Len)·seg.Stride +
// j mod seg.Len] for rows' offsets offs (k of them) and columns in
// segments seg (the zero Segments: one piece) — a convolution's column
// rows, one output row a segment, in a zero-padded and phased copy of its
// input: row p of the columns its elements at offset offs[p], columns
// [j0, j1) a chunk of output positions. Then, with bias
// [m] (nil: none), C[i][j] += bias[i] as GemmPackedA adds it. Where the
// micro-kernel has a version reading B's rows in place (the AVX-512
// kernels), each panel of NR columns whose halves lie each inside one
// segment is read so, without a packed copy (the stem's 112-wide output
// rows: every panel, those that cross a row too); the other panels are
// gathered (GatherPanelRows) into a packed panel first. Either way C is bitwise what GemmPackedA
// writes for B written out (with the same micro-kernel). It runs on the
// calling goroutine alone. It returns an error for a released pa, offs
// of other than k rows, columns other than 0 ≤ j0 ≤ j1, segments of fewer
// than one column or a negative stride, ldc too small or c too short
// (GemmFill's checks), an element read outside src (by rows' bounds,
// found by NewPanelRows: offs must not change after it), or a bias of
// other than m elements.
func GemmPackedRows[T Float](pa *PackedA[T], src []T, rows PanelRows, seg Segments, j0, j1 int, c []T, ldc int, bias []T) error {
	if err := pa.check(bias); err != nil {
		return err
	}
	m, k := pa.m, pa.k
	if len(rows.offs) != k {
		return fmt.Errorf("gemm: GemmPackedRows: %d row offsets for k = %d", len(rows.offs), k)
	}
	if seg == (Segments{}) {
		seg = Segments{Len: max(1, j1)}
	}
	if j0 < 0 || j1 < j0 || seg.Len < 1 || seg.Stride < 0 {
		return fmt.Errorf("gemm: GemmPackedRows: columns [%d, %d) in segments of %d, %d apart", j0, j1, seg.Len, seg.Stride)
	}
	n := j1 - j0
	if err := checkSegments("c", m, n, k, c, ldc, Segments{Len: max(1, n)}); err != nil {
		return err
	}
	if noSums(m, n, k, c, ldc, bias) {
		return nil
	}
	if err := rowsInside(len(src), rows, j0, j1, seg); err != nil {
		return err
	}
	im, nr := pa.im, pa.im.nr
	p := &problem[T]{zeroC: true, im: im, m: m, n: n, k: k, alpha: 1, c: c, ldc: ldc,
		kc: min(kcOf[T](), k), mc: pa.mc, pa: pa, bias: bias}
	s := p.getScratch(0, p.kc*nr)
	defer putScratch(&s)
	for pc := 0; pc < k; pc += p.kc {
		kb := min(p.kc, k-pc)
		a := pa.block(0, m, pc, kb)
		block := rows.Sub(pc, pc+kb)
		for jc := 0; jc < n; jc += nr { // C's columns; B's from j0 + jc
			nw := min(nr, n-jc)
			// In place: a full panel whose halves each lie in one segment.
			if c1, c2 := j0+jc, j0+jc+nr/2; nw == nr && im.multiOffs != nil &&
				c1%seg.Len+nr/2 <= seg.Len && c2%seg.Len+nr/2 <= seg.Len {
				b := src[c1/seg.Len*seg.Stride+c1%seg.Len:]
				b2 := src[c2/seg.Len*seg.Stride+c2%seg.Len:]
				if inPlaceHook != nil {
					inPlaceHook()
				}
				p.macroRows(&s, a, m, pc, kb, b, b2, block.offs, jc)
				continue
			}
			panel := s.b[:kb*nr]
			if nw < nr {
				clear(panel)
			}
			eachSegment(j0+jc, nw, seg, func(j, w, at int) { GatherPanelRows(panel[j:], nr, src[at:], block, w) })
			p.macro(&s, a, 0, m, pc, kb, jc, 0, nw, panel)
		}
	}
	return nil
}

// inPlaceHook, when not nil, is called for every panel GemmPackedRows
// reads in place (tests count them).
var inPlaceHook func()

// rowsInside is an error unless every element GemmPackedRows reads,
// src[o + base(j)] for o in rows' bounds and the columns' offsets
// base(j) = (j/Len)·Stride + j mod Len, j0 ≤ j < j1 (j1 > j0), lies in
// [0, size). Sizes whose products overflow int are errors.
func rowsInside(size int, rows PanelRows, j0, j1 int, seg Segments) error {
	first, last := j0/seg.Len, (j1-1)/seg.Len
	if seg.Stride > 0 && last > size/seg.Stride {
		return fmt.Errorf("gemm: GemmPackedRows: %d segments %d apart outside src of %d elements", last+1, seg.Stride, size)
	}
	hi := last*seg.Stride + (j1 - 1 - last*seg.Len) // base(j1−1)
	if last > first {
		hi = max(hi, (last-1)*seg.Stride+seg.Len-1) // a wider segment before the last
	}
	if rows.lo < 0 || rows.hi > size-1-hi {
		return fmt.Errorf("gemm: GemmPackedRows: rows at offsets [%d, %d] with columns to %d outside src of %d elements", rows.lo, rows.hi, hi, size)
	}
	return nil
}

// macroRows is macro over all m rows (packed in a) for the panel of NR
// columns from jc whose rows are read in place, row p's halves at
// b[offs[p]:] and b2[offs[p]:]:
// the full tiles by the kernel over a column of tiles, the last rows by
// an edge kernel (through a full tile where it computes more rows), their
// bias as macro adds it.
func (p *problem[T]) macroRows(s *scratch[T], a []T, m, pc, kb int, b, b2 []T, offs []int, jc int) {
	im, mr, nr := p.im, p.im.mr, p.im.nr
	overwrite := p.zeroC && pc == 0
	last := p.bias != nil && pc+kb == p.k
	tiles := m / mr
	if tiles > 0 {
		var bias *T
		if last {
			bias = &p.bias[0]
		}
		im.multiOffs(kb, &a[0], &b[0], &p.c[jc], &offs[0], p.ldc, overwrite, tiles, bias, &b2[0])
	}
	ir := tiles * mr
	if ir == m {
		return
	}
	mh := m - ir
	ci := ir*p.ldc + jc
	kern, rows := offsFn[T](nil), mr
	for _, e := range im.edgesOffs {
		if e.rows >= mh {
			kern, rows = e.kern, e.rows
			break
		}
	}
	if kern == nil { // the full tile's kernel, one tile
		kern = func(kc int, a, b, c *T, offs *int, ldc int, overwrite bool, b2 *T) {
			im.multiOffs(kc, a, b, c, offs, ldc, overwrite, 1, nil, b2)
		}
	}
	run := func(c *T, ldc int) { kern(kb, &a[ir*kb], &b[0], c, &offs[0], ldc, overwrite, &b2[0]) }
	if mh == rows {
		run(&p.c[ci], p.ldc)
	} else {
		p.throughTile(s, ci, mh, nr, overwrite, run)
	}
	if last {
		addRowBias(p.c[ci:], p.ldc, p.bias[ir:m], nr)
	}
}
