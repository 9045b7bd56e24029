package cpu

import (
	"fmt"
	"unsafe"

	"github.com/gops-dev/gops/internal/gemm"
	"github.com/gops-dev/gops/internal/par"
	"github.com/gops-dev/gops/internal/vmath"
)

// ConvGeom is the geometry of a 2-D convolution as
// torch.nn.functional.conv2d computes it: input [N, C, H, W], weight
// [Cout, C/Groups, KH, KW], output [N, Cout, HO, WO] with
// HO = (H + 2·PH − DH·(KH−1) − 1)/SH + 1, likewise WO.
//
// A sample's columns (im2col) are [C·K, L], K = KH·KW kernel positions and
// L = HO·WO output positions: row c·K + ki·KW + kj, column ho·WO + wo holds
// input (c, ho·SH − PH + ki·DH, wo·SW − PW + kj·DW), 0 outside the image.
// Group g's rows are the contiguous block [g·Rows(), (g+1)·Rows()).
type ConvGeom struct {
	N, C, H, W int
	Cout       int
	Groups     int
	KH, KW     int
	SH, SW     int // stride
	PH, PW     int // padding
	DH, DW     int // dilation
	HO, WO     int
}

// OutSize is the output size of a convolution along one axis, or an error
// when the dilated kernel is larger than the padded input.
func OutSize(in, k, stride, pad, dil int) (int, error) {
	span := dil*(k-1) + 1
	if in+2*pad < span {
		return 0, fmt.Errorf("dilated kernel %d larger than the padded input %d", span, in+2*pad)
	}
	return (in+2*pad-span)/stride + 1, nil
}

// K is the number of kernel positions, KH·KW.
func (g *ConvGeom) K() int { return g.KH * g.KW }

// L is the number of output positions, HO·WO.
func (g *ConvGeom) L() int { return g.HO * g.WO }

// Rows is the number of column rows of one group, C/Groups·K.
func (g *ConvGeom) Rows() int { return g.C / g.Groups * g.K() }

// Pointwise reports whether a sample's columns are the sample itself (a
// 1×1 kernel, stride 1, no padding): no im2col is needed.
func (g *ConvGeom) Pointwise() bool {
	return g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1 && g.PH == 0 && g.PW == 0
}

// Im2col writes the columns of one sample x [C, H, W] into cols [C·K, L],
// channels in parallel. Each output row reads input columns
// x0 + wo·SW for the wo in validCols; the others are 0.
func Im2col[T Float](g *ConvGeom, x, cols []T) {
	im2colSpan(g, x, cols, 0, g.L())
}

// im2colSpan is Im2col for the output positions [l0, l1) alone: cols
// [C·K, l1−l0], Im2col's columns l0 to l1.
func im2colSpan[T Float](g *ConvGeom, x, cols []T, l0, l1 int) {
	l := l1 - l0
	if g.SW == 1 && g.SH == 1 && g.WO == g.W {
		colRows(g, x, func(plane []T, r, y0, x0, wlo, whi int) {
			shiftedRow(cols[r*l:][:l], plane, g, l0, y0, x0, wlo, whi)
		})
		return
	}
	colRows(g, x, func(plane []T, r, y0, x0, wlo, whi int) {
		im2colRow(cols[r*l:][:l], plane, g, l0, y0, x0, wlo, whi)
	})
}

// im2colRow writes one column row's output positions [l0, l0+len(row)):
// output (ho, wo) reads plane (y0 + ho·SH, x0 + wo·SW), 0 outside the
// image; [wlo, whi) are the wo inside it.
func im2colRow[T Float](row, plane []T, g *ConvGeom, l0, y0, x0, wlo, whi int) {
	l1 := l0 + len(row)
	for ho := l0 / g.WO; ho*g.WO < l1; ho++ {
		// This output row's columns [a, b) in the span, those
		// that read inside the image [lo, hi).
		a, b := max(0, l0-ho*g.WO), min(g.WO, l1-ho*g.WO)
		out := row[ho*g.WO+a-l0:][:b-a]
		lo, hi := max(a, wlo), min(b, whi)
		y := y0 + ho*g.SH
		if y < 0 || y >= g.H || lo >= hi {
			clear(out)
			continue
		}
		clear(out[:lo-a])
		clear(out[hi-a:])
		phaseRow(out[lo-a:hi-a], plane[y*g.W:(y+1)*g.W], x0+lo*g.SW, g.SW)
	}
}

