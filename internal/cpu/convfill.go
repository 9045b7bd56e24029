package cpu

import (
	"errors"
	"unsafe"

	"github.com/gops-dev/gops/internal/gemm"
	"github.com/gops-dev/gops/internal/par"
)

// convProduct is Conv's member mode by products (the convolutions that
// neither the direct kernels nor Winograd take), with ConvForward's bias
// and epilogue ep (nil: none). On gops' own product (a nil mul) the
// forward pass, the input's gradient for a batch of few output positions
// and the weight gradient build their operands straight into the
// product's packed blocks and panels (convForwardFilled, convInputFilled,
// convWeightFilled), and the forward pass of a kernel with few column rows
// a channel and many positions (the ResNet stem) and its weight gradient
// fill their panels from a padded, phased copy of the input
// (convForwardPhased, convWeightPhased); everything else,
// and every product of another BLAS, is convGEMMWith (im2col of blocks,
// then products).
func convProduct[T Float](g *ConvGeom, mode ConvMode, mul Product[T], out, a, w, bias []T, ep *Epilogue[T]) error {
	if mul == nil {
		switch {
		case mode == ConvForward && forwardFills(g):
			return convForwardFilled(g, out, a, w, bias, ep)
		case mode == ConvForward && phasedForwards[T](g):
			return convForwardPhased(g, out, a, w, bias, ep)
		case mode == ConvInput && inputFills(g):
			return convInputFilled(g, out, a, w)
		case mode == ConvWeight && weightFills(g):
			return convWeightFilled(g, out, a, w)
		case mode == ConvWeight && phasedWeights[T](g):
			return convWeightPhased(g, out, a, w)
		}
	}
	return convGEMMWith(g, mode, mul, out, a, w, bias, ep)
}

// forwardFills reports whether ConvForward of g runs convForwardFilled:
// a convolution with columns to build (a pointwise one's are the input:
// its product reads them in place) and fewer output positions in the
// batch than output channels in a group. With more, convGEMM's blocks of
// columns ran faster on a warm cache than panels filled one by one (3×3
// 64→64 at 56×56, batch 2: 2.1 against 4.3 ms; the ResNet stem, batch 8:
// 12.7 against 16.2); the results are the same bits either way.
func forwardFills(g *ConvGeom) bool {
	return !g.Pointwise() && g.N*g.L() < g.Cout/max(1, g.Groups)
}

// inputFills reports whether ConvInput of g runs convInputFilled: a
// convolution with columns to add back (a pointwise one's are the input's
// gradient, which its products write in place) and fewer output positions
// in the batch than column rows in a group: convGEMM's products, one per
// sample, each packed the whole weight for a few columns.
func inputFills(g *ConvGeom) bool { return !g.Pointwise() && g.N*g.L() < g.Rows() }

// weightFills reports whether ConvWeight of g runs convWeightFilled: at
// least weightFillRows column rows in all (a narrow gradient, the ResNet
// stem's 147 rows, keeps convGEMM's split of the product by rows). The
// two paths sum the samples differently (convGEMM each sample's positions
// apart), so the choice depends on the geometry alone: never on
// GOMAXPROCS, the jobs running beside it or the micro-kernel's tile.
func weightFills(g *ConvGeom) bool {
	return g.Groups*g.Rows() >= weightFillRows && g.Cout/max(1, g.Groups) <= weightFillChannels
}

// weightFillRows and weightFillChannels are weightFills' bounds: eight
// panels of the AVX-512 float32 kernel (four a goroutine on two cores),
// and at most 512 output channels a group, whose K block of G (512 KiB
// of float32) stays in L2 beside the panels (1×1 256→1024 at 14×14,
// batch 8: 2.6 ms by convGEMM against 3.4 filled).
const (
	weightFillRows     = 256
	weightFillChannels = 512
)

// panelWidth is gemm.PanelWidth of T's width.
func panelWidth[T Float]() int {
	if unsafe.Sizeof(T(0)) == 4 {
		return gemm.PanelWidth[float32]()
	}
	return gemm.PanelWidth[float64]()
}

