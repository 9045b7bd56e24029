// Package gemm is gops' matrix product: C ← α·op(A)·op(B) + β·C for float32
// and float64, BLIS-style (packing in Go, a register-blocked micro-kernel in
// Go assembly where the CPU has one: AVX-512 or AVX2/FMA on amd64, NEON on
// arm64; a portable Go kernel elsewhere and with the build tag purego), with
// no cgo and no system library. Gemm computes a product, Check validates
// its sizes and slice lengths (for any BLAS), GemmPackedA reuses a packed
// left operand, GemmFill takes both operands from the caller's packing
// callbacks (a convolution's columns built where the kernel reads them),
// GemmPackedRows a packed A with B's rows read where they lie, each at
// its own offset (a convolution's column rows in a copy of its input;
// it and GemmPackedA also add a row bias while C's blocks are in cache),
// GemmPackedASegments a packed A over a column range of a batch's
// products side by side (B and C in segments), and Kernel names the
// micro-kernel in use; package par's workers split large products.
//
// Results are bitwise identical for any GOMAXPROCS and between the assembly
// kernels (AVX-512, AVX2/FMA and NEON compute alike): every element of C is
// one chain of fused multiply-adds over k in order, in blocks of a fixed
// KC, each block's sum added to C once. The portable kernel does the same
// with math.FMA (exactly for float64; float32 rounds twice through float64,
// so it can differ in the last bit).
package gemm

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gops-dev/gops/internal/par"
)

// Float is the element type: float32 or float64.
type Float interface{ float32 | float64 }

// kernelFn computes, for one MR×NR tile, acc = Σ_p a[p·MR+i]·b[p·ldb+j] (one
// FMA per p, in order, from +0) and then c[i·ldc+j] += acc, or with
// overwrite c[i·ldc+j] = acc + 0 without reading C (bitwise what clearing C
// and adding gives: the first K block of a product with beta = 0). B is a
// packed panel (ldb = NR) or, for a short A, B's own rows.
type kernelFn[T Float] func(kc int, a, b, c *T, ldb, ldc int, overwrite bool)

// multiFn is kernelFn over a column of tiles full tiles: tile t from
// packed A's panel t (a + t·MR·kc elements) into C's rows from t·MR on,
// with the same B, each bitwise kernelFn's (one call instead of a Go call
// a tile); with bias not nil, row i's sum (acc + c, or acc + 0) becomes
// 1·sum + bias[i], fused, before it is stored: the bits of the sum stored
// and then vmath.Axpb(c, c, 1, bias[i]) (addRowBias).
type multiFn[T Float] func(kc int, a, b, c *T, ldb, ldc int, overwrite bool, tiles int, bias *T)

// offsFn is kernelFn reading B's rows in place where they lie: row p
// the NR/2 elements at b + offs[p] and the NR/2 at b2 + offs[p]
// (elements; b2 = b + NR/2 for a panel inside one run of columns), each
// tile bitwise kernelFn's on a panel packed from those rows.
type offsFn[T Float] func(kc int, a, b, c *T, offs *int, ldc int, overwrite bool, b2 *T)

// multiOffsFn is multiFn reading B's rows in place as offsFn does.
type multiOffsFn[T Float] func(kc int, a, b, c *T, offs *int, ldc int, overwrite bool, tiles int, bias, b2 *T)

// multiSplitFn is multiFn storing each tile in two places: its columns
// j < w at c + j and the others at c2 + (j − w), rows ldc apart in both
// (a panel that crosses from one segment of C into the next); masks has
// bits 0–15 set for the first vector's lanes below w and bits 16–31 for
// the second's (splitMasks). Bitwise multiFn's tiles stored in pieces.
type multiSplitFn[T Float] func(kc int, a, b, c *T, ldb, ldc int, overwrite bool, tiles int, bias, c2 *T, w, masks int)

// offsEdge is an edge kernel reading B's rows in place (offsFn).
type offsEdge[T Float] struct {
	rows int
	kern offsFn[T]
}