// shiftedRow is im2colRow for stride 1 and WO = W (a "same" width): output
// position p reads plane index p + y0·W + x0, so the row is one shifted
// copy of the plane, then 0 in the output rows outside the image and in
// each row's columns outside [wlo, whi) (which the copy filled from the
// neighbouring image row). A 14×14 plane's row is one copy instead of 14.
func shiftedRow[T Float](row, plane []T, g *ConvGeom, l0, y0, x0, wlo, whi int) {
	sh, ok := newShift(g, len(plane), l0, l0+len(row), y0, x0, wlo, whi)
	if !ok {
		clear(row)
		return
	}
	clear(row[:sh.ca-l0])
	clear(row[sh.cb-l0:])
	if sh.ca < sh.cb {
		copyRun(row[sh.ca-l0:sh.cb-l0], plane[sh.ca+sh.off:sh.cb+sh.off])
	}
	clearOutside(row, sh, l0, g.W, wlo, whi)
}

// shift is a same-width column row's run over output positions [l0, l1):
// [a, b) the positions whose output row reads an image row, [ca, cb) those
// of them whose plane index p + off lies in the plane.
type shift struct{ a, b, ca, cb, off int }

// newShift is the run of a column row with offsets y0, x0 over a plane of
// n elements; false when no position reads the image.
func newShift(g *ConvGeom, n, l0, l1, y0, x0, wlo, whi int) (shift, bool) {
	w := g.W
	s := shift{off: y0*w + x0}
	s.a, s.b = max(l0, max(0, -y0)*w), min(l1, min(g.HO, g.H-y0)*w)
	if s.a >= s.b || wlo >= whi {
		return s, false
	}
	s.ca = min(max(s.a, -s.off), s.b)
	s.cb = max(min(s.b, n-s.off), s.ca)
	return s, true
}

// clearOutside sets to 0 the positions of row (its first at l0) in [a, b)
// whose output column is outside [wlo, whi): those the shifted run took
// from the neighbouring image row.
func clearOutside[T Float](row []T, s shift, l0, w, wlo, whi int) {
	if wlo == 0 && whi == w {
		return
	}
	for rs := s.a / w * w; rs < s.b; rs += w {
		if lo, hi := max(s.a, rs), min(s.b, rs+wlo); lo < hi {
			clear(row[lo-l0 : hi-l0])
		}
		if lo, hi := max(s.a, rs+whi), min(s.b, rs+w); lo < hi {
			clear(row[lo-l0 : hi-l0])
		}
	}
}

// colRows calls row once for every column row r = c·K + ki·KW + kj of one
// sample, with channel c's plane of planes [C, H, W]: channels and kernel
// rows in parallel (Im2col only reads the planes; the stem's 3 channels,
// split by channel alone, left one of two workers a third of the rows).
// Output (ho, wo) of the row reads input (y0 + ho·SH, x0 + wo·SW),
// y0 = ki·DH − PH, x0 = kj·DW − PW; [wlo, whi) are the wo that read inside
// the image (validCols). Im2col and Col2im walk the same rows.
func colRows[T Float](g *ConvGeom, planes []T, row func(plane []T, r, y0, x0, wlo, whi int)) {
	walkColRows(g, planes, 0, g.C, g.KH, row)
}

// colRowsOf is colRows for the channels [c0, c1) alone, r counted from
// channel c0's first row, channels in parallel and a channel's rows in
// order on one worker (Col2im adds them into its plane).
func colRowsOf[T Float](g *ConvGeom, planes []T, c0, c1 int, row func(plane []T, r, y0, x0, wlo, whi int)) {
	walkColRows(g, planes, c0, c1, 1, row)
}