// convForwardFilled is ConvForward on gops' own product (then the bias
// and ep, as convGEMMWith's) for a batch of few output positions
// (forwardFills): per group one product W_g [Cout/Groups, Rows] times the
// samples' columns [Rows, L] side by side along n (gemm.GemmFill's
// segments: each sample's output in its place), the goroutines taking
// tiles of output channels, each packing only its rows of the weight
// (gemm.PackAColumns). The panels' rows are im2col rows gathered where the
// micro-kernel reads them from a zero-padded, column-phased copy of the
// input made once a call (phasedInput, gatherPanel: element (tap, position)
// at the tap's offset plus the position's, no bounds to test; im2colRows'
// element-by-element gather of runs of at most gatherMax positions took as
// long as the products at 8×8); convGEMM multiplied each sample alone,
// packing the whole weight for a few columns (at 2×2 output positions one
// panel of 32 columns held 4). Each goroutine does the bias and ep on the
// channels it wrote. Bitwise convGEMMWith's result: the same products,
// element by element.
func convForwardFilled[T Float](g *ConvGeom, out, x, w, bias []T, ep *Epilogue[T]) error {
	l := g.L()
	after := func(c0, c1 int) { // the bias and ep of output channels [c0, c1)
		if len(bias) == 0 && ep.empty() {
			return
		}
		for n := 0; n < g.N; n++ {
			for co := c0; co < c1; co++ {
				ep.channel(out, bias, (n*g.Cout+co)*l, co, 0, l, l)
			}
		}
	}
	if unsafe.Sizeof(T(0)) == 4 {
		return forwardFilled(g, asF32(out), asF32(x), asF32(w), after)
	}
	return forwardFilled(g, asF64(out), asF64(x), asF64(w), after)
}

// forwardFilled is convForwardFilled on gemm's element types; after,
// called on the goroutine that wrote them once output channels [c0, c1)
// of every sample are written, does the bias and the epilogue.
func forwardFilled[T gemm.Float](g *ConvGeom, out, x, w []T, after func(c0, c1 int)) error {
	l, cog, rows := g.L(), g.Cout/g.Groups, g.Rows()
	nr, mr := panelWidth[T](), gemm.TileRows[T]()
	tiles := (cog + mr - 1) / mr
	errs := make([]error, g.Groups*tiles)
	pad, lay, taps := phasedInput(g, x)
	defer colsScratch[T]().Put(pad)
	par.ForWork(len(errs), g.N*g.Cout*rows*l, func(lo, hi int) {
		defer par.Outer(1)() // the epilogue's loops run on this goroutine
		pos := make([]int, nr)
		for t := lo; t < hi; {
			// Tiles [q0, q1) of group gi: its output channels [m0, m1).
			gi, q0 := t/tiles, t%tiles
			q1 := min(tiles, q0+hi-t)
			m0, m1 := q0*mr, min(cog, q1*mr)
			wg := w[(gi*cog+m0)*rows : (gi*cog+m1)*rows]
			fillA := func(dst []T, pc, kb int) { gemm.PackAColumns(dst, kb, 0, wg[pc:], rows, m1-m0, kb, false) }
			fillB := func(panel []T, pc, kb, jc, cols int) {
				for j := range cols {
					pos[j] = phasedPos(g, lay, (jc+j)/l, (jc+j)%l)
				}
				gatherPanel(panel, nr, pad, taps[gi*rows+pc:][:kb], pos[:cols])
			}
			c := out[(gi*cog+m0)*l:]
			if errs[t] = gemm.GemmFill(m1-m0, g.N*l, rows, fillA, fillB, 0, c, l, gemm.Segments{Len: l, Stride: g.Cout * l}); errs[t] != nil {
				return
			}
			after(gi*cog+m0, gi*cog+m1)
			t += q1 - q0
		}
	})
	return errors.Join(errs...)
}

