package gops

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
func refRoIPoolArgmax[T float](g *poolGeom, x, boxes []T) []int {
	plane, nb := g.h*g.w, g.ph*g.pw
	idx := make([]int, len(boxes)/5*g.c*nb)
	for k := 0; k < len(boxes)/5; k++ {
		bins := poolBins(g, boxes[5*k:5*k+5], true, nil)
		n := int(boxes[5*k])
		for c := 0; c < g.c; c++ {
			base := (n*g.c + c) * plane
			for i, b := range bins {
				best := -1
				for h := b.hs; h < b.he; h++ {
					for w := b.ws; w < b.we; w++ {
						p := base + h*g.w + w
						switch v := x[p]; {
						case best >= 0 && x[best] != x[best]: // a NaN stays
						case best < 0 || v != v || v > x[best]:
							best = p
						}
					}
				}
				idx[(k*g.c+c)*nb+i] = best
			}
		}
	}
	return idx
}

// roiPoolKernelCase is random data with many ties (values from a small
// set), both zeros, infinities and NaNs, and boxes inside, across the border
// and outside both images.
func roiPoolKernelCase[T float](g *poolGeom, k int, seed uint64) (x, boxes []T) {
	r := rand.New(rand.NewPCG(seed, 2))
	special := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), -math.MaxFloat32}
	x = make([]T, g.n*g.c*g.h*g.w)
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
	s := 1 / g.scale
	for i := 0; i < k; i++ {
		x1, x2 := (r.Float64()*1.4-0.2)*float64(g.w)*s, (r.Float64()*1.4-0.2)*float64(g.w)*s
		y1, y2 := (r.Float64()*1.4-0.2)*float64(g.h)*s, (r.Float64()*1.4-0.2)*float64(g.h)*s
		boxes = append(boxes, T(i%g.n), T(min(x1, x2)), T(min(y1, y2)), T(max(x1, x2)), T(max(y1, y2)))
	}
	return x, boxes
}

func checkRoIPoolArgmax[T float](t *testing.T, g *poolGeom, k int) {
	x, boxes := roiPoolKernelCase[T](g, k, 5)
	want := refRoIPoolArgmax(g, x, boxes)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 3, 5} {
		runtime.GOMAXPROCS(procs)
		idx := make([]int, len(want))
		if err := roiPoolArgmax(g, x, boxes, idx); err != nil {
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
	for _, c := range []struct {
		name string
		g    poolGeom
		k    int
	}{
		{"C=37/7x7", poolGeom{n: 2, c: 37, h: 13, w: 17, ph: 7, pw: 7, scale: 0.5}, 12},
		{"C=3/3x2", poolGeom{n: 2, c: 3, h: 9, w: 11, ph: 3, pw: 2, scale: 1}, 12},
		{"C=40/30x30 (bins in two blocks)", poolGeom{n: 1, c: 40, h: 9, w: 11, ph: 30, pw: 30, scale: 1}, 3},
		{"C=5/1x2 (bins of hundreds of pixels)", poolGeom{n: 1, c: 5, h: 20, w: 30, ph: 1, pw: 2, scale: 1}, 6},
	} {
		t.Run(c.name+"/float32", func(t *testing.T) { checkRoIPoolArgmax[float32](t, &c.g, c.k) })
		t.Run(c.name+"/float64", func(t *testing.T) { checkRoIPoolArgmax[float64](t, &c.g, c.k) })
	}
}