// walkColRows calls row for the column rows of channels [c0, c1), split
// among the workers in parts of KH/parts kernel rows of a channel (parts
// divides KH).
func walkColRows[T Float](g *ConvGeom, planes []T, c0, c1, parts int, row func(plane []T, r, y0, x0, wlo, whi int)) {
	hw := g.H * g.W
	// A row's columns depend on kj alone: found once, not per row.
	spans := make([][3]int, g.KW)
	for kj := range spans {
		x0 := kj*g.DW - g.PW
		wlo, whi := validCols(x0, g.SW, g.W, g.WO)
		spans[kj] = [3]int{x0, wlo, whi}
	}
	per := g.KH / parts
	par.ForWork((c1-c0)*parts, (c1-c0)*g.K()*g.L(), func(lo, hi int) {
		for part := lo; part < hi; part++ {
			c, k0 := c0+part/parts, part%parts*per
			plane := planes[c*hw : (c+1)*hw]
			for ki := k0; ki < k0+per; ki++ {
				for kj, s := range spans {
					row(plane, ((c-c0)*g.KH+ki)*g.KW+kj, ki*g.DH-g.PH, s[0], s[1], s[2])
				}
			}
		}
	})
}

// colsSlab is the number of elements of the columns Conv's members hold
// at a time: a slab that stays in cache between Im2col and the product
// that reads it, or between the product that writes it and Col2im that
// reads it.
const colsSlab = 1 << 17

// forwardRows is the number of output rows whose columns ConvForward
// builds and multiplies at a time: about colsSlab elements, and at least
// 128 columns (each block's product packs the whole weight again: on
// fewer columns, 3×3 256 → 256 at 14×14, that cost more than the cache
// saved); all rows when that is more than half of them, or when the
// convolution is pointwise (no columns to build).
func forwardRows(g *ConvGeom) int {
	if g.Pointwise() {
		return g.HO
	}
	hb := max(colsSlab/max(1, g.C*g.K()*g.WO), (128+g.WO-1)/max(1, g.WO))
	if 2*hb > g.HO {
		return g.HO
	}
	return hb
}

// weightSpan is the number of output positions whose columns
// ConvWeight builds and multiplies at a time: about colsSlab elements, a
// multiple of the product's K block kc (so that the products' sums are
// bitwise the whole one's, gemm.BlockK), at least kc; all of them for a
// pointwise convolution.
func weightSpan(g *ConvGeom, kc int) int {
	if g.Pointwise() {
		return g.L()
	}
	lb := colsSlab / max(1, g.C*g.K()) / kc * kc
	return min(g.L(), max(kc, lb))
}

// blockK is gemm.BlockK of T's width.
func blockK[T Float]() int {
	if unsafe.Sizeof(T(0)) == 4 {
		return gemm.BlockK[float32]()
	}
	return gemm.BlockK[float64]()
}

// inputChunk is the number of channels whose columns ConvInput computes
// at a time: about colsSlab elements of columns, at most a group's
// channels, a multiple of 4 from 4 on (for a 3×3 kernel, 36 rows: whole
// 12- or 6-row tiles of the product). When one channel's columns exceed
// the slab (the ResNet stem's 7×7 at 112×112), all of the group's at once:
// fewer rows per product would only fill its tiles worse.
func inputChunk(g *ConvGeom) int {
	cpg := max(1, g.C/max(1, g.Groups))
	cc := colsSlab / max(1, g.K()*g.L())
	if cc == 0 {
		return cpg
	}
	if cc >= 4 {
		cc -= cc % 4
	}
	return min(cc, cpg)
}

// inputRows is the number of output rows whose columns' gradient
// ConvInput computes and adds back at a time when a group's channels
// make one chunk (inputChunk) whose columns exceed colsSlab elements (the
// ResNet stem's 147 rows of 112×112 positions: 7.4 MB a sample in
// float32, written by the product and read back by Col2im from memory):
// about colsSlab elements of columns, at least one row; g.HO (all at once)
// otherwise. The blocks run from the last output rows to the first, so
// that every element of the input's gradient still receives its terms in
// the order of the column rows (kernel position (ki, kj) reaches input
// row y from output row (y + PH − ki·DH)/SH, later rows for smaller ki):
// bitwise the unblocked sums.
func inputRows(g *ConvGeom) int {
	cpg := max(1, g.C/max(1, g.Groups))
	rows := cpg * g.K()
	if inputChunk(g) < cpg || rows*g.L() <= colsSlab {
		return g.HO
	}
	return max(1, colsSlab/max(1, rows*g.WO))
}

// validCols is the range [lo, hi) of output columns wo whose input column
// x0 + wo·stride lies in [0, w), among wo < wout.
func validCols(x0, stride, w, wout int) (lo, hi int) {
	if x0 < 0 {
		lo = (-x0 + stride - 1) / stride
	}
	if w-1-x0 < 0 {
		return 0, 0
	}
	hi = min(wout, (w-1-x0)/stride+1)
	return min(lo, hi), hi
}

