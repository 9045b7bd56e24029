package gops

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
	geoms := []deformGeom{
		{n: 2, c: 32, h: 7, w: 9, kh: 3, kw: 3, sh: 1, sw: 1, ph: 1, pw: 1, dh: 1, dw: 1, og: 1},
		{n: 1, c: 48, h: 5, w: 4, kh: 2, kw: 3, sh: 2, sw: 1, ph: 0, pw: 2, dh: 2, dw: 1, og: 3},
		{n: 3, c: 6, h: 4, w: 6, kh: 3, kw: 1, sh: 1, sw: 2, ph: 1, pw: 0, dh: 1, dw: 1, og: 2},
		{n: 1, c: 17, h: 1, w: 1, kh: 1, kw: 1, sh: 1, sw: 1, ph: 0, pw: 0, dh: 1, dw: 1, og: 1},
	}
	for gi := range geoms {
		g := &geoms[gi]
		g.ho = (g.h+2*g.ph-(g.dh*(g.kh-1)+1))/g.sh + 1
		g.wo = (g.w+2*g.pw-(g.dw*(g.kw-1)+1))/g.sw + 1
		g.groups = 1
		for _, masked := range []bool{false, true} {
			compareSampleLayouts[float32](t, g, masked, uint64(gi))
			compareSampleLayouts[float64](t, g, masked, uint64(gi))
		}
	}
}

func compareSampleLayouts[T float](t *testing.T, g *deformGeom, masked bool, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	input := make([]T, g.n*g.c*g.h*g.w)
	for i := range input {
		input[i] = T(r.NormFloat64())
	}
	input[len(input)/3] = T(math.NaN())
	input[len(input)/2] = T(math.Inf(1))
	offset := make([]T, 2*g.maskLen())
	for i := range offset {
		switch r.IntN(10) {
		case 0:
			offset[i] = T(math.Round(r.NormFloat64() * 3)) // integer: samples on pixels and borders
		case 1:
			offset[i] = T(-1 - float64(g.h)) // far outside
		default:
			offset[i] = T(r.NormFloat64() * 2)
		}
	}
	offset[1] = T(math.NaN())
	var mask []T
	if masked {
		mask = make([]T, g.maskLen())
		for i := range mask {
			mask[i] = T(r.Float64())
		}
	}
	taps := deformTaps(g, 0, 0, offset, mask)
	size := g.c * g.k() * g.n * g.l()
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
