package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDeformKernelsNaive compares the four sampling kernels (S, T, C,
// O, every (a, b), masked and not, both S layouts) with a direct,
// branchy evaluation of their definitions on odd geometries: H = 1, W = 1,
// kernels larger than the input with padding, strides larger than the
// input, L = 1, L > sampleBlock with a partial last block, channels per
// offset group 1, 16, 17, offset groups vs groups, offsets landing on
// -1, H-1, H, integers, far outside, NaN and ±Inf.
func TestDeformKernelsNaive(t *testing.T) {
	geoms := []DeformGeom{
		{N: 1, C: 1, H: 1, W: 1, KH: 1, KW: 1, OG: 1, Groups: 1},
		{N: 2, C: 2, H: 1, W: 1, KH: 3, KW: 3, PH: 1, PW: 1, OG: 2, Groups: 1},
		{N: 1, C: 3, H: 2, W: 3, KH: 1, KW: 2, SH: 5, SW: 7, PH: 1, PW: 1, OG: 1, Groups: 3},
		{N: 2, C: 16, H: 3, W: 2, KH: 2, KW: 1, PH: 1, OG: 1, Groups: 4},
		{N: 1, C: 34, H: 9, W: 10, KH: 1, KW: 1, OG: 2, Groups: 1}, // 17 channels per og, L = 90 > 64
		{N: 2, C: 32, H: 4, W: 5, KH: 3, KW: 2, PH: 2, PW: 0, DH: 2, OG: 2, Groups: 8},
		{N: 1, C: 6, H: 1, W: 7, KH: 1, KW: 3, PW: 1, DW: 3, OG: 6, Groups: 2},
	}
	for gi := range geoms {
		g := &geoms[gi]
		g.SH, g.SW, g.DH, g.DW = max(g.SH, 1), max(g.SW, 1), max(g.DH, 1), max(g.DW, 1)
		g.HO = (g.H+2*g.PH-(g.DH*(g.KH-1)+1))/g.SH + 1
		g.WO = (g.W+2*g.PW-(g.DW*(g.KW-1)+1))/g.SW + 1
		r := rand.New(rand.NewPCG(uint64(gi), 11))
		K, L := g.K(), g.L()
		x := randVals(r, g.N*g.C*g.H*g.W)
		cols := randVals(r, g.C*K*g.N*L)
		mask := randVals(r, g.MaskLen())
		off := make([]float64, 2*g.MaskLen())
		for i := range off {
			switch r.IntN(12) {
			case 0:
				off[i] = math.Round(r.NormFloat64() * 3)
			case 1:
				off[i] = float64(-1 - g.H - r.IntN(3))
			case 2:
				off[i] = float64(g.H + g.W)
			default:
				off[i] = r.NormFloat64() * 1.5
			}
		}
		off[0] = math.NaN()
		if len(off) > 3 {
			off[3] = math.Inf(1)
		}
		if len(off) > 5 {
			off[len(off)-1] = math.Inf(-1)
		}
		// Samples exactly at y = -1 and y = H-1, x = -1 and x = W-1.
		for i := 0; i+2*L <= len(off) && i < 2*L*2; i += 2 * L {
			ho := 0
			off[i] = float64(-1 - (ho*g.SH - g.PH + (i/(2*L)%K/g.KW)*g.DH))
		}
		for _, masked := range []bool{false, true} {
			var m []float64
			if masked {
				m = mask
			}
			for _, ab := range [][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
				a, b := ab[0], ab[1]
				name := fmt.Sprintf("%+v masked=%v a=%d b=%d", *g, masked, a, b)
				// S, both layouts.
				want := naiveS(g, a, b, x, off, m)
				taps := deformTaps(g, a, b, off, m)
				for _, last := range []bool{false, true} {
					got := make([]float64, len(want))
					if last {
						deformSampleLast(g, taps, padImagesLast(g, x), got)
					} else {
						deformSamplePlanes(g, taps, padImages(g, x), got)
					}
					cmpVals(t, fmt.Sprintf("S last=%v %s", last, name), got, want)
				}
				// T, C, O.
				tv := make([]float64, len(x))
				DeformT(g, a, b, cols, off, m, tv)
				cmpVals(t, "T "+name, tv, naiveT(g, a, b, cols, off, m))
				cv := make([]float64, g.MaskLen())
				DeformC(g, a, b, x, off, cols, cv)
				cmpVals(t, "C "+name, cv, naiveC(g, a, b, x, off, cols))
				if a+b < 2 {
					ov := make([]float64, 2*g.MaskLen())
					DeformO(g, a, b, x, off, cols, m, ov)
					cmpVals(t, "O "+name, ov, naiveO(g, a, b, x, off, cols, m))
				}
			}
		}
	}
}

func randVals(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = r.NormFloat64()
	}
	return s
}

