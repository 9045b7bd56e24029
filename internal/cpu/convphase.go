package cpu

import (
	"unsafe"

	"github.com/gops-dev/gops/internal/gemm"
	"github.com/gops-dev/gops/internal/par"
)

// phasedForwards reports whether ConvForward of g on gops' own product
// runs convForwardPhased: a convolution with columns to build, output
// positions enough for convGEMMWith's blocks (forwardFills is false), a
// kernel whose columns repeat each input element at least phasedRepeat
// times (K ≥ phasedRepeat·SH·SW: the phased copy, about the input's size,
// is then small beside the columns it replaces; a 1×1 kernel at stride 2
// ran slower phased, its columns a quarter of the input), a group's
// weight K block small enough to stay in the second-level cache while
// every panel of positions passes under it (at most phasedMaxA bytes),
// and column rows few beside the output channels (at most phasedMaxRows
// per output channel: the columns' construction is then a large share of
// the product's time). The ResNet stem, 7×7 stride 2 with 3 → 64
// channels, builds 147 column rows for 64 channels: its columns cost a
// fifth of convGEMMWith's forward.
func phasedForwards[T Float](g *ConvGeom) bool { return phasedGeom[T](g) && !forwardFills(g) }

// phasedWeights reports whether ConvWeight of g on gops' own product runs
// convWeightPhased: phasedForwards' rule on the kernel, strides and
// channels, where convWeightFilled does not run (weightFills: fewer than
// weightFillRows column rows), with the product's packed A, a K block of
// G (Cout/Groups by gemm.BlockK positions), at most phasedMaxA bytes.
func phasedWeights[T Float](g *ConvGeom) bool {
	if !phasedGeom[T](g) || weightFills(g) {
		return false
	}
	return packedABytes[T](g.Cout/g.Groups, blockK[T]()) <= phasedMaxA
}

// phasedGeom is phasedForwards' and phasedWeights' rule on the kernel,
// strides and channels (and a batch of at least one sample), with
// ConvForward's packed A, the weight's K block (Cout/Groups by
// min(Rows, gemm.BlockK)), at most phasedMaxA bytes.
func phasedGeom[T Float](g *ConvGeom) bool {
	if g.N == 0 || g.Pointwise() || g.K() < phasedRepeat*g.SH*g.SW {
		return false
	}
	cog, rows := g.Cout/max(1, g.Groups), g.Rows()
	if cog == 0 || rows == 0 {
		return false
	}
	return packedABytes[T](cog, min(rows, blockK[T]())) <= phasedMaxA && rows <= phasedMaxRows*cog
}

// phasedRepeat, phasedMaxA and phasedMaxRows are phasedForwards' bounds.
const (
	phasedRepeat  = 4
	phasedMaxA    = 128 << 10
	phasedMaxRows = 4
)

// packedABytes is the size in bytes of a K block of k columns of an
// m-row left operand packed for the product (whole tiles of
// gemm.TileRows rows).
func packedABytes[T Float](m, k int) int {
	mr := gemm.TileRows[float64]()
	if unsafe.Sizeof(T(0)) == 4 {
		mr = gemm.TileRows[float32]()
	}
	return (m + mr - 1) / mr * mr * k * int(unsafe.Sizeof(T(0)))
}

// phasedSpan is the number of output positions of one of
// convForwardPhased's products: a multiple of the panel width, about
// phasedSpan of them (the product packs the group's weight once per
// chunk), or the sample's positions split evenly over the fewest chunks
// of at most that many.
const phasedSpan = 768