// convInputFilled is ConvInput on gops' own product: per group and range
// of input channels, the columns' gradient Wᵀ [Rows', Cout/Groups] times
// the samples' gradients G [Cout/Groups, L] side by side along n, into a
// buffer of [N, Rows', L] (gemm.GemmFill's segments), then Col2im of each
// sample's part into dx. A goroutine takes ranges of the input channels
// (whose planes of dx only it writes), packs its rows of Wᵀ once for
// all the samples and builds G's panels straight from each sample's
// gradient. Bitwise convGEMMWith's result: the same products element by
// element, added back in Col2im's order.
func convInputFilled[T Float](g *ConvGeom, dx, gr, w []T) error {
	if unsafe.Sizeof(T(0)) == 4 {
		return inputFilled(g, asF32(dx), asF32(gr), asF32(w))
	}
	return inputFilled(g, asF64(dx), asF64(gr), asF64(w))
}

// inputFilled is convInputFilled on gemm's element types.
func inputFilled[T gemm.Float](g *ConvGeom, dx, gr, w []T) error {
	l, cog, rows, cpg, k := g.L(), g.Cout/g.Groups, g.Rows(), g.C/g.Groups, g.K()
	chw, nl, nr := g.C*g.H*g.W, g.N*g.L(), panelWidth[T]()
	// Chunks of cc channels: their columns for the batch at most about
	// colsSlab elements, and four chunks a goroutine or more (whole
	// chunks: a goroutine with one more than the others waits less).
	chunks := max(4*par.Procs(), (cpg*k*nl+colsSlab-1)/colsSlab)
	cc := max(1, (cpg+chunks-1)/chunks)
	chunks = (cpg + cc - 1) / cc
	same := g.SW == 1 && g.SH == 1 && g.WO == g.W
	errs := make([]error, g.Groups*chunks)
	par.ForWork(len(errs), g.N*g.C*k*l*cog, func(lo, hi int) {
		defer par.Outer(1)() // Col2im's loops run on this goroutine
		cols := colsScratch[T]().Get(cc * k * nl)
		defer colsScratch[T]().Put(cols)
		for t := lo; t < hi; t++ {
			gi, q := t/chunks, t%chunks
			c0, c1 := q*cc, min(cpg, (q+1)*cc)
			r0, m := c0*k, (c1-c0)*k
			wg := w[gi*cog*rows : (gi+1)*cog*rows]
			fillA := func(dst []T, pc, kb int) { gemm.PackAColumns(dst, kb, 0, wg[pc*rows+r0:], rows, m, kb, true) }
			fillB := func(panel []T, pc, kb, jc, ncols int) {
				for p := 0; p < kb; p++ {
					row := panel[p*nr : p*nr+ncols]
					eachSample(jc, jc+ncols, l, func(n, l0, at, wd int) {
						copyRun(row[at:at+wd], gr[(n*g.Cout+gi*cog+pc+p)*l+l0:][:wd])
					})
				}
			}
			if errs[t] = gemm.GemmFill(m, nl, cog, fillA, fillB, 0, cols, l, gemm.Segments{Len: l, Stride: m * l}); errs[t] != nil {
				return
			}
			for n := 0; n < g.N; n++ {
				cn, dn := cols[n*m*l:(n+1)*m*l], dx[n*chw:(n+1)*chw]
				if same {
					col2imShiftedOf(g, cn, dn, gi*cpg+c0, gi*cpg+c1)
				} else {
					col2imOf(g, cn, dn, gi*cpg+c0, gi*cpg+c1)
				}
			}
		}
	})
	return errors.Join(errs...)
}

