package cpu

import (
	"sync/atomic"

	"github.com/gops-dev/gops/internal/par"
)

// The direct kernels of grouped convolutions whose groups are narrow
// (depthwise: one input channel a group): a group's product has too few
// rows for im2col and a matrix product to pay, so each output plane is
// computed as a sum of shifted input rows times kernel taps, vectorised
// over the output width.
//
// Both directions read a padded copy of the planes they correlate with the
// taps, so no tap needs a bounds test: the forward member and the weight's
// gradient read the input padded by (PH, PW) with zeros, its columns split
// into SW phases (phase p holds padded columns p, p+SW, p+2·SW, …), so a
// tap reads consecutive elements of one phase even when SW > 1; the
// input's gradient reads the output gradient spread onto the input's grid
// (rows offH + ho·SH, columns offW + wo·SW, zeros between) and correlates
// it with the kernel turned by 180°. A 3×3 kernel at stride 1 on one
// channel a group (the depthwise case) reads the planes in place instead
// (tapRowsImage3x3, on amd64 with AVX-512): masked lanes and rows stand
// for the padding, the same sums in the same order.

// directMaxChannels is the most input channels a group, and output
// channels a group, for which Conv runs the direct kernels; wider groups
// run im2col and the matrix product. On [8, 128, 28, 28], 3×3, the three
// members together (CPU time, gops' own GEMM) run directly in 1/16 of
// the time for 1 channel a group, 1/5 for 4, 1/2.6 for 8, 1/1.8 for 16
// and about the same for 32.
const directMaxChannels = 8

// Direct reports whether Conv runs the direct kernels for g (groups of at
// most 8 input and 8 output channels, depthwise among them); they write
// every element of every member's result, ConvInput's too.
func (g *ConvGeom) Direct() bool { return directConv(g) }

// directConv reports whether Conv runs the direct kernels for g.
func directConv(g *ConvGeom) bool {
	return g.Groups > 0 && g.C > 0 && g.C/g.Groups <= directMaxChannels && g.Cout/g.Groups <= directMaxChannels
}

// phased is the layout of a zero-padded, column-phased copy of planes
// (padPlanes): planes of rows rows, each row stride phases of width
// elements.
type phased struct {
	rows, stride, width int
}

// row is the number of elements of one padded row (all its phases).
func (p phased) row() int { return p.stride * p.width }

// plane is the number of elements of one padded plane.
func (p phased) plane() int { return p.rows * p.row() }

// inputLayout is the layout of the padded input planes of g.
func inputLayout(g *ConvGeom) phased {
	return phased{rows: g.H + 2*g.PH, stride: g.SW, width: (g.W + 2*g.PW + g.SW - 1) / g.SW}
}

// inputOffsets are the offsets, from an output row's first element in the
// padded input planes (layout p), of the taps of cig input channels:
// tap ci·K + ki·KW + kj reads padded row ki·DH, column kj·DW of plane ci.
func inputOffsets(g *ConvGeom, p phased, cig int) []int {
	offs := make([]int, 0, cig*g.K())
	for ci := 0; ci < cig; ci++ {
		for ki := 0; ki < g.KH; ki++ {
			for kj := 0; kj < g.KW; kj++ {
				col := kj * g.DW
				offs = append(offs, ci*p.plane()+ki*g.DH*p.row()+col%g.SW*p.width+col/g.SW)
			}
		}
	}
	return offs
}