// Col2im adds the columns cols [C·K, L] of one sample into dx [C, H, W]
// (Im2col's transpose), channels in parallel; within a channel in the
// order of kernel positions, then output positions, so the sums are the
// same for any GOMAXPROCS.
func Col2im[T Float](g *ConvGeom, cols, dx []T) {
	col2imOf(g, cols, dx, 0, g.C)
}

// col2imOf is Col2im for the channels [c0, c1) alone, cols their rows
// [(c1−c0)·K, L].
func col2imOf[T Float](g *ConvGeom, cols, dx []T, c0, c1 int) {
	col2imRowsOf(g, cols, dx, c0, c1, 0, g.HO)
}

// col2imRowsOf is col2imOf for the output rows [ho0, ho1) alone: cols
// holds their positions, [(c1−c0)·K, (ho1−ho0)·WO].
func col2imRowsOf[T Float](g *ConvGeom, cols, dx []T, c0, c1, ho0, ho1 int) {
	l := (ho1 - ho0) * g.WO
	colRowsOf(g, dx, c0, c1, func(plane []T, r, y0, x0, wlo, whi int) {
		row := cols[r*l:][:l]
		for ho := ho0; ho < ho1; ho++ {
			y := y0 + ho*g.SH
			if y < 0 || y >= g.H || wlo >= whi {
				continue
			}
			dst := plane[y*g.W : (y+1)*g.W]
			in := row[(ho-ho0)*g.WO:][:g.WO]
			if g.SW == 1 {
				addTo(in[wlo:whi], dst[x0+wlo:x0+whi])
				continue
			}
			w0 := wlo
			if g.SW == 2 {
				w0 += addEvens(dst[x0+wlo*2:], in[wlo:whi])
			}
			for wo := w0; wo < whi; wo++ {
				dst[x0+wo*g.SW] += in[wo]
			}
		}
	})
}

// col2imShiftedOf is col2imOf for stride 1 and WO = W (shiftedRow's
// geometry) into a dx that was cleared: each column row's positions that
// read outside the image are set to 0 in cols (scratch, which this
// overwrites), then the row is added into the plane in one shifted run:
// the positions of the other image rows that the zeros land on gain +0,
// which leaves them as they are (a sum that started from +0 is never −0),
// so the result is col2imOf's, bitwise, with the rows added in the same
// order.
func col2imShiftedOf[T Float](g *ConvGeom, cols, dx []T, c0, c1 int) {
	l := g.L()
	colRowsOf(g, dx, c0, c1, func(plane []T, r, y0, x0, wlo, whi int) {
		row := cols[r*l:][:l]
		sh, ok := newShift(g, len(plane), 0, l, y0, x0, wlo, whi)
		if !ok {
			return
		}
		clearOutside(row, sh, 0, g.W, wlo, whi)
		if sh.ca < sh.cb {
			addTo(row[sh.ca:sh.cb], plane[sh.ca+sh.off:sh.cb+sh.off])
		}
	})
}

// ChannelSum writes s[c] = Σ over n and l of x[n, c, l] for x
// [N, C, L] (a bias gradient), in the order n, then l. Each sum is one
// chain of additions; eight channels go side by side, eight independent
// chains (an addition's latency covered), each in that order. Workers
// take grains of whole blocks of eight channels (directItems' way).
func ChannelSum[T Float](x, s []T, n, c, l int) {
	sum := func(lo, hi int) {
		ci := lo
		for ; ci+8 <= hi; ci += 8 {
			var a0, a1, a2, a3, a4, a5, a6, a7 T
			for ni := 0; ni < n; ni++ {
				r := x[(ni*c+ci)*l:][:8*l]
				r0, r1, r2, r3 := r[:l], r[l:2*l], r[2*l:3*l], r[3*l:4*l]
				r4, r5, r6, r7 := r[4*l:5*l], r[5*l:6*l], r[6*l:7*l], r[7*l:]
				for i, v := range r0 {
					a0 += v
					a1 += r1[i]
					a2 += r2[i]
					a3 += r3[i]
					a4 += r4[i]
					a5 += r5[i]
					a6 += r6[i]
					a7 += r7[i]
				}
			}
			s[ci], s[ci+1], s[ci+2], s[ci+3] = a0, a1, a2, a3
			s[ci+4], s[ci+5], s[ci+6], s[ci+7] = a4, a5, a6, a7
		}
		for ; ci < hi; ci++ {
			var acc T
			for ni := 0; ni < n; ni++ {
				for _, v := range x[(ni*c+ci)*l:][:l] {
					acc += v
				}
			}
			s[ci] = acc
		}
	}
	if n*c*l < par.InlineWork {
		sum(0, c)
		return
	}
	par.ForGrains(c, 8*max((chanGrain+8*n*l-1)/(8*n*l), 1), sum)
}