// convWeightFilled is ConvWeight on gops' own product, the columns never
// held whole: one product per group, gradient G [Cout/Groups, N·L] times
// the columns' transpose [N·L, Rows], the samples' output positions side
// by side along k. Each goroutine takes a range of the product's column
// panels (column rows of the weight gradient) and, per K block of
// positions, packs the block of G (gemm.PackAColumns, from each sample's
// part) and then builds one panel's columns at a time (im2colRows, a few
// KiB) and interleaves them straight into the panel the micro-kernel
// reads (gemm.GemmFill), while both are in the core's first-level cache;
// for stride 1 and a same-width output, shiftedPanel interleaves most
// column rows straight from the (shifted) input planes instead, and with
// at most gatherMax positions a sample gatherPanel fills the panel from a
// padded, phased copy of the input (2×2 to 4×4 maps: 0.82 to 0.93 of
// im2colRows and the interleave, least of five alternating runs).
// convGEMM instead built the columns of kc positions of every row (2.3 MB
// at 256 channels) and packed them again from the last-level cache, two
// passes of the two goroutines joined at every block, and wrote the whole
// gradient once per sample and block: at 2×2 or 4×4 positions (a
// detector head's last levels) that writing was most of its time. Every
// element of the gradient is one chain of K blocks of gemm.BlockK
// positions, the samples in order (a block may hold the end of one sample
// and the start of the next), each block's sum from +0: bitwise the same
// for any GOMAXPROCS.
func convWeightFilled[T Float](g *ConvGeom, out, x, gr []T) error {
	if unsafe.Sizeof(T(0)) == 4 {
		return weightFilled(g, asF32(out), asF32(x), asF32(gr))
	}
	return weightFilled(g, asF64(out), asF64(x), asF64(gr))
}

// weightFilled is convWeightFilled on gemm's element types.
func weightFilled[T gemm.Float](g *ConvGeom, out, x, gr []T) error {
	l, cog, rows, cpg := g.L(), g.Cout/g.Groups, g.Rows(), g.C/g.Groups
	chw, hw, nr, kc := g.C*g.H*g.W, g.H*g.W, panelWidth[T](), blockK[T]()
	panels := (rows + nr - 1) / nr
	errs := make([]error, g.Groups*panels)
	// The shifted geometry's panels read most rows in place
	// (shiftedPanel); on small planes, where most spans meet the image's
	// top or bottom, all of them, from a copy with zero rows above and
	// below (padInput).
	same := g.SW == 1 && g.SH == 1 && g.WO == g.W && !g.Pointwise()
	var pad padded[T]
	if same && hw <= padPlaneMax*kc && l > gatherMax { // spans of at most gatherMax are gathered
		pad = padInput(g, x)
		defer colsScratch[T]().Put(pad.buf)
	}
	// With at most gatherMax positions a sample (a detector head's last
	// levels) every span is gathered straight into the panel from a
	// phased copy (gatherPanel: a row of the panel is a position, a
	// column a column row).
	var whole []T
	var lay phased
	var taps []int
	if !g.Pointwise() && l <= gatherMax {
		whole, lay, taps = phasedInput(g, x)
		defer colsScratch[T]().Put(whole)
	}
	par.ForWork(len(errs), g.N*g.Cout*rows*l, func(lo, hi int) {
		var scratch []T
		var pr *panelRows[T]
		var pos []int
		switch {
		case whole != nil: // gatherPanel alone
			pos = make([]int, l)
		case !g.Pointwise():
			scratch = colsScratch[T]().Get(nr * kc)
			defer colsScratch[T]().Put(scratch)
			pr = newPanelRows[T](nr)
		}
		for t := lo; t < hi; {
			// Panels [q0, q1) of group gi: its rows [j0, j1).
			gi, q0 := t/panels, t%panels
			q1 := min(panels, q0+hi-t)
			j0, j1 := q0*nr, min(rows, q1*nr)
			xg := func(n int) []T { return x[n*chw+gi*cpg*hw : n*chw+(gi+1)*cpg*hw] } // the group's channels
			fillA := func(dst []T, pc, kb int) {
				eachSample(pc, pc+kb, l, func(n, l0, p0, w int) {
					gemm.PackAColumns(dst, kb, p0, gr[n*g.Cout*l+gi*cog*l+l0:], l, cog, w, false)
				})
			}
			fillB := func(panel []T, pc, kb, jc, cols int) {
				r := j0 + jc // the panel's first row in the group
				eachSample(pc, pc+kb, l, func(n, l0, p0, w int) {
					switch {
					case whole != nil:
						for q := range w {
							pos[q] = phasedPos(g, lay, n, l0+q)
						}
						gatherPanel(panel[p0*nr:], nr, whole, pos[:w], taps[gi*rows+r:][:cols])
						return
					case scratch == nil: // pointwise: the input is the columns
						gemm.Interleave(panel[p0*nr:], nr, xg(n)[r*l+l0:], l, cols, w)
						return
					case same && w > gatherMax:
						shiftedPanel(g, xg(n), pad.at(g, n, gi*cpg), panel[p0*nr:], nr, scratch, pr, r, r+cols, l0, w)
						return
					}
					im2colRows(g, xg(n), scratch, w, r, r+cols, l0, l0+w)
					gemm.Interleave(panel[p0*nr:], nr, scratch, w, cols, w)
				})
			}
			if err := gemm.GemmFill(cog, j1-j0, g.N*l, fillA, fillB, 0, out[gi*cog*rows+j0:], rows, gemm.Segments{}); err != nil {
				errs[t] = err
				return
			}
			t += q1 - q0
		}
	})
	return firstErr(errs)
}