// padPlanes writes planes src [k, H, W] (k = len(src)/(H·W)) into dst
// (layout p), the columns phased by SW. It writes the same elements of
// dst every time, the image's: the padding is the zeros that dst holds
// there, cleared once for all the planes a worker pads.
func padPlanes[T Float](g *ConvGeom, p phased, src, dst []T) {
	hw := g.H * g.W
	for c := 0; c*p.plane() < len(dst); c++ {
		plane := dst[c*p.plane():][:p.plane()]
		if p.stride == 1 {
			copyRows(plane[g.PH*p.row()+g.PW:], src[c*hw:], g.H, g.W, p.row(), g.W)
			continue
		}
		for y := 0; y < g.H; y++ {
			row, in := plane[(g.PH+y)*p.row():][:p.row()], src[c*hw+y*g.W:][:g.W]
			for ph := 0; ph < p.stride; ph++ {
				if ilo, ihi := phaseSpan(g, p, ph); ilo < ihi {
					phaseRow(row[ph*p.width+ilo:ph*p.width+ihi], in, ilo*p.stride+ph-g.PW, p.stride)
				}
			}
		}
	}
}

// phaseSpan is the elements [ilo, ihi) of phase ph of a padded row
// (layout p) that hold image columns, padPlanes' writes (none when
// ilo ≥ ihi): phase ph's element i is padded column i·stride + ph, image
// column i·stride + ph − PW.
func phaseSpan(g *ConvGeom, p phased, ph int) (ilo, ihi int) {
	ilo = max(0, (g.PW-ph+p.stride-1)/p.stride)
	last := g.W - 1 + g.PW - ph // the last image column's padded index, less ph
	if last < 0 {
		return ilo, ilo
	}
	return ilo, min(p.width, last/p.stride+1)
}

// padBorders clears the elements of the planes dst (layout p) that
// padPlanes does not write, the padding: what clearing dst before
// padPlanes gives, without writing the image's elements twice.
func padBorders[T Float](g *ConvGeom, p phased, dst []T) {
	for c := 0; c*p.plane() < len(dst); c++ {
		plane := dst[c*p.plane():][:p.plane()]
		clear(plane[:g.PH*p.row()])
		clear(plane[(g.PH+g.H)*p.row():])
		for y := g.PH; y < g.PH+g.H; y++ {
			row := plane[y*p.row():][:p.row()]
			for ph := 0; ph < p.stride; ph++ {
				phase := row[ph*p.width:][:p.width]
				ilo, ihi := phaseSpan(g, p, ph)
				if ilo >= ihi {
					clear(phase)
					continue
				}
				clear(phase[:ilo])
				clear(phase[ihi:])
			}
		}
	}
}

// phaseRow sets dst[i] = src[x0 + i·sw] for i < len(dst), sw ≥ 1.
func phaseRow[T Float](dst, src []T, x0, sw int) {
	s := src[x0:]
	switch sw {
	case 1:
		copy(dst, s)
		return
	case 2:
		for i := evens(dst, s); i < len(dst); i++ {
			dst[i] = s[2*i]
		}
		return
	}
	for i := range dst {
		dst[i] = s[i*sw]
	}
}

// directForward is Conv's ConvForward by the direct kernels: out
// [N, Cout, HO, WO] = x [N, C, H, W] correlated with w (+ bias), the
// (sample, group) pairs in parallel (directItems).
func directForward[T Float](g *ConvGeom, out, x, w, bias []T) {
	cig, cog, k := g.C/g.Groups, g.Cout/g.Groups, g.K()
	p := inputLayout(g)
	offs := inputOffsets(g, p, cig)
	hw, l := g.H*g.W, g.L()
	// A 3×3 kernel at stride 1 reads a lone input channel in place.
	image := cig == 1 && g.KH == 3 && g.KW == 3 && g.SH == 1 && g.SW == 1 && g.DH == 1 && directAVX512
	directItems(g.N*g.Groups, g.N*g.Cout*cig*k*l, func(lo, hi int) {
		var pad []T
		if !image {
			pad = floatScratch[T]().Get(cig * p.plane())
			defer floatScratch[T]().Put(pad)
			clear(pad) // the padding, for every padPlanes below
		}
		for item := lo; item < hi; item++ {
			n, gi := item/g.Groups, item%g.Groups
			planes := x[(n*g.C+gi*cig)*hw:][:cig*hw]
			if !image {
				padPlanes(g, p, planes, pad)
			}
			for j := 0; j < cog; j++ {
				co := gi*cog + j
				var b T
				if bias != nil {
					b = bias[co]
				}
				dst, taps := out[(n*g.Cout+co)*l:][:l], w[co*cig*k:][:cig*k]
				if image {
					tapRowsImage3x3(dst, planes, taps, g.HO, g.WO, g.H, g.W, g.PH, g.PW, g.DW, b)
					continue
				}
				tapRows(dst, pad, taps, offs, g.HO, g.WO, g.WO, g.SH*p.row(), b)
			}
		}
	})
}