// impl is one micro-kernel and its tile, with its edge kernels, if any.
type impl[T Float] struct {
	name       string
	mr, nr     int
	kern       kernelFn[T]
	multi      multiFn[T] // kern over a column of tiles, or nil
	edges      []edge[T]  // by rows, ascending, each below mr
	halves     []edge[T]  // kernels of the tile's first nr/2 columns, by rows, ascending, the last mr rows; or none
	multiOffs  multiOffsFn[T]
	edgesOffs  []offsEdge[T]   // multi and edges reading B's rows in place (GemmPackedRows), or nil and none
	multiSplit multiSplitFn[T] // multi storing a tile in two segments (macroSegments), or nil
}

// edge is a kernel of the first rows rows of impl's tile, reading impl's
// packed A (mr elements per p) and computing those rows bitwise as kern
// does: for the last row block of a product, whose rows mh < mr would
// otherwise run the whole tile.
type edge[T Float] struct {
	rows int
	kern kernelFn[T]
}

// rowKernel is the kernel for a block of mh ≤ mr rows and the rows it
// computes: the narrowest edge kernel of at least mh rows, else kern.
func (im *impl[T]) rowKernel(mh int) (kernelFn[T], int) {
	for _, e := range im.edges {
		if e.rows >= mh {
			return e.kern, e.rows
		}
	}
	return im.kern, im.mr
}

// tileKernel is the kernel for a block of mh ≤ mr rows by nw ≤ nr
// columns and the rows and columns it computes: for at most nr/2 columns
// the narrowest half-width kernel of at least mh rows, when there are
// such (they read the same panels, ldb apart, and compute their columns
// bitwise as kern does: the last panel of a product whose width is not a
// multiple of nr), else rowKernel's, all nr columns.
func (im *impl[T]) tileKernel(mh, nw int) (kern kernelFn[T], rows, cols int) {
	if 2*nw <= im.nr {
		for _, h := range im.halves {
			if h.rows >= mh {
				return h.kern, h.rows, im.nr / 2
			}
		}
	}
	kern, rows = im.rowKernel(mh)
	return kern, rows, im.nr
}

// Blocking: KC is fixed per dtype (the K partition decides the rounding, so
// it must not depend on the kernel or the thread count); MC and NC only
// decide which tiles run where.
const (
	kcF32  = 256
	kcF64  = 128
	mcRows = 96 // rows of A packed at a time (a multiple of every MR)
	ncCols = 3072
	// parallelMin is the number of multiply-adds from which a product is
	// split over goroutines: below it, starting them costs more than
	// they save.
	parallelMin = 1 << 20
)

// BlockK is the K block (KC) of T's products: a product split along k at
// multiples of BlockK, its first part with the caller's beta and the
// others with beta 1, is bitwise the whole product (every block's sum is
// added to C once, in order). Package cpu's convolutions split so.
func BlockK[T Float]() int { return kcOf[T]() }

func kcOf[T Float]() int {
	var z T
	if any(z) == any(float32(0)) {
		return kcF32
	}
	return kcF64
}