// panelRows is shiftedPanel's record of a panel's rows: each row's
// positions, and the panel entries (row, output column) to set to 0.
type panelRows[T gemm.Float] struct {
	srcs  [][]T
	clear [][2]int
}

func newPanelRows[T gemm.Float](rows int) *panelRows[T] {
	return &panelRows[T]{srcs: make([][]T, rows)}
}

// shiftedPanel writes column rows [r0, r1) of one sample's (or group's)
// planes x [C', H, W], output positions [l0, l0+w), for stride 1 and
// WO = W (shiftedRow's geometry), as the columns of a panel: dst[p·ld+j]
// is row r0+j's position l0+p, bitwise im2colRows then gemm.Interleave.
// A row whose positions all read image rows at plane indices inside the
// plane (its shift's run is the whole span: all but the rows near the
// image's top and bottom edges) is interleaved from the plane in place
// (gemm.InterleaveRows), and then its positions in the output columns
// outside [wlo, whi), which read the neighbouring image row, are set to
// 0 in the panel; the other rows are built in scratch (shiftedRow, at
// most len(pr.srcs)·w elements) first. The columns' row-by-row build and
// its second pass cost more than the product's FMAs on them (3×3 64→64:
// a quarter of the weight gradient's time).
func shiftedPanel[T gemm.Float](g *ConvGeom, x []T, pad paddedAt[T], dst []T, ld int, scratch []T, pr *panelRows[T], r0, r1, l0, w int) {
	hw, k := g.H*g.W, g.K()
	srcs := pr.srcs[:r1-r0]
	pr.clear = pr.clear[:0]
	hoLo, hoHi := l0/g.W, (l0+w-1)/g.W // the span's output rows
	for r := r0; r < r1; r++ {
		c, kk := r/k, r%k
		ki, kj := kk/g.KW, kk%g.KW
		x0, y0 := kj*g.DW-g.PW, ki*g.DH-g.PH
		wlo, whi := validCols(x0, 1, g.W, g.WO)
		plane := x[c*hw : (c+1)*hw]
		// Every position's output row reads an image row (newShift's
		// run [a, b) is the whole span), at plane index p + off inside
		// the plane ([ca, cb) too); or the padded copy holds every
		// position's row, the image's or a zero row.
		off := y0*g.W + x0
		inPlane := wlo < whi && hoLo+y0 >= 0 && hoHi+y0 < g.H && l0+off >= 0 && l0+w+off <= hw
		if inPlane || pad.buf != nil {
			if inPlane {
				srcs[r-r0] = plane[l0+off:][:w]
			} else {
				srcs[r-r0] = pad.row(g, c, ki, x0, l0, w)
			}
			// The output columns [0, wlo) and [whi, W): those
			// clearOutside clears.
			for col := 0; col < wlo; col++ {
				pr.clear = append(pr.clear, [2]int{r - r0, col})
			}
			for col := whi; col < g.W; col++ {
				pr.clear = append(pr.clear, [2]int{r - r0, col})
			}
			continue
		}
		row := scratch[(r-r0)*w:][:w]
		shiftedRow(row, plane, g, l0, y0, x0, wlo, whi)
		srcs[r-r0] = row
	}
	gemm.InterleaveRows(dst, ld, srcs, w)
	if len(pr.clear) == 0 {
		return
	}
	for rs := l0 / g.W * g.W; rs < l0+w; rs += g.W { // each output row in the span
		for _, e := range pr.clear {
			if p := rs + e[1]; p >= l0 && p < l0+w {
				dst[(p-l0)*ld+e[0]] = 0
			}
		}
	}
}