// convForwardPhased is ConvForward on gops' own product (then the bias
// and ep, as convGEMMWith's) by panels built from a phased copy of the
// input (phasedForwards): per group, sample and chunk of output positions
// one product W_g [Cout/Groups, Rows] times the chunk's columns, whose
// rows are runs of the phased planes, a run of consecutive output
// positions of one output row each (gemm.GemmPackedRows: read in place
// where each half of a panel lies in one output row and the kernel can —
// every panel of the stem on AVX-512 — else copied into a panel, one 64-
// or 128-byte copy a panel row), where
// convGEMMWith first wrote the columns of a block of output rows (a
// gather at stride SW for each of the stem's 147 column rows) and the
// product then read them back. The
// chunks run on the goroutines, each one's bias and ep on the goroutine
// that wrote it. Bitwise convGEMMWith's result: the same products (K
// blocks of gemm.BlockK, the same micro-kernel tiles), element by element.
func convForwardPhased[T Float](g *ConvGeom, out, x, w, bias []T, ep *Epilogue[T]) error {
	pad, p, offs := phasedInput(g, x)
	defer colsScratch[T]().Put(pad)
	after := func(n, gi, l0, l1 int) { // ep on the chunk's outputs (the products added the bias)
		if ep.empty() {
			return
		}
		cog := g.Cout / g.Groups
		for co := gi * cog; co < (gi+1)*cog; co++ {
			ep.channel(out, nil, (n*g.Cout+co)*g.L(), co, l0, l1, g.L())
		}
	}
	if unsafe.Sizeof(T(0)) == 4 {
		return phasedProducts(g, asF32(out), asF32(pad), asF32(w), asF32(bias), offs, p.row(), after)
	}
	return phasedProducts(g, asF64(out), asF64(pad), asF64(w), asF64(bias), offs, p.row(), after)
}

// phasedInput is x padded and phased in the direct kernels' layout p
// (padPlanes; a buffer of colsScratch, which the caller puts back), planes
// in parallel, and offs, the offsets of every column row r of a sample:
// column row r at output position (ho, wo) is element
// offs[r] + ho·SH·p.row() + wo of its sample's planes, consecutive
// positions along an output row consecutive elements.
func phasedInput[T Float](g *ConvGeom, x []T) ([]T, phased, []int) {
	p := inputLayout(g)
	offs := inputOffsets(g, p, g.C)
	pad := colsScratch[T]().Get(g.N * g.C * p.plane())
	hw := g.H * g.W
	// A plane at a time (par.ForWorkGrains), as the products after it: a
	// late worker leaves the caller the planes it has not reached.
	par.ForWorkGrains(g.N*g.C, 1, g.N*g.C*p.plane(), func(lo, hi int) {
		dst := pad[lo*p.plane() : hi*p.plane()]
		padBorders(g, p, dst)
		padPlanes(g, p, x[lo*hw:hi*hw], dst)
	})
	return pad, p, offs
}

// convWeightPhased is ConvWeight on gops' own product (phasedWeights) as
// convGEMMWith's (the samples in order, each one's output positions in
// spans of weightSpan, one product G_n·colsᵀ of each span added into the
// gradient), with the columns' transpose packed into the product's panels
// straight from a phased copy of the input (gemm.InterleaveRows of the
// column rows' runs, a run of consecutive positions of one output row
// each) instead of built by im2col and packed again; the goroutines take
// ranges of the panels (column rows of the gradient), each packing its own
// copy of G's K blocks. Bitwise convGEMMWith's result: per element the
// same K blocks of gemm.BlockK positions in the same order, the same
// micro-kernel tiles.
func convWeightPhased[T Float](g *ConvGeom, out, x, gr []T) error {
	pad, p, offs := phasedInput(g, x)
	defer colsScratch[T]().Put(pad)
	if unsafe.Sizeof(T(0)) == 4 {
		return weightPhased(g, asF32(out), asF32(pad), asF32(gr), offs, p.row(), weightSpan(g, blockK[T]()))
	}
	return weightPhased(g, asF64(out), asF64(pad), asF64(gr), offs, p.row(), weightSpan(g, blockK[T]()))
}