// directInput is Conv's ConvInput by the direct kernels: dx [N, C, H, W]
// from the gradient gr [N, Cout, HO, WO] and w, the (sample, group) pairs
// in parallel. With offH = (KH−1)·DH − PH, output row ho lies on row
// offH + ho·SH of the spread planes (likewise columns), and
// dx[y, x] = Σ w[KH−1−a, KW−1−b]·spread[y + a·DH, x + b·DW].
func directInput[T Float](g *ConvGeom, dx, gr, w []T) {
	cig, cog, k := g.C/g.Groups, g.Cout/g.Groups, g.K()
	qh, qw := g.H+(g.KH-1)*g.DH, g.W+(g.KW-1)*g.DW
	offH, offW := (g.KH-1)*g.DH-g.PH, (g.KW-1)*g.DW-g.PW
	offs := make([]int, 0, cog*k)
	for j := 0; j < cog; j++ {
		for a := 0; a < g.KH; a++ {
			for b := 0; b < g.KW; b++ {
				offs = append(offs, j*qh*qw+a*g.DH*qw+b*g.DW)
			}
		}
	}
	hw, l := g.H*g.W, g.L()
	// Spread rows (columns) hit by output rows: ho in [hlo, hhi).
	hlo, hhi := validCols(offH, g.SH, qh, g.HO)
	wlo, whi := validCols(offW, g.SW, qw, g.WO)
	// A 3×3 kernel at stride 1 reads a lone output channel in place.
	image := cog == 1 && g.KH == 3 && g.KW == 3 && g.SH == 1 && g.SW == 1 && g.DH == 1 && directAVX512
	directItems(g.N*g.Groups, g.N*g.C*cog*k*hw, func(lo, hi int) {
		var spread []T
		if !image {
			spread = floatScratch[T]().Get(cog * qh * qw)
			defer floatScratch[T]().Put(spread)
			clear(spread) // the zeros between: each item writes the same elements
		}
		taps := make([]T, cog*k)
		for item := lo; item < hi; item++ {
			n, gi := item/g.Groups, item%g.Groups
			for j := 0; j < cog && !image; j++ {
				plane := spread[j*qh*qw:][:qh*qw]
				src := gr[(n*g.Cout+gi*cog+j)*l:][:l]
				if g.SW == 1 {
					if hlo < hhi && wlo < whi {
						copyRows(plane[(offH+hlo*g.SH)*qw+offW+wlo:], src[hlo*g.WO+wlo:], hhi-hlo, whi-wlo, g.SH*qw, g.WO)
					}
					continue
				}
				for ho := hlo; ho < hhi; ho++ {
					row := plane[(offH+ho*g.SH)*qw:][:qw]
					in := src[ho*g.WO:][:g.WO]
					for wo := wlo; wo < whi; wo++ {
						row[offW+wo*g.SW] = in[wo]
					}
				}
			}
			for ci := 0; ci < cig; ci++ {
				for j := 0; j < cog; j++ {
					tw := w[((gi*cog+j)*cig+ci)*k:][:k]
					for t := range k {
						taps[j*k+t] = tw[k-1-t] // turned by 180°
					}
				}
				dst := dx[(n*g.C+gi*cig+ci)*hw:][:hw]
				if image {
					tapRowsImage3x3(dst, gr[(n*g.Cout+gi)*l:][:l], taps, g.H, g.W, g.HO, g.WO, offH, offW, g.DW, 0)
					continue
				}
				tapRows(dst, spread, taps, offs, g.H, g.W, g.W, qw, 0)
			}
		}
	})
}