// ChannelBroadcast writes x[n, c, l] = s[c] for x [N, C, L] (ChannelSum's
// transpose).
func ChannelBroadcast[T Float](s, x []T, n, c, l int) {
	par.ForWork(n*c, n*c*l, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			row := x[p*l:][:l]
			v := s[p%c]
			for i := range row {
				row[i] = v
			}
		}
	})
}

// AddChannelBias writes out[n, c, l] = x[n, c, l] + b[c] for x [N, C, L],
// planes in parallel.
func AddChannelBias[T Float](x, b, out []T, n, c, l int) {
	par.ForWork(n*c, n*c*l, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			vmath.Axpb(out[p*l:][:l], x[p*l:][:l], 1, b[p%c]) // 1·x + b: x + b exactly
		}
	})
}

// Product computes c = op(a)·op(b) + beta·c on row-major matrices, op(a)
// m×k and op(b) k×n, as gemm.Gemm with alpha 1. The caller picks which
// implementation runs (nn's product decision); Conv and MatMul only
// call it. A nil Product is gops' own, gemm.Gemm: with it, Winograd packs
// each U_ξ once for all its products (gemm.PackA) instead of once a
// product.
type Product[T Float] func(transA, transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) error

// orOwn is mul, or gemm.Gemm's product when mul is nil.
func (mul Product[T]) orOwn() Product[T] {
	if mul != nil {
		return mul
	}
	return ownProduct[T]
}

// ownProduct is gemm.Gemm with alpha 1 on T's float32 or float64 memory.
func ownProduct[T Float](transA, transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) error {
	if unsafe.Sizeof(beta) == 4 {
		return gemm.Gemm(transA, transB, m, n, k, 1, asF32(a), lda, asF32(b), ldb, float32(beta), asF32(c), ldc)
	}
	return gemm.Gemm(transA, transB, m, n, k, 1, asF64(a), lda, asF64(b), ldb, float64(beta), asF64(c), ldc)
}

// asF32 and asF64 are x's memory as float32 or float64 (T's underlying
// type, which the caller knows from its size).
func asF32[T Float](x []T) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}

func asF64[T Float](x []T) []float64 {
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}

// ConvMode picks one member of Conv2d's family for Conv.
type ConvMode int

// The members: per sample n, the columns of the input sample (Im2col, or
// the sample itself for a pointwise convolution) and one product per
// group:
//
//	ConvForward: out_n = W·cols(x_n) (+ bias)
//	ConvInput:   cols = Wᵀ·G_n, then out_n = Col2im(cols)
//	ConvWeight:  out += G_n·cols(x_n)ᵀ, samples in order
const (
	ConvForward ConvMode = iota
	ConvInput
	ConvWeight
)