// Gemm computes C ← alpha·op(A)·op(B) + beta·C, where op(A) is m×k (A is
// m×k row-major with leading dimension lda, or k×m when transA), op(B) is
// k×n (B k×n with ldb, or n×k when transB) and C is m×n with ldc, all
// row-major as in gonum's blas. As in the reference BLAS, beta = 0 ignores
// C's values (NaN included) and alpha = 0 or k = 0 reads neither A nor B.
// It returns an error for negative sizes, a leading dimension too small, or
// a slice too short.
func Gemm[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) error {
	if err := Check(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc); err != nil {
		return err
	}
	gemm(pick[T](), transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	return nil
}

// Check is Gemm's argument check, for callers that hand the product to
// another BLAS: sizes, leading dimensions and slice lengths la, lb, lc such
// that a product reads and writes only inside the slices (A and B are not
// checked when m, n or k is 0: they are not read).
func Check(transA, transB bool, m, n, k, la, lda, lb, ldb, lc, ldc int) error {
	if m < 0 || n < 0 || k < 0 {
		return fmt.Errorf("gemm: negative size m=%d n=%d k=%d", m, n, k)
	}
	ra, ca := m, k
	if transA {
		ra, ca = k, m
	}
	rb, cb := k, n
	if transB {
		rb, cb = n, k
	}
	for _, t := range []struct {
		name           string
		rows, cols, ld int
		have           int
	}{{"a", ra, ca, lda, la}, {"b", rb, cb, ldb, lb}, {"c", m, n, ldc, lc}} {
		if t.ld < max(1, t.cols) {
			return fmt.Errorf("gemm: %s: leading dimension %d < %d columns", t.name, t.ld, t.cols)
		}
		if t.name != "c" && (m == 0 || n == 0 || k == 0) {
			continue
		}
		// have ≥ (rows-1)·ld + cols, without the product (it can overflow).
		if t.rows > 0 && t.cols > 0 && (t.have < t.cols || (t.have-t.cols)/t.ld < t.rows-1) {
			return fmt.Errorf("gemm: %s: %d elements for %d×%d with leading dimension %d", t.name, t.have, t.rows, t.cols, t.ld)
		}
	}
	return nil
}

// scaleC sets C ← beta·C (beta = 0 writes zeros).
func scaleC[T Float](m, n int, beta T, c []T, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

func gemm[T Float](im impl[T], transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if alpha == 0 || k == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	// beta = 0: the first K block overwrites C (not read, so a NaN there is
	// ignored) instead of a clearing pass and a read.
	if beta != 0 {
		scaleC(m, n, beta, c, ldc)
	}
	p := &problem[T]{zeroC: beta == 0, im: im, transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha,
		a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc, kc: min(kcOf[T](), k), mc: mcOf(m, im.mr)}
	p.run()
}

// mcOf is the rows of A packed at a time for a product of m rows with
// kernel rows mr.
func mcOf(m, mr int) int { return min(mcRows/mr, (m+mr-1)/mr) * mr }

// run computes p's product, splitting it over goroutines.
func (p *problem[T]) run() {
	m, n, k, im := p.m, p.n, p.k, p.im
	// A short A (one row block) uses each element of B once: the kernel
	// reads B's rows where they are instead of a packed copy, except for a
	// last panel narrower than NR.
	p.direct = !p.transB && m <= p.mc
	procs := par.Procs() // GOMAXPROCS, divided among concurrent jobs
	if m*n*k < parallelMin || m*n*k/parallelMin < 0 {
		procs = 1 // not worth starting goroutines (the product overflowing int is not small)
	}
	if panels := (n + im.nr - 1) / im.nr; procs == 1 || panels >= 8*procs {
		p.byColumns(procs, panels)
	} else {
		p.byRows(procs, panels)
	}
}

// problem is one product and its blocking.
type problem[T Float] struct {
	im             impl[T]
	transA, transB bool
	m, n, k        int
	alpha          T
	a, b, c        []T
	lda, ldb, ldc  int
	kc, mc         int
	direct         bool        // the kernel reads B in place
	zeroC          bool        // beta = 0: the first K block overwrites C
	pa             *PackedA[T] // A packed beforehand (GemmPackedA), or nil
	bias           []T         // added to C's rows after the last K block (GemmPackedA, GemmPackedRows, GemmPackedASegments), or nil
}

// scratch is one goroutine's packing buffers, parts of one buffer from
// the package's keeper: packed A, packed B, an edge tile of C and an edge
// panel of B read in place.
type scratch[T Float] struct {
	buf, a, b, tile, edgeB []T
}

// keep keeps the packing buffers between products: allocating them for
// every call made small products slow.
var keep par.Pair[float32, float64]

func keeperOf[T Float]() *par.Scratch[T] { return par.Of[T](&keep) }

// getScratch returns scratch with na elements in a and nb in b, each part
// starting on a cache line; their contents are undefined (packing writes
// every element it uses, an edge tile is cleared first). Give it back with
// putScratch.
func (p *problem[T]) getScratch(na, nb int) scratch[T] {
	line := func(n int) int { return roundUp(n, 16) } // 64 bytes or more
	nt, ne := p.im.mr*p.im.nr, p.kc*p.im.nr
	buf := keeperOf[T]().Get(line(na) + line(nb) + line(nt) + ne)
	at := 0
	part := func(n int) []T {
		b := buf[at : at+n : at+n]
		at += line(n)
		return b
	}
	return scratch[T]{buf: buf, a: part(na), b: part(nb), tile: part(nt), edgeB: part(ne)}
}

func putScratch[T Float](s *scratch[T]) { keeperOf[T]().Put(s.buf) }

// byColumns splits C into one column range per goroutine, each packing its
// own part of B and every block of A: no goroutine waits for another, and
// the shares are equal to a panel (a wide C: at least eight panels per
// goroutine).
func (p *problem[T]) byColumns(procs, panels int) {
	nr := p.im.nr
	chunks := min(procs, panels)
	per := (panels + chunks - 1) / chunks * nr // columns per chunk
	nc := min(ncCols/nr*nr, per)
	run := func(lo, hi int) {
		nb := p.kc * nc
		if p.direct {
			nb = 0
		}
		na := p.mc * p.kc
		if p.pa != nil {
			na = 0
		}
		s := p.getScratch(na, nb)
		defer putScratch(&s)
		for ch := lo; ch < hi; ch++ {
			end := min(p.n, (ch+1)*per)
			for jc := ch * per; jc < end; jc += nc {
				nb := min(nc, end-jc)
				for pc := 0; pc < p.k; pc += p.kc {
					kb := min(p.kc, p.k-pc)
					if !p.direct {
						p.packBPanels(s.b, pc, kb, jc, nb, 0, (nb+nr-1)/nr)
					}
					for ic := 0; ic < p.m; ic += p.mc {
						mb := min(p.mc, p.m-ic)
						a := p.blockA(s.a, ic, mb, pc, kb)
						p.macro(&s, a, ic, mb, pc, kb, jc, 0, nb, s.b)
					}
				}
			}
		}
	}
	if chunks == 1 {
		run(0, 1) // no closure escaping into a goroutine
		return
	}
	par.For(chunks, run)
}

// byRows is for a C with few panels per goroutine: per (column block, K
// block), B is packed once, in parallel, and shared; the tasks are row
// blocks of A, each packed by the goroutine that uses it, times column
// chunks of the packed B when there are fewer blocks than eight per
// goroutine, so that the goroutines get about equal shares.
func (p *problem[T]) byRows(procs, panels int) {
	nr := p.im.nr
	var bufB []T
	if !p.direct {
		bufB = keeperOf[T]().Get(p.kc * panels * nr)
		defer keeperOf[T]().Put(bufB)
	}
	n := p.n
	for pc := 0; pc < p.k; pc += p.kc {
		kb := min(p.kc, p.k-pc)
		if !p.direct {
			par.For(panels, func(lo, hi int) { p.packBPanels(bufB, pc, kb, 0, n, lo, hi) })
		}
		blocks := (p.m + p.mc - 1) / p.mc
		split := min(panels, max(1, (8*procs+blocks-1)/blocks))
		per := (panels + split - 1) / split
		par.For(blocks*split, func(lo, hi int) {
			na := p.mc * kb
			if p.pa != nil {
				na = 0
			}
			s := p.getScratch(na, 0)
			defer putScratch(&s)
			packed, a := -1, s.a
			for task := lo; task < hi; task++ {
				blk := task / split
				ic := blk * p.mc
				mb := min(p.mc, p.m-ic)
				if packed != blk {
					a = p.blockA(s.a, ic, mb, pc, kb)
					packed = blk
				}
				j0 := task % split * per * nr
				p.macro(&s, a, ic, mb, pc, kb, 0, j0, min(n, j0+per*nr), bufB)
			}
		})
	}
}

// packBPanels packs panels [lo, hi) of op(B)[pc:pc+kb, jc:jc+nb] into
// bufB, panel q at bufB[q·NR·kb:].
func (p *problem[T]) packBPanels(bufB []T, pc, kb, jc, nb, lo, hi int) {
	nr := p.im.nr
	if bytes := nr * int(unsafe.Sizeof(T(0))); !p.transB && (bytes == 64 || bytes == 128) && kb > 0 {
		// Full panels row by row of B: each row's part read in one sweep
		// (panel by panel, the rows ldb apart defeat the prefetchers).
		full := min(hi, nb/nr)
		if full > lo {
			_, _ = bufB[full*nr*kb-1], p.b[(pc+kb-1)*p.ldb+jc+full*nr-1]
			for r := 0; r < kb; r++ {
				src := unsafe.Pointer(&p.b[(pc+r)*p.ldb+jc])
				if spreadAsm(unsafe.Pointer(&bufB[(lo*kb+r)*nr]), unsafe.Add(src, lo*bytes), full-lo, kb*bytes, bytes) {
					continue
				}
				for q := lo; q < full; q++ {
					CopyPanelRow(unsafe.Pointer(&bufB[(q*kb+r)*nr]), unsafe.Add(src, q*bytes), bytes)
				}
			}
			lo = full
		}
	}
	for q := lo; q < hi; q++ {
		packB(bufB[q*nr*kb:(q+1)*nr*kb], p.transB, p.b, p.ldb, pc, kb, jc+q*nr, min(nr, nb-q*nr), nr)
	}
}

// blockA returns rows [ic, ic+mb) of alpha·op(A), columns [pc, pc+kb),
// as MR-row panels: packed into bufA, or the block of p.pa.
func (p *problem[T]) blockA(bufA []T, ic, mb, pc, kb int) []T {
	if p.pa != nil {
		return p.pa.block(ic, mb, pc, kb)
	}
	packABlock(bufA, p.transA, p.a, p.lda, ic, mb, pc, kb, p.im.mr, p.alpha)
	return bufA
}

// packABlock packs rows [ic, ic+mb) of alpha·op(a), columns [pc, pc+kb),
// as mr-row panels into bufA.
func packABlock[T Float](bufA []T, transA bool, a []T, lda, ic, mb, pc, kb, mr int, alpha T) {
	for r := 0; r < mb; r += mr {
		packA(bufA[r*kb:(r+mr)*kb], transA, a, lda, ic+r, min(mr, mb-r), pc, kb, mr, alpha)
	}
}

// macro runs the micro-kernel over C[ic:ic+mb, jc+j0:jc+j1] for K block
// [pc, pc+kb): packed A in a, B packed in bufB (columns counted from jc)
// or read in place.
func (p *problem[T]) macro(s *scratch[T], a []T, ic, mb, pc, kb, jc, j0, j1 int, bufB []T) {
	im, mr, nr := p.im, p.im.mr, p.im.nr
	overwrite := p.zeroC && pc == 0
	for jr := j0; jr < j1; jr += nr {
		nw := min(nr, j1-jr)
		var bp *T
		ldbp := nr
		switch {
		case !p.direct:
			bp = &bufB[jr*kb]
		case nw == nr:
			bp, ldbp = &p.b[pc*p.ldb+jc+jr], p.ldb
		default:
			packB(s.edgeB, false, p.b, p.ldb, pc, kb, jc+jr, nw, nr)
			bp = &s.edgeB[0]
		}
		ir := 0
		last := p.bias != nil && pc+kb == p.k // the bias goes on after the last K block
		if tiles := mb / mr; nw == nr && im.multi != nil && tiles > 0 {
			// The panel's full tiles in one call, their bias as they are stored.
			var bias *T
			if last {
				bias = &p.bias[ic]
			}
			im.multi(kb, &a[0], bp, &p.c[ic*p.ldc+jc+jr], ldbp, p.ldc, overwrite, tiles, bias)
			ir = tiles * mr
		}
		done := ir // rows with their bias
		for ; ir < mb; ir += mr {
			mh := min(mr, mb-ir)
			ap := &a[ir*kb]
			ci := (ic+ir)*p.ldc + jc + jr
			kern, rows, cols := im.tileKernel(mh, nw)
			if mh == rows && nw == cols {
				kern(kb, ap, bp, &p.c[ci], ldbp, p.ldc, overwrite)
				continue
			}
			p.throughTile(s, ci, mh, nw, overwrite, func(c *T, ldc int) { kern(kb, ap, bp, c, ldbp, ldc, overwrite) })
		}
		if last && done < mb {
			// The other rows' bias while they are in cache.
			addRowBias(p.c[(ic+done)*p.ldc+jc+jr:], p.ldc, p.bias[ic+done:ic+mb], nw)
		}
	}
}

// throughTile runs an edge tile of mh rows by nw columns of C at
// p.c[ci:] through the full scratch tile: C's part copied into it (zeros
// around it), run's c += acc there (c the tile, ldc NR), and copied
// back, so that every element is computed as in a full tile (-0
// included).
func (p *problem[T]) throughTile(s *scratch[T], ci, mh, nw int, overwrite bool, run func(c *T, ldc int)) {
	nr := p.im.nr
	clear(s.tile)
	for i := 0; i < mh && !overwrite; i++ {
		copy(s.tile[i*nr:i*nr+nw], p.c[ci+i*p.ldc:ci+i*p.ldc+nw])
	}
	run(&s.tile[0], nr)
	for i := 0; i < mh; i++ {
		copy(p.c[ci+i*p.ldc:ci+i*p.ldc+nw], s.tile[i*nr:i*nr+nw])
	}
}

func roundUp(x, to int) int { return (x + to - 1) / to * to }

// packA writes rows [r0, r0+rows) of alpha·op(A), columns [p0, p0+kb), as
// dst[p·mr+i], padding rows up to mr with zeros.
func packA[T Float](dst []T, trans bool, a []T, lda, r0, rows, p0, kb, mr int, alpha T) {
	if rows < mr {
		clear(dst[:kb*mr])
	}
	if !trans {
		interleave(dst, mr, a, lda, r0, rows, p0, kb, alpha)
		return
	}
	for p := 0; p < kb; p++ {
		src := a[(p0+p)*lda+r0 : (p0+p)*lda+r0+rows]
		d := dst[p*mr : p*mr+rows]
		for i, v := range src {
			d[i] = alpha * v
		}
	}
}

// packB writes op(B)[p0:p0+kb, c0:c0+cols] as dst[p·nr+j], padding columns
// up to nr with zeros.
func packB[T Float](dst []T, trans bool, b []T, ldb, p0, kb, c0, cols, nr int) {
	if cols < nr {
		clear(dst[:kb*nr])
	}
	if !trans {
		if bytes := nr * int(unsafe.Sizeof(dst[0])); cols == nr && (bytes == 128 || bytes == 64) && kb > 0 { // AVX-512 and AVX2 panels: no memmove call a row
			_, _ = dst[kb*nr-1], b[(p0+kb-1)*ldb+c0+nr-1]
			for p := 0; p < kb; p++ {
				CopyPanelRow(unsafe.Pointer(&dst[p*nr]), unsafe.Pointer(&b[(p0+p)*ldb+c0]), bytes)
			}
			return
		}
		for p := 0; p < kb; p++ {
			copy(dst[p*nr:p*nr+cols], b[(p0+p)*ldb+c0:(p0+p)*ldb+c0+cols])
		}
		return
	}
	interleave(dst, nr, b, ldb, c0, cols, p0, kb, 1)
}

// interleave writes dst[p·st+j] = alpha·x[(r0+j)·ld+p0+p] for j < rows,
// p < kb: rows of x become columns of a panel. Eight rows at a time, then
// six (into a panel of 6, AVX2's, by interleaveS6), then four, then one,
// without bounds checks in the inner loops: one strided
// scalar store per element, row by row, was the packing's bottleneck.
func interleave[T Float](dst []T, st int, x []T, ld, r0, rows, p0, kb int, alpha T) {
	j := 0
	// With AVX2, blocks of vr rows by vr columns are transposed in
	// registers; the columns beyond a multiple of vr go through the loops
	// below, as do the rows left.
	if vr := interleaveRows[T](); vr > 0 && kb >= vr {
		kv := kb / vr * vr
		for ; j+vr <= rows; j += vr {
			src := x[(r0+j)*ld+p0 : (r0+j+vr-1)*ld+p0+kv]
			interleaveBlock(dst[j:(kv-1)*st+j+vr], st, src, ld, kv, alpha)
			for r := 0; r < vr; r++ {
				for p, v := range x[(r0+j+r)*ld+p0+kv:][:kb-kv] {
					dst[(kv+p)*st+j+r] = alpha * v
				}
			}
		}
	}
	for ; j+8 <= rows; j += 8 {
		s0 := x[(r0+j)*ld+p0:][:kb]
		s1, s2, s3 := x[(r0+j+1)*ld+p0:][:len(s0)], x[(r0+j+2)*ld+p0:][:len(s0)], x[(r0+j+3)*ld+p0:][:len(s0)]
		s4, s5, s6, s7 := x[(r0+j+4)*ld+p0:][:len(s0)], x[(r0+j+5)*ld+p0:][:len(s0)], x[(r0+j+6)*ld+p0:][:len(s0)], x[(r0+j+7)*ld+p0:][:len(s0)]
		for p := range s0 {
			d := dst[p*st+j : p*st+j+8 : p*st+j+8]
			d[0], d[1], d[2], d[3] = alpha*s0[p], alpha*s1[p], alpha*s2[p], alpha*s3[p]
			d[4], d[5], d[6], d[7] = alpha*s4[p], alpha*s5[p], alpha*s6[p], alpha*s7[p]
		}
	}
	for ; j+6 <= rows; j += 6 { // the AVX2 kernels' panels
		if st == 6 && kb >= 8 {
			_, _ = dst[j+(kb-1)*6+5], x[(r0+j+5)*ld+p0+kb-1]
			if done := interleave6(dst[j:], x[(r0+j)*ld+p0:], ld, kb, alpha); done > 0 {
				for r := 0; r < 6; r++ { // the columns past the last block of 8
					for p, v := range x[(r0+j+r)*ld+p0+done:][:kb-done] {
						dst[(done+p)*6+j+r] = alpha * v
					}
				}
				continue
			}
		}
		s0 := x[(r0+j)*ld+p0:][:kb]
		s1, s2, s3 := x[(r0+j+1)*ld+p0:][:len(s0)], x[(r0+j+2)*ld+p0:][:len(s0)], x[(r0+j+3)*ld+p0:][:len(s0)]
		s4, s5 := x[(r0+j+4)*ld+p0:][:len(s0)], x[(r0+j+5)*ld+p0:][:len(s0)]
		for p := range s0 {
			d := dst[p*st+j : p*st+j+6 : p*st+j+6]
			d[0], d[1], d[2], d[3], d[4], d[5] = alpha*s0[p], alpha*s1[p], alpha*s2[p], alpha*s3[p], alpha*s4[p], alpha*s5[p]
		}
	}
	for ; j+4 <= rows; j += 4 {
		s0 := x[(r0+j)*ld+p0:][:kb]
		s1, s2, s3 := x[(r0+j+1)*ld+p0:][:len(s0)], x[(r0+j+2)*ld+p0:][:len(s0)], x[(r0+j+3)*ld+p0:][:len(s0)]
		for p := range s0 {
			d := dst[p*st+j : p*st+j+4 : p*st+j+4]
			d[0], d[1], d[2], d[3] = alpha*s0[p], alpha*s1[p], alpha*s2[p], alpha*s3[p]
		}
	}
	for ; j < rows; j++ {
		for p, v := range x[(r0+j)*ld+p0:][:kb] {
			dst[p*st+j] = alpha * v
		}
	}
}

// goMR and goNR are the portable kernel's tile.
const goMR, goNR = 4, 4

// goKernel is the portable micro-kernel of a goMR×goNR tile, math.FMA per
// step in the order of the assembly kernels (accumulators on the stack).
func goKernel[T Float](kc int, a, b, c *T, ldb, ldc int, overwrite bool) {
	as := unsafeSlice(a, kc*goMR)
	bs := unsafeSlice(b, (kc-1)*ldb+goNR)
	var acc [goMR * goNR]float64
	for p := 0; p < kc; p++ {
		ar, br := as[p*goMR:(p+1)*goMR], bs[p*ldb:p*ldb+goNR]
		for i, av := range ar {
			row := acc[i*goNR : (i+1)*goNR]
			for j, bv := range br {
				row[j] = float64(T(math.FMA(float64(av), float64(bv), row[j])))
			}
		}
	}
	cs := unsafeSlice(c, (goMR-1)*ldc+goNR)
	for i := 0; i < goMR; i++ {
		for j := 0; j < goNR; j++ {
			if overwrite {
				cs[i*ldc+j] = T(acc[i*goNR+j]) + 0
			} else {
				cs[i*ldc+j] += T(acc[i*goNR+j])
			}
		}
	}
}
