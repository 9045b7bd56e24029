package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDeformSampleLayouts checks that the two layouts of the sampling
// kernel S (deformSampleLast, channels-last, used from
// sampleLastMinChannels channels per offset group on; deformSamplePlanes,
// plane by plane, golden-tested through the small cases) give bitwise
// equal columns, masked and unmasked, in float32 and float64, with samples
// inside, on the border, outside and non-finite, and NaN/Inf pixels.
func TestDeformSampleLayouts(t *testing.T) {
	geoms := []DeformGeom{
		{N: 2, C: 32, H: 7, W: 9, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, OG: 1},
		{N: 1, C: 48, H: 5, W: 4, KH: 2, KW: 3, SH: 2, SW: 1, PH: 0, PW: 2, DH: 2, DW: 1, OG: 3},
		{N: 3, C: 6, H: 4, W: 6, KH: 3, KW: 1, SH: 1, SW: 2, PH: 1, PW: 0, DH: 1, DW: 1, OG: 2},
		{N: 1, C: 17, H: 1, W: 1, KH: 1, KW: 1, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1, OG: 1},
	}
	for gi := range geoms {
		g := &geoms[gi]
		g.HO = (g.H+2*g.PH-(g.DH*(g.KH-1)+1))/g.SH + 1
		g.WO = (g.W+2*g.PW-(g.DW*(g.KW-1)+1))/g.SW + 1
		g.Groups = 1
		for _, masked := range []bool{false, true} {
			compareSampleLayouts[float32](t, g, masked, uint64(gi))
			compareSampleLayouts[float64](t, g, masked, uint64(gi))
		}
	}
}

func compareSampleLayouts[T Float](t *testing.T, g *DeformGeom, masked bool, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	input := make([]T, g.N*g.C*g.H*g.W)
	for i := range input {
		input[i] = T(r.NormFloat64())
	}
	input[len(input)/3] = T(math.NaN())
	input[len(input)/2] = T(math.Inf(1))
	offset := make([]T, 2*g.MaskLen())
	for i := range offset {
		switch r.IntN(10) {
		case 0:
			offset[i] = T(math.Round(r.NormFloat64() * 3)) // integer: samples on pixels and borders
		case 1:
			offset[i] = T(-1 - float64(g.H)) // far outside
		default:
			offset[i] = T(r.NormFloat64() * 2)
		}
	}
	offset[1] = T(math.NaN())
	var mask []T
	if masked {
		mask = make([]T, g.MaskLen())
		for i := range mask {
			mask[i] = T(r.Float64())
		}
	}
	taps := deformTaps(g, 0, 0, offset, mask)
	size := g.C * g.K() * g.N * g.L()
	planes, last := make([]T, size), make([]T, size)
	for i := range last {
		last[i] = 12345 // every element must be written
	}
	deformSamplePlanes(g, taps, padImages(g, input), planes)
	deformSampleLast(g, taps, padImagesLast(g, input), last)
	for i := range planes {
		a, b := float64(planes[i]), float64(last[i])
		if a != b && !(math.IsNaN(a) && math.IsNaN(b)) {
			t.Fatalf("%T %+v masked %v: cols[%d]: planes %v, channels-last %v", planes[0], *g, masked, i, a, b)
		}
	}
}