// Conv runs one member of Conv2d's family on g with the product mul:
// ConvForward reads x [N, C, H, W] from a and the weight
// [Cout, C/Groups, KH, KW] from w, and writes out [N, Cout, HO, WO],
// adding bias [Cout] when it is not nil; ConvInput reads the gradient G
// [N, Cout, HO, WO] from a and the weight from w and writes the input's
// gradient [N, C, H, W]; ConvWeight reads G from w and x from a and
// writes the weight's gradient. With another BLAS (a non-nil mul; and
// for a few narrow geometries) ConvForward and ConvInput spread the
// samples over goroutines, a columns buffer each, and ConvWeight sums
// over the samples in order on one; ConvForward builds the columns of a
// few output rows at a time (forwardRows), ConvWeight those of a few
// output positions (weightSpan) and ConvInput those of a few channels
// (inputChunk), each used while it is in cache. On gops' own product the
// columns go straight into the product's panels instead (convProduct,
// convfill.go; ConvWeight's sums then run over the samples' positions side
// by side). Every path is chosen by the geometry and mul alone, so the
// result is bitwise the same for any GOMAXPROCS. The first error of mul
// (in sample order) is returned. Narrow groups (at most directMaxChannels
// input and output channels a group, depthwise among them) run the direct
// kernels (convdirect.go) instead, without mul, but for ConvInput with a
// weight holding ±Inf or NaN: the direct kernels would multiply it by the
// zeros around and between the spread gradient's elements, NaN where the
// tap meets no output element, so that one clears out and runs im2col.
// ConvForward and ConvInput of 3×3, stride-1, ungrouped convolutions with
// channels and output tiles enough (winoWins) run Winograd F(2×2, 3×3)
// (convwino.go) when the input (or G) and the weight are finite: its
// transforms would make Inf − Inf, NaN, where the direct sum is ±Inf.
func Conv[T Float](g *ConvGeom, mode ConvMode, mul Product[T], out, a, w, bias []T) error {
	if !directConv(g) {
		if winoWins(g, mode) && allFinite(a) {
			if ran, err := convWino(g, mode, mul, out, a, w, bias); ran {
				return err
			}
		}
		return convProduct(g, mode, mul, out, a, w, bias, nil)
	}
	switch mode {
	case ConvForward:
		directForward(g, out, a, w, bias)
	case ConvInput:
		if !allFinite(w) {
			clear(out) // Col2im adds into it
			return convGEMM(g, mode, mul, out, a, w, bias)
		}
		directInput(g, out, a, w)
	case ConvWeight:
		directWeight(g, out, a, w)
	}
	return nil
}

// groupBias is group gi's part of bias (cog channels a group), nil for
// no bias (nil or empty).
func groupBias[T Float](bias []T, gi, cog int) []T {
	if len(bias) == 0 {
		return nil
	}
	return bias[gi*cog : (gi+1)*cog]
}

// convGEMM is Conv by im2col and one product per group and sample.
func convGEMM[T Float](g *ConvGeom, mode ConvMode, mul Product[T], out, a, w, bias []T) error {
	return convGEMMWith(g, mode, mul, out, a, w, bias, nil)
}