// padPlaneMax is the largest plane, in K blocks of positions, whose
// weight gradient reads its column rows from a padded copy of the input
// (padInput): on a larger plane most spans lie inside the image, and
// the copy costs more than the few rows built at its edges.
const padPlaneMax = 4

// padded is a copy of a convolution's input x [N, C, H, W] for
// shiftedPanel (stride 1, WO = W): each plane with PH zero rows above
// and below, [N, C, H+2·PH, W], and m elements before and after the
// whole, so that a column row's span of output positions is one run of
// the copy: position p of row (c, ki, kj) at plane c's start +
// p + ki·DH·W + x0, x0 = kj·DW − PW (the neighbouring row's elements at
// output columns outside the image, which shiftedPanel clears, and up to
// m elements beyond the planes, for the first and last planes' edges).
// Its buf is nil for none.
type padded[T gemm.Float] struct {
	buf   []T
	m, hp int // the margin; the padded plane's rows
}

// paddedAt is a padded copy at one sample's (or group's) planes: the
// copy and the index of its first plane in it.
type paddedAt[T gemm.Float] struct {
	padded[T]
	base int
}

// padInput copies x into a padded (colsScratch's buffer, which the
// caller puts back), planes in parallel.
func padInput[T gemm.Float](g *ConvGeom, x []T) padded[T] {
	hw := g.H * g.W
	p := padded[T]{m: max(g.PW, (g.KW-1)*g.DW-g.PW), hp: g.H + 2*g.PH}
	ph := p.hp * g.W
	p.buf = colsScratch[T]().Get(2*p.m + g.N*g.C*ph)
	clear(p.buf[:p.m])
	clear(p.buf[p.m+g.N*g.C*ph:])
	par.ForWork(g.N*g.C, g.N*g.C*ph, func(lo, hi int) {
		for q := lo; q < hi; q++ {
			dst := p.buf[p.m+q*ph:][:ph]
			top := g.PH * g.W
			clear(dst[:top])
			copy(dst[top:top+hw], x[q*hw:(q+1)*hw])
			clear(dst[top+hw:])
		}
	})
	return p
}

// at is p at sample n's planes from channel c0 on (the zero paddedAt
// when p holds none).
func (p padded[T]) at(g *ConvGeom, n, c0 int) paddedAt[T] {
	if p.buf == nil {
		return paddedAt[T]{}
	}
	return paddedAt[T]{p, p.m + (n*g.C+c0)*p.hp*g.W}
}

// row is the run of w positions from output position l0 of column row
// (c, ki, ·) with column offset x0, c counted from the paddedAt's plane.
func (p paddedAt[T]) row(g *ConvGeom, c, ki, x0, l0, w int) []T {
	return p.buf[p.base+c*p.hp*g.W+ki*g.DH*g.W+x0+l0:][:w]
}

// eachSample calls f for the samples' parts of the batch's positions
// [j0, j1), the samples' output positions side by side (position j of
// sample j / l at j mod l): sample n's positions [l0, l0+w) at offset at
// from j0.
func eachSample(j0, j1, l int, f func(n, l0, at, w int)) {
	for j := j0; j < j1; {
		n, l0 := j/l, j%l
		w := min(j1-j, l-l0)
		f(n, l0, j-j0, w)
		j += w
	}
}