func cmpVals(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) || math.IsNaN(got[i]) != math.IsNaN(want[i]) {
			t.Fatalf("%s: [%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// naiveWeights returns the four corners (pixel index or -1) and weights of
// one sample, as documented (torchvision's rule, right-sided derivatives).
func naiveWeights(g *DeformGeom, a, b int, y, x float64) (pos [4]int, w [4]float64) {
	pos = [4]int{-1, -1, -1, -1}
	if !(y >= -1 && y < float64(g.H) && x >= -1 && x < float64(g.W)) {
		return
	}
	yl, xl := math.Floor(y), math.Floor(x)
	ly, lx := y-yl, x-xl
	wy := [2]float64{1 - ly, ly}
	wx := [2]float64{1 - lx, lx}
	if a == 1 {
		wy = [2]float64{-1, 1}
	}
	if b == 1 {
		wx = [2]float64{-1, 1}
	}
	for dy := 0; dy < 2; dy++ {
		for dx := 0; dx < 2; dx++ {
			yy, xx := int(yl)+dy, int(xl)+dx
			if yy >= 0 && yy < g.H && xx >= 0 && xx < g.W {
				pos[dy*2+dx] = yy*g.W + xx
				w[dy*2+dx] = wy[dy] * wx[dx]
			}
		}
	}
	return
}

// naiveEach calls f for every (n, og, k, l) with the sample's corners.
func naiveEach(g *DeformGeom, a, b int, off []float64, f func(n, grp, k, l int, pos [4]int, w [4]float64)) {
	K, L := g.K(), g.L()
	for n := 0; n < g.N; n++ {
		for grp := 0; grp < g.OG; grp++ {
			for k := 0; k < K; k++ {
				for l := 0; l < L; l++ {
					tr := (n*g.OG+grp)*K + k
					ho, wo := l/g.WO, l%g.WO
					y := float64(ho*g.SH-g.PH+(k/g.KW)*g.DH) + off[2*tr*L+l]
					x := float64(wo*g.SW-g.PW+(k%g.KW)*g.DW) + off[(2*tr+1)*L+l]
					pos, w := naiveWeights(g, a, b, y, x)
					f(n, grp, k, l, pos, w)
				}
			}
		}
	}
}

func naiveS(g *DeformGeom, a, b int, x, off, mask []float64) []float64 {
	K, L, cg, plane := g.K(), g.L(), g.C/g.OG, g.H*g.W
	out := make([]float64, g.C*K*g.N*L)
	naiveEach(g, a, b, off, func(n, grp, k, l int, pos [4]int, w [4]float64) {
		m := 1.0
		if mask != nil {
			m = mask[((n*g.OG+grp)*K+k)*L+l]
		}
		for c := grp * cg; c < (grp+1)*cg; c++ {
			var v float64
			for i, p := range pos {
				if p >= 0 {
					v += w[i] * m * x[(n*g.C+c)*plane+p]
				}
			}
			out[((c*K+k)*g.N+n)*L+l] = v
		}
	})
	return out
}

func naiveT(g *DeformGeom, a, b int, cols, off, mask []float64) []float64 {
	K, L, cg, plane := g.K(), g.L(), g.C/g.OG, g.H*g.W
	out := make([]float64, g.N*g.C*plane)
	naiveEach(g, a, b, off, func(n, grp, k, l int, pos [4]int, w [4]float64) {
		m := 1.0
		if mask != nil {
			m = mask[((n*g.OG+grp)*K+k)*L+l]
		}
		for c := grp * cg; c < (grp+1)*cg; c++ {
			for i, p := range pos {
				if p >= 0 {
					out[(n*g.C+c)*plane+p] += w[i] * m * cols[((c*K+k)*g.N+n)*L+l]
				}
			}
		}
	})
	return out
}

func naiveC(g *DeformGeom, a, b int, x, off, cols []float64) []float64 {
	K, L, cg, plane := g.K(), g.L(), g.C/g.OG, g.H*g.W
	out := make([]float64, g.MaskLen())
	naiveEach(g, a, b, off, func(n, grp, k, l int, pos [4]int, w [4]float64) {
		for c := grp * cg; c < (grp+1)*cg; c++ {
			var v float64
			for i, p := range pos {
				if p >= 0 {
					v += w[i] * x[(n*g.C+c)*plane+p]
				}
			}
			out[((n*g.OG+grp)*K+k)*L+l] += cols[((c*K+k)*g.N+n)*L+l] * v
		}
	})
	return out
}

func naiveO(g *DeformGeom, a, b int, x, off, cols, mask []float64) []float64 {
	L := g.L()
	out := make([]float64, 2*g.MaskLen())
	for which, ab := range [2][2]int{{a + 1, b}, {a, b + 1}} {
		if ab[0] > 1 || ab[1] > 1 {
			continue
		}
		c := naiveC(g, ab[0], ab[1], x, off, cols)
		for r := 0; r < g.MaskLen()/L; r++ {
			for l := 0; l < L; l++ {
				v := c[r*L+l]
				if mask != nil {
					v *= mask[r*L+l]
				}
				out[(2*r+which)*L+l] = v
			}
		}
	}
	return out
}