// convGEMMWith is convGEMM with ConvForward's bias and epilogue ep (nil:
// none) applied to each block of output rows after its products.
func convGEMMWith[T Float](g *ConvGeom, mode ConvMode, mul Product[T], out, a, w, bias []T, ep *Epilogue[T]) error {
	chw, l, cog, rows := g.C*g.H*g.W, g.L(), g.Cout/g.Groups, g.Rows()
	// A pointwise forward on gops' own product packs each group's weight
	// once for all the samples (packedProducts), not once a sample (1×1
	// 256 → 1024 at 14×14, batch 8: eight packings of 1 MiB of weight
	// for 0.8 GFLOP, 4 % of the call), and runs one product over the
	// batch (pointwiseBatch); bitwise the same products, so the choice
	// may depend on the workers: with no more samples than workers, each
	// packed its copy beside the others, and one packing before them all
	// would only lengthen the call. ConvInput likewise packs each group's
	// transposed weight once (the transposed packing is a scalar loop:
	// once a sample it was 7.6 % of the 1×1's forward+backward).
	if mul == nil && (mode == ConvForward || mode == ConvInput) && g.Pointwise() && g.N > par.Procs() {
		var packed *packedProducts[T]
		var err error
		if mode == ConvForward {
			packed, err = newPackedProducts(g.Groups, cog, rows, nil, w, cog*rows, false)
		} else {
			packed, err = newPackedProducts(g.Groups, rows, cog, nil, w, cog*rows, true)
		}
		if err != nil {
			return err
		}
		defer packed.release()
		return pointwiseBatch(g, mode, packed, out, a, bias, ep)
	}
	mul = mul.orOwn()
	// newCols is a columns buffer (nil for a pointwise convolution),
	// contents undefined: Im2col and the products overwrite every
	// element; ConvForward's holds hb output rows' columns, ConvWeight's
	// lb positions', ConvInput's cc channels'.
	cc, hb, lb, ib := inputChunk(g), forwardRows(g), weightSpan(g, blockK[T]()), inputRows(g)
	newCols := func() []T {
		switch {
		case g.Pointwise():
			return nil
		case mode == ConvInput && ib < g.HO:
			return colsScratch[T]().Get(rows * ib * g.WO)
		case mode == ConvInput:
			return colsScratch[T]().Get(cc * g.K() * l)
		case mode == ConvForward:
			return colsScratch[T]().Get(g.C * g.K() * hb * g.WO)
		case mode == ConvWeight:
			return colsScratch[T]().Get(g.C * g.K() * lb)
		}
		return colsScratch[T]().Get(g.C * g.K() * l)
	}
	group := func(s []T, gi, size int) []T { return s[gi*size : (gi+1)*size] }
	// sample does sample n's part with the columns buffer cols.
	sample := func(n int, cols []T) error {
		switch {
		case mode == ConvForward:
			// The columns of hb output rows at a time, multiplied while
			// they are in cache: the products' column blocks, each
			// element the same FMAs in the same order. A pointwise
			// convolution's columns are the sample itself (hb = HO).
			dst := out[n*g.Cout*l : (n+1)*g.Cout*l]
			for ho0 := 0; ho0 < g.HO; ho0 += hb {
				ho1 := min(g.HO, ho0+hb)
				nl := (ho1 - ho0) * g.WO
				src := a[n*chw : (n+1)*chw]
				if cols != nil {
					im2colSpan(g, src, cols, ho0*g.WO, ho1*g.WO)
					src = cols
				}
				for gi := 0; gi < g.Groups; gi++ {
					if err := mul(false, false, cog, nl, rows, group(w, gi, cog*rows), rows, src[gi*rows*nl:], nl, 0, dst[gi*cog*l+ho0*g.WO:], l); err != nil {
						return err
					}
				}
				// The bias and epilogue while the block is in cache.
				ep.apply(g, out, bias, n, ho0*g.WO, ho1*g.WO)
			}
		case mode == ConvWeight:
			// The columns of lb output positions at a time, multiplied
			// while they are in cache: the product split along k at
			// multiples of its K block, bitwise the whole product (a
			// pointwise convolution's columns: the sample, lb = L).
			gn := w[n*g.Cout*l : (n+1)*g.Cout*l]
			beta := T(min(n, 1)) // the first sample overwrites
			for l0 := 0; l0 < l; l0 += lb {
				nl := min(l, l0+lb) - l0
				src := a[n*chw : (n+1)*chw]
				if cols != nil {
					im2colSpan(g, src, cols, l0, l0+nl)
					src = cols
				}
				for gi := 0; gi < g.Groups; gi++ {
					if err := mul(false, true, cog, rows, nl, gn[gi*cog*l+l0:], l, src[gi*rows*nl:], nl, beta, group(out, gi, cog*rows), rows); err != nil {
						return err
					}
				}
				beta = 1
			}
		case mode == ConvInput:
			dx := out[n*chw : (n+1)*chw]
			gn := a[n*g.Cout*l : (n+1)*g.Cout*l]
			for gi := 0; gi < g.Groups; gi++ {
				wg, gg := group(w, gi, cog*rows), group(gn, gi, cog*l)
				if cols == nil {
					if err := mul(true, false, rows, l, cog, wg, rows, gg, l, 0, group(dx, gi, rows*l), l); err != nil {
						return err
					}
					continue
				}
				cpg := g.C / g.Groups
				if ib < g.HO {
					// The columns of ib output rows at a time, the last
					// rows first (inputRows), added back while they are
					// in cache.
					for ho1 := g.HO; ho1 > 0; ho1 -= ib {
						ho0 := max(0, ho1-ib)
						nl := (ho1 - ho0) * g.WO
						if err := mul(true, false, rows, nl, cog, wg, rows, gg[ho0*g.WO:], l, 0, cols, nl); err != nil {
							return err
						}
						col2imRowsOf(g, cols, dx, gi*cpg, (gi+1)*cpg, ho0, ho1)
					}
					continue
				}
				// The columns of cc channels at a time (rows r0 on of
				// the group's), added back while they are in cache.
				for c0 := 0; c0 < cpg; c0 += cc {
					c1 := min(cpg, c0+cc)
					r0, m := c0*g.K(), (c1-c0)*g.K()
					if err := mul(true, false, m, l, cog, wg[r0:], rows, gg, l, 0, cols, l); err != nil {
						return err
					}
					if g.SW == 1 && g.SH == 1 && g.WO == g.W {
						col2imShiftedOf(g, cols, dx, gi*cpg+c0, gi*cpg+c1)
					} else {
						col2imOf(g, cols, dx, gi*cpg+c0, gi*cpg+c1)
					}
				}
			}
		}
		return nil
	}
	if mode == ConvWeight || g.N < 2 {
		// The weight gradient sums over the samples in order: one
		// goroutine, one buffer.
		cols := newCols()
		defer colsScratch[T]().Put(cols) // nil is ignored
		for n := 0; n < g.N; n++ {
			if err := sample(n, cols); err != nil {
				return err
			}
		}
		return nil
	}
	// Samples are independent: spread over goroutines, a buffer each
	// (torch's slow_conv2d keeps one for the whole batch). Each goroutine
	// counts as an outer job (par.Outer): while they run side by side,
	// the blocks' Im2col, Col2im and products run on their goroutine
	// instead of starting goroutines of their own for every block (a
	// nested loop cannot use the busy worker team; waking a thread costs
	// 13-25 µs on the 2-core VM, a block's product 100-200 µs). A sample
	// at a time (par.ForWorkGrains): inside a Gorgonia run the second
	// worker can start 0.2–0.8 ms late, and with half the samples each
	// the caller waited for it.
	errs := make([]error, g.N)
	par.ForWorkGrains(g.N, 1, g.N*g.Cout*rows*l, func(lo, hi int) {
		defer par.Outer(1)()
		cols := newCols()
		defer colsScratch[T]().Put(cols) // nil is ignored
		for n := lo; n < hi; n++ {
			errs[n] = sample(n, cols)
		}
	})
	return firstErr(errs)
}