// directWeight is Conv's ConvWeight by the direct kernels: dw
// [Cout, C/Groups, KH, KW] from x [N, C, H, W] and the gradient gr
// [N, Cout, HO, WO], the groups in parallel; each tap sums over the
// samples in order, so the sums are the same for any GOMAXPROCS.
func directWeight[T Float](g *ConvGeom, dw, x, gr []T) {
	cig, cog, k := g.C/g.Groups, g.Cout/g.Groups, g.K()
	p := inputLayout(g)
	offs := inputOffsets(g, p, cig)
	hw, l := g.H*g.W, g.L()
	clear(dw)
	// A 3×3 kernel at stride 1 reads a lone input channel in place.
	image := cig == 1 && g.KH == 3 && g.KW == 3 && g.SH == 1 && g.SW == 1 && g.DH == 1 && directAVX512
	directItems(g.Groups, g.N*g.Cout*cig*k*l, func(lo, hi int) {
		var pad []T
		if !image {
			pad = floatScratch[T]().Get(cig * p.plane())
			defer floatScratch[T]().Put(pad)
			clear(pad) // the padding, for every padPlanes below
		}
		dots := make([]T, cig*k)
		for gi := lo; gi < hi; gi++ {
			for n := 0; n < g.N; n++ {
				planes := x[(n*g.C+gi*cig)*hw:][:cig*hw]
				if !image {
					padPlanes(g, p, planes, pad)
				}
				for j := 0; j < cog; j++ {
					co := gi*cog + j
					if image {
						tapDotsImage3x3(dots, gr[(n*g.Cout+co)*l:][:l], planes, g.HO, g.WO, g.H, g.W, g.PH, g.PW, g.DW)
					} else {
						tapDots(dots, gr[(n*g.Cout+co)*l:][:l], pad, offs, g.HO, g.WO, g.WO, g.SH*p.row())
					}
					acc := dw[co*cig*k:][:cig*k]
					for t, d := range dots {
						acc[t] += d
					}
				}
			}
		}
	})
}

// allFinite reports whether no element of s is ±Inf or NaN (v − v is NaN
// for those). Long slices are checked in parallel, a block of
// finiteGrain elements at a time.
func allFinite[T Float](s []T) bool {
	if len(s) < 2*finiteGrain {
		return finiteRun(s)
	}
	blocks := (len(s) + finiteGrain - 1) / finiteGrain
	var bad atomic.Bool
	par.ForWork(blocks, len(s), func(lo, hi int) {
		if !bad.Load() && !finiteRun(s[lo*finiteGrain:min(len(s), hi*finiteGrain)]) {
			bad.Store(true)
		}
	})
	return !bad.Load()
}

// finiteGrain is allFinite's block: 128 KiB of float32.
const finiteGrain = 1 << 15

// finiteRun is allFinite on one goroutine: the leading whole blocks in
// AVX2 where it can (finiteAsm), the rest here.
func finiteRun[T Float](s []T) bool {
	done, ok := finiteAsm(s)
	if !ok {
		return false
	}
	return finiteGo(s[done:])
}

// finiteGo is finiteRun in Go.
func finiteGo[T Float](s []T) bool {
	// v − v is 0 for a finite v and NaN for ±Inf and NaN: eight sums of
	// them, side by side, are 0 unless s holds one.
	var a0, a1, a2, a3, a4, a5, a6, a7 T
	i := 0
	for ; i+8 <= len(s); i += 8 {
		q := s[i : i+8 : i+8]
		a0 += q[0] - q[0]
		a1 += q[1] - q[1]
		a2 += q[2] - q[2]
		a3 += q[3] - q[3]
		a4 += q[4] - q[4]
		a5 += q[5] - q[5]
		a6 += q[6] - q[6]
		a7 += q[7] - q[7]
	}
	for ; i < len(s); i++ {
		a0 += s[i] - s[i]
	}
	return (a0+a1)+(a2+a3)+(a4+a5)+(a6+a7) == 0
}

