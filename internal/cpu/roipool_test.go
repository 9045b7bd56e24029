package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// refRoIPoolArgmax is roi_pool's argmax written directly: each output's bin
// scanned in row-major order, a strictly larger value winning, the first
// NaN winning over everything.
func refRoIPoolArgmax[T Float](g *PoolGeom, x, boxes []T) []int {
	plane, nb := g.H*g.W, g.PH*g.PW
	idx := make([]int, len(boxes)/5*g.C*nb)
	for k := 0; k < len(boxes)/5; k++ {
		bins := PoolBins(g, boxes[5*k:5*k+5], true, nil)
		n := int(boxes[5*k])
		for c := 0; c < g.C; c++ {
			base := (n*g.C + c) * plane
			for i, b := range bins {
				best := -1
				for h := b.HS; h < b.HE; h++ {
					for w := b.WS; w < b.WE; w++ {
						p := base + h*g.W + w
						switch v := x[p]; {
						case best >= 0 && x[best] != x[best]: // a NaN stays
						case best < 0 || v != v || v > x[best]:
							best = p
						}
					}
				}
				idx[(k*g.C+c)*nb+i] = best
			}
		}
	}
	return idx
}

// roiPoolKernelCase is random data with many ties (values from a small
// set), both zeros, infinities and NaNs, and boxes inside, across the border
// and outside both images.
func roiPoolKernelCase[T Float](g *PoolGeom, k int, seed uint64) (x, boxes []T) {
	r := rand.New(rand.NewPCG(seed, 2))
	special := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), -math.MaxFloat32}
	x = make([]T, g.N*g.C*g.H*g.W)
	for i := range x {
		switch u := r.Float64(); {
		case u < 0.03:
			x[i] = T(special[r.IntN(len(special))])
		case u < 0.5:
			x[i] = T(r.IntN(4) - 2)
		default:
			x[i] = T(r.NormFloat64())
		}
	}
	boxes = randBoxes[T](r, k, g.N, g.H, g.W, g.Scale)
	return x, boxes
}

func checkRoIPoolArgmax[T Float](t *testing.T, g *PoolGeom, k int) {
	x, boxes := roiPoolKernelCase[T](g, k, 5)
	want := refRoIPoolArgmax(g, x, boxes)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 3, 5} {
		runtime.GOMAXPROCS(procs)
		idx := make([]int, len(want))
		if err := RoIPoolArgmax(g, x, boxes, idx); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(idx, want) {
			for i := range idx {
				if idx[i] != want[i] {
					t.Fatalf("GOMAXPROCS=%d: idx[%d] = %d, want %d", procs, i, idx[i], want[i])
				}
			}
		}
	}
}

func TestRoIPoolArgmaxMatchesReference(t *testing.T) {
	for _, c := range []roiCase[PoolGeom]{
		{"C=37/7x7", PoolGeom{N: 2, C: 37, H: 13, W: 17, PH: 7, PW: 7, Scale: 0.5}, 12},
		{"C=3/3x2", PoolGeom{N: 2, C: 3, H: 9, W: 11, PH: 3, PW: 2, Scale: 1}, 12},
		{"C=40/30x30 (bins in two blocks)", PoolGeom{N: 1, C: 40, H: 9, W: 11, PH: 30, PW: 30, Scale: 1}, 3},
		{"C=5/1x2 (bins of hundreds of pixels)", PoolGeom{N: 1, C: 5, H: 20, W: 30, PH: 1, PW: 2, Scale: 1}, 6},
	} {
		t.Run(c.name+"/float32", func(t *testing.T) { checkRoIPoolArgmax[float32](t, &c.g, c.k) })
		t.Run(c.name+"/float64", func(t *testing.T) { checkRoIPoolArgmax[float64](t, &c.g, c.k) })
	}
}