// pointwiseBatch is a pointwise convolution's forward (a into out, with
// bias and ep) or input gradient (the output gradient a into out) on the
// groups' packed weights: per group one product over the whole batch, the
// samples side by side along n (gemm.GemmPackedASegments), in tasks of
// whole panels handed out to the workers as they come (a worker that
// starts late takes fewer). A product a sample ended in a panel of L mod
// NR columns that costs a whole panel (196 = 6·32 + 4 at 14×14: a tenth of
// the forward on the AVX-512 kernels); the batch's N·L columns end in at
// most one. Bitwise the products a sample (each element the same chain),
// so for any GOMAXPROCS.
func pointwiseBatch[T Float](g *ConvGeom, mode ConvMode, packed *packedProducts[T], out, a, bias []T, ep *Epilogue[T]) error {
	l, cog, rows := g.L(), g.Cout/g.Groups, g.Rows()
	n, nr := g.N*l, panelWidth[T]()
	// pointwiseTasks a worker, of whole panels, their sizes equal to
	// within one panel.
	panels := (n + nr - 1) / nr
	tasks := min(panels, pointwiseTasks*par.Procs())
	span := func(t int) int { return min(n, t*panels/tasks*nr) }
	// B's and C's channels a sample and a group: the input's and the
	// output's (the forward), or the other way round (the input gradient).
	bc, bg, cc, cg := g.C, rows, g.Cout, cog
	if mode == ConvInput {
		bc, bg, cc, cg = g.Cout, cog, g.C, rows
	}
	errs := make([]error, tasks)
	par.ForWorkGrains(tasks, 1, g.N*g.Cout*rows*l, func(lo, hi int) {
		defer par.Outer(1)() // the epilogue's loops on this goroutine (see convGEMMWith)
		for t := lo; t < hi; t++ {
			j0, j1 := span(t), span(t+1)
			for gi := 0; gi < g.Groups && errs[t] == nil; gi++ {
				var gb []T
				if mode == ConvForward {
					gb = groupBias(bias, gi, cog)
				}
				errs[t] = packed.runSegments(gi, n, a[gi*bg*l:], l, gemm.Segments{Len: l, Stride: bc * l},
					out[gi*cg*l:], l, gemm.Segments{Len: l, Stride: cc * l}, gb, j0, j1)
			}
			if mode == ConvForward && errs[t] == nil {
				// The epilogue on the task's positions while they are in cache.
				for j := j0; j < j1; {
					s, p0 := j/l, j%l
					p1 := min(l, p0+j1-j)
					ep.apply(g, out, nil, s, p0, p1)
					j += p1 - p0
				}
			}
		}
	})
	return firstErr(errs)
}

// pointwiseTasks is pointwiseBatch's tasks a worker: enough that one
// starting late takes fewer, few enough that each reuses its block of
// weights over several panels.
const pointwiseTasks = 4