// directItems runs body over the n items of a direct kernel, work
// elements in all: on the caller's goroutine below par.InlineWork, else in
// grains (about 32 of them, each at least chanGrain elements) handed out
// as workers finish, so a descheduled worker does not hold the others up.
// Each item's arithmetic does not depend on the split.
func directItems(n, work int, body func(lo, hi int)) {
	if work < par.InlineWork {
		if n > 0 {
			body(0, n)
		}
		return
	}
	per := max(work/n, 1)
	par.ForGrains(n, max((n+31)/32, (chanGrain+per-1)/per), body)
}

// tapRowsImageGo sets dst [rows, wo] = bias + Σ taps[ki·3 + kj]·in(r + ki,
// x + kj·dw − padLeft), in(i, c) = src[(i − padTop)·w + c] inside the
// plane src [h, w] and 0 outside, the taps in order (tapRowsImage3x3 by
// Go loops).
func tapRowsImageGo[T Float](dst, src, taps []T, rows, wo, h, w, padTop, padLeft, dw int, bias T) {
	for r := 0; r < rows; r++ {
		out := dst[r*wo:][:wo]
		for x := range out {
			acc := bias
			for t, tap := range taps[:9] {
				var v T
				if y, c := r+t/3-padTop, x+t%3*dw-padLeft; y >= 0 && y < h && c >= 0 && c < w {
					v = src[y*w+c]
				}
				acc += tap * v
			}
			out[x] = acc
		}
	}
}

// tapDotsImageGo sets dots[ki·3 + kj] = Σ_r Σ_x gr[r·wo + x]·in(r + ki −
// padTop, x + kj·dw − padLeft), in(y, c) = src[y·w + c] inside the plane
// src [h, w] and 0 outside (tapDotsImage3x3 by Go loops), in the order r,
// x.
func tapDotsImageGo[T Float](dots, gr, src []T, rows, wo, h, w, padTop, padLeft, dw int) {
	for t := range dots[:9] {
		var acc T
		for r := 0; r < rows; r++ {
			y := r + t/3 - padTop
			if y < 0 || y >= h {
				continue
			}
			for x, v := range gr[r*wo:][:wo] {
				if c := x + t%3*dw - padLeft; c >= 0 && c < w {
					acc += v * src[y*w+c]
				}
			}
		}
		dots[t] = acc
	}
}

// tapRowsGo sets dst[r·dstStride + x] = bias + Σ_t taps[t]·src[r·srcStep +
// offs[t] + x] for r < rows, x < wo, the taps in order.
func tapRowsGo[T Float](dst, src, taps []T, offs []int, rows, wo, dstStride, srcStep int, bias T) {
	for r := 0; r < rows; r++ {
		out := dst[r*dstStride:][:wo]
		for x := range out {
			out[x] = bias
		}
		for t, w := range taps {
			in := src[r*srcStep+offs[t]:][:wo]
			for x, v := range in {
				out[x] += w * v
			}
		}
	}
}

// tapDotsGo sets dots[t] = Σ_r Σ_x gr[r·grStride + x]·src[r·srcStep +
// offs[t] + x] for every tap t, r < rows, x < wo, in the order r, x.
func tapDotsGo[T Float](dots, gr, src []T, offs []int, rows, wo, grStride, srcStep int) {
	for t, off := range offs {
		var acc T
		for r := 0; r < rows; r++ {
			in := src[r*srcStep+off:][:wo]
			for x, v := range gr[r*grStride:][:wo] {
				acc += v * in[x]
			}
		}
		dots[t] = acc
	}
}

// copyRowsGo copies rows rows of w elements from src (row step
// srcStride) to dst (row step dstStride).
func copyRowsGo[T Float](dst, src []T, rows, w, dstStride, srcStride int) {
	for r := 0; r < rows; r++ {
		copy(dst[r*dstStride:][:w], src[r*srcStride:][:w])
	}
}
