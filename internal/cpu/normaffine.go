package cpu

import (
	"github.com/gops-dev/gops/internal/par"
	"github.com/gops-dev/gops/internal/vmath"
)

// The per-channel affine step of the normalisations and its family (nn's
// ChannelAffine, ChannelDot, ChannelTotal; ChannelBroadcast is
// ChannelTotal's transpose) on a tensor seen as [Outer, C, Inner].

// ChanGeom is a contiguous tensor seen as [Outer, C, Inner] (GroupNorm:
// [N, C, H·W]; LayerNorm: [rows, normalised size, 1]).
type ChanGeom struct{ Outer, C, Inner int }

// chanGrain is the number of elements below which the channel and row
// kernels stay on one goroutine.
const chanGrain = 1 << 15

// parallelIf runs body over [0, count) with par.For when the work
// is at least chanGrain elements, on the caller's goroutine otherwise.
func parallelIf(count, elements int, body func(lo, hi int)) {
	if elements < chanGrain {
		body(0, count)
		return
	}
	par.For(count, body)
}

// ChannelAffine sets dst = x·w[c] + b[c], x and dst [Outer, C, Inner], w
// and b [C]: with Inner > 1 a whole plane at a time (vmath.Axpb, fused
// where the CPU has FMA), with Inner = 1 a row of C at a time.
func ChannelAffine[T Float](g ChanGeom, dst, x, w, b []T) {
	if g.Inner > 1 {
		parallelIf(g.Outer*g.C, len(x), func(lo, hi int) {
			for p := lo; p < hi; p++ {
				ci := p % g.C
				vmath.Axpb(dst[p*g.Inner:][:g.Inner], x[p*g.Inner:][:g.Inner], w[ci], b[ci])
			}
		})
		return
	}
	parallelIf(g.Outer, len(x), func(lo, hi int) {
		for o := lo; o < hi; o++ {
			d, src := dst[o*g.C:][:g.C], x[o*g.C:][:g.C]
			for k, v := range src {
				d[k] = affineElem(v, w[k], b[k])
			}
		}
	})
}

// affineElem is x·w + b as ChannelAffine computes it for Inner = 1 (the
// compiler's own choice whether to fuse it, the same for every caller).
func affineElem[T Float](x, w, b T) T { return x*w + b }

// ChannelDot sets dst [C] to Σ over Outer and Inner of u·y per channel,
// u and y [Outer, C, Inner] (channelReduce).
func ChannelDot[T Float](g ChanGeom, dst, u, y []T) { channelReduce(g, dst, u, y, true) }

// ChannelTotal sets dst [C] to Σ over Outer and Inner of u per channel
// (channelReduce); ChannelBroadcast is its transpose.
func ChannelTotal[T Float](g ChanGeom, dst, u []T) { channelReduce(g, dst, u, nil, false) }

// channelReduce is ChannelDot (dot) or ChannelTotal: per channel, in
// float64, the planes' vmath.Dot or vmath.Sum (Inner > 1) or the products
// or values (Inner = 1) added in the order of Outer. Channels are spread
// over goroutines; each channel's sum does not depend on the split.
func channelReduce[T Float](g ChanGeom, dst, u, y []T, dot bool) {
	if g.Inner > 1 {
		// Sample by sample, so that a worker reads its channels' planes
		// as one contiguous run per sample; each channel still adds its
		// planes' sums in sample order.
		parallelIf(g.C, len(u), func(lo, hi int) {
			acc := make([]float64, hi-lo)
			for o := 0; o < g.Outer; o++ {
				for ci := lo; ci < hi; ci++ {
					at := (o*g.C + ci) * g.Inner
					if dot {
						acc[ci-lo] += vmath.Dot(u[at:at+g.Inner], y[at:at+g.Inner])
					} else {
						acc[ci-lo] += vmath.Sum(u[at : at+g.Inner])
					}
				}
			}
			for k, a := range acc {
				dst[lo+k] = T(a)
			}
		})
		return
	}
	parallelIf(g.C, len(u), func(lo, hi int) {
		acc := make([]float64, hi-lo)
		for o := 0; o < g.Outer; o++ {
			row := u[o*g.C+lo : o*g.C+hi]
			if dot {
				yr := y[o*g.C+lo : o*g.C+hi]
				for k, v := range row {
					acc[k] += float64(v) * float64(yr[k])
				}
				continue
			}
			for k, v := range row {
				acc[k] += float64(v)
			}
		}
		for k, v := range acc {
			dst[lo+k] = T(v)
		}
	})
}