// weightPhased is convWeightPhased's products on gemm's element types,
// spans of lb positions.
func weightPhased[T gemm.Float](g *ConvGeom, out, pad, gr []T, offs []int, row, lb int) error {
	l, cog, rows, cpg, k := g.L(), g.Cout/g.Groups, g.Rows(), g.C/g.Groups, g.K()
	nr := gemm.PanelWidth[T]()
	panels := (rows + nr - 1) / nr
	sample := len(pad) / max(1, g.N)
	errs := make([]error, g.Groups*panels)
	par.ForWork(len(errs), g.N*g.Cout*rows*l, func(lo, hi int) {
		srcs := make([][]T, nr)
		for t := lo; t < hi; {
			// Panels [q0, q1) of group gi: its column rows [j0, j1).
			gi, q0 := t/panels, t%panels
			q1 := min(panels, q0+hi-t)
			j0, j1 := q0*nr, min(rows, q1*nr)
			offs := offs[gi*cpg*k+j0 : gi*cpg*k+j1]
			for n := 0; n < g.N; n++ {
				planes := pad[n*sample : (n+1)*sample]
				gn := gr[(n*g.Cout+gi*cog)*l:]
				for l0 := 0; l0 < l; l0 += lb {
					nl := min(l, l0+lb) - l0
					fillA := func(dst []T, pc, kb int) { gemm.PackAColumns(dst, kb, 0, gn[l0+pc:], l, cog, kb, false) }
					fillB := func(panel []T, pc, kb, jc, cols int) {
						srcs := srcs[:cols]
						for at, pos := 0, l0+pc; at < kb; {
							ho, wo := pos/g.WO, pos%g.WO
							wd := min(kb-at, g.WO-wo)
							base := ho*g.SH*row + wo
							for j, o := range offs[jc : jc+cols] {
								srcs[j] = planes[base+o:][:wd]
							}
							gemm.InterleaveRows(panel[at*nr:], nr, srcs, wd)
							at, pos = at+wd, pos+wd
						}
					}
					beta := T(min(n+l0, 1)) // the first span overwrites
					if err := gemm.GemmFill(cog, j1-j0, nl, fillA, fillB, beta, out[gi*cog*rows+j0:], rows, gemm.Segments{}); err != nil {
						errs[t] = err
						return
					}
				}
			}
			t += q1 - q0
		}
	})
	return firstErr(errs)
}

// phasedProducts is convForwardPhased's products on gemm's element types:
// pad the phased input, bias empty or [Cout] (added to each panel of
// outputs by the product, while it is in cache: the bias pass's bits),
// offs the column rows' offsets in a sample's planes, row a padded row's
// length; after(n, gi, l0, l1), on the goroutine that wrote them, does the
// epilogue of sample n's positions [l0, l1) of group gi's output
// channels.
func phasedProducts[T gemm.Float](g *ConvGeom, out, pad, w, bias []T, offs []int, row int, after func(n, gi, l0, l1 int)) error {
	l, cog, rows, k := g.L(), g.Cout/g.Groups, g.Rows(), g.K()
	nr := gemm.PanelWidth[T]()
	chunks := max(1, (l+phasedSpan-1)/phasedSpan)
	span := ((l+chunks-1)/chunks + nr - 1) / nr * nr
	chunks = (l + span - 1) / span
	sample := len(pad) / max(1, g.N)
	groupRows := make([]gemm.PanelRows, g.Groups) // each group's column rows, their bounds found once
	packs := make([]*gemm.PackedA[T], g.Groups)   // each group's weight, packed once for every chunk
	defer func() {
		for _, pa := range packs {
			pa.Release()
		}
	}()
	for gi := range groupRows {
		groupRows[gi] = gemm.NewPanelRows(offs[gi*g.C/g.Groups*k:][:rows])
		var err error
		if packs[gi], err = gemm.PackA(cog, rows, w[gi*cog*rows:(gi+1)*cog*rows], rows); err != nil {
			return err
		}
	}
	seg := gemm.Segments{Len: g.WO, Stride: g.SH * row} // output row ho's positions at ho·SH·row in the planes
	errs := make([]error, g.Groups*g.N*chunks)
	// A chunk at a time, as convGEMMWith's samples: a worker that starts
	// late leaves the caller the chunks it has not reached.
	par.ForWorkGrains(len(errs), 1, g.N*g.Cout*rows*l, func(lo, hi int) {
		defer par.Outer(1)() // the epilogue's loops run on this goroutine
		for t := lo; t < hi; t++ {
			gi, n, q := t/(g.N*chunks), t/chunks%g.N, t%chunks
			l0, l1 := q*span, min(l, (q+1)*span)
			planes := pad[n*sample : (n+1)*sample]
			c := out[(n*g.Cout+gi*cog)*l+l0:]
			if errs[t] = gemm.GemmPackedRows(packs[gi], planes, groupRows[gi], seg, l0, l1, c, l, groupBias(bias, gi, cog)); errs[t] != nil {
				return
			}
			after(n, gi, l0, l1)
		}
	})
	return firstErr(errs)
}

// firstErr is the first non-nil error of errs, in index order (tasks'
// errors: the same for any split of the tasks over goroutines), or nil.
func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
