package cpu

import "fmt"

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
// channels in parallel.
func Im2col[T Float](g *ConvGeom, x, cols []T) {
	hw, k, l := g.H*g.W, g.K(), g.L()
	ParallelFor(g.C, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			plane := x[c*hw : (c+1)*hw]
			for ki := 0; ki < g.KH; ki++ {
				for kj := 0; kj < g.KW; kj++ {
					row := cols[(c*k+ki*g.KW+kj)*l:][:l]
					for ho := 0; ho < g.HO; ho++ {
						out := row[ho*g.WO:][:g.WO]
						y := ho*g.SH - g.PH + ki*g.DH
						if y < 0 || y >= g.H {
							clear(out)
							continue
						}
						src := plane[y*g.W : (y+1)*g.W]
						x0 := kj*g.DW - g.PW
						for wo := range out {
							if x := x0 + wo*g.SW; x >= 0 && x < g.W {
								out[wo] = src[x]
							} else {
								out[wo] = 0
							}
						}
					}
				}
			}
		}
	})
}

// Col2im adds the columns cols [C·K, L] of one sample into dx [C, H, W]
// (Im2col's transpose), channels in parallel; within a channel in the
// order of kernel positions, then output positions, so the sums are the
// same for any GOMAXPROCS.
func Col2im[T Float](g *ConvGeom, cols, dx []T) {
	hw, k, l := g.H*g.W, g.K(), g.L()
	ParallelFor(g.C, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			plane := dx[c*hw : (c+1)*hw]
			for ki := 0; ki < g.KH; ki++ {
				for kj := 0; kj < g.KW; kj++ {
					row := cols[(c*k+ki*g.KW+kj)*l:][:l]
					for ho := 0; ho < g.HO; ho++ {
						y := ho*g.SH - g.PH + ki*g.DH
						if y < 0 || y >= g.H {
							continue
						}
						dst := plane[y*g.W : (y+1)*g.W]
						in := row[ho*g.WO:][:g.WO]
						x0 := kj*g.DW - g.PW
						for wo, v := range in {
							if x := x0 + wo*g.SW; x >= 0 && x < g.W {
								dst[x] += v
							}
						}
					}
				}
			}
		}
	})
}

// ChannelSum writes s[c] = Σ over n and l of x[n, c, l] for x
// [N, C, L] (a bias gradient), in the order n, then l.
func ChannelSum[T Float](x, s []T, n, c, l int) {
	ParallelFor(c, func(lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			var acc T
			for ni := 0; ni < n; ni++ {
				for _, v := range x[(ni*c+ci)*l:][:l] {
					acc += v
				}
			}
			s[ci] = acc
		}
	})
}

// ChannelBroadcast writes x[n, c, l] = s[c] for x [N, C, L] (ChannelSum's
// transpose).
func ChannelBroadcast[T Float](s, x []T, n, c, l int) {
	for ni := 0; ni < n; ni++ {
		for ci := 0; ci < c; ci++ {
			row := x[(ni*c+ci)*l:][:l]
			for i := range row {
				row[i] = s[ci]
			}
		}
	}
}