// im2colRows writes column rows [r0, r1) of one sample's (or group's)
// planes x [C', H, W] (row r = c·K + ki·KW + kj, as Im2col's), output
// positions [l0, l1), into dst, row r at dst[(r−r0)·ld:][:l1−l0], on the
// calling goroutine: Im2col's values. Runs of at most gatherMax
// positions are gathered element by element (im2colGather): a run's
// shifted copy and its clearing cost more than that for a few elements.
func im2colRows[T Float](g *ConvGeom, x, dst []T, ld, r0, r1, l0, l1 int) {
	if l1-l0 <= gatherMax {
		im2colGather(g, x, dst, ld, r0, r1, l0, l1)
		return
	}
	hw, k := g.H*g.W, g.K()
	same := g.SW == 1 && g.SH == 1 && g.WO == g.W
	for r := r0; r < r1; r++ {
		c, kk := r/k, r%k
		ki, kj := kk/g.KW, kk%g.KW
		x0, y0 := kj*g.DW-g.PW, ki*g.DH-g.PH
		wlo, whi := validCols(x0, g.SW, g.W, g.WO)
		row, plane := dst[(r-r0)*ld:][:l1-l0], x[c*hw:(c+1)*hw]
		if same {
			shiftedRow(row, plane, g, l0, y0, x0, wlo, whi)
		} else {
			im2colRow(row, plane, g, l0, y0, x0, wlo, whi)
		}
	}
}

// phasedPos is the offset in phasedInput's copy (layout lay) of output
// position q of sample n for the tap at offset 0: column row r's element
// at that position is at taps[r] + phasedPos (inputOffsets' taps).
func phasedPos(g *ConvGeom, lay phased, n, q int) int {
	return n*g.C*lay.plane() + q/g.WO*g.SH*lay.row() + q%g.WO
}

// gatherPanel writes rows p < len(taps) of a panel of nr columns, their
// first len(pos) columns: panel[p·nr + j] = src[taps[p] + pos[j]].
func gatherPanel[T Float](panel []T, nr int, src []T, taps, pos []int) {
	if gatherRows(panel, nr, src, taps, pos) {
		return
	}
	for p, t := range taps {
		row := panel[p*nr:][:len(pos)]
		s := src[t:]
		for j, o := range pos {
			row[j] = s[o]
		}
	}
}

// gatherMaxCols is the most columns of a panel gatherRows fills (an
// AVX-512 float32 panel's width): positions in the forward's panels,
// column rows in the weight gradient's.
const gatherMaxCols = 32

// gatherMax is the longest run of positions im2colRows gathers element by
// element, and the most positions a sample may have for weightFilled to
// fill every panel by gatherPanel.
const gatherMax = 16

// im2colGather is im2colRows element by element: output (ho, wo) of row
// (c, ki, kj) reads x[c, ho·SH − PH + ki·DH, wo·SW − PW + kj·DW], 0
// outside the image.
func im2colGather[T Float](g *ConvGeom, x, dst []T, ld, r0, r1, l0, l1 int) {
	hw, k := g.H*g.W, g.K()
	for r := r0; r < r1; r++ {
		c, kk := r/k, r%k
		ki, kj := kk/g.KW, kk%g.KW
		x0, y0 := kj*g.DW-g.PW, ki*g.DH-g.PH
		row, plane := dst[(r-r0)*ld:][:l1-l0], x[c*hw:(c+1)*hw]
		ho, wo := l0/g.WO, l0%g.WO
		for i := range row {
			y, xx := y0+ho*g.SH, x0+wo*g.SW
			var v T
			if uint(y) < uint(g.H) && uint(xx) < uint(g.W) {
				v = plane[y*g.W+xx]
			}
			row[i] = v
			if wo++; wo == g.WO {
				ho, wo = ho+1, 0
			}
		}
	}
}

// copyRun is copy(dst, src) for a run of a panel's row, without a call
// to memmove for a whole panel width (64 or 128 bytes: the AVX2 and
// AVX-512 kernels'); dst and src do not overlap.
func copyRun[T Float](dst, src []T) {
	if bytes := len(src) * int(unsafe.Sizeof(T(0))); (bytes == 64 || bytes == 128) && len(dst) >= len(src) {
		gemm.CopyPanelRow(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src)), bytes)
		return
	}
	copy(dst, src)
}
