package cpu

import (
	"testing"
)

// refPSRoIAlign is ps_roi_align written directly, one output at a time in
// float64, over PSRoIAlignGrids' geometry: y = F(x) and dx = Fᵀ(grad).
func refPSRoIAlign[T Float](g *PoolGeom, x, boxes, grad []T) (y, dx []float64) {
	ag, grids, err := PSRoIAlignGrids(g, boxes)
	if err != nil {
		panic(err)
	}
	plane, nb := g.H*g.W, g.PH*g.PW
	cOut := g.C / nb
	y = make([]float64, len(boxes)/5*cOut*nb)
	dx = make([]float64, len(x))
	for k, b := range grids {
		n := int(boxes[5*k])
		for co := 0; co < cOut; co++ {
			for bin := 0; bin < nb; bin++ {
				ph, pw := bin/g.PW, bin%g.PW
				base := (n*g.C + co*nb + bin) * plane
				o := (k*cOut+co)*nb + bin
				for iy := 0; iy < b.GH; iy++ {
					for ix := 0; ix < b.GW; ix++ {
						sy := b.StartY + T(ph)*b.BinH + T(float32(iy)+0.5)*b.BinH/T(b.GH)
						sx := b.StartX + T(pw)*b.BinW + T(float32(ix)+0.5)*b.BinW/T(b.GW)
						t := roiAlignTap(sy, sx, ag.H, ag.W)
						if outsideTap(&t) {
							continue
						}
						for j, p := range t.pos {
							y[o] += float64(t.w[j]) * float64(x[base+p])
							dx[base+p] += float64(t.w[j]) * float64(grad[o]) / float64(b.Count)
						}
					}
				}
				y[o] /= float64(b.Count)
			}
		}
	}
	return y, dx
}

// psKernelPair is a position-sensitive family's forward, transpose and float64
// reference, for checkPSKernels.
type psKernelPair[T Float] struct {
	forward, transpose func(g *PoolGeom, src, boxes, dst []T) error
	ref                func(g *PoolGeom, x, boxes, grad []T) (y, dx []float64)
}

// checkPSKernels checks a position-sensitive family's forward and transpose
// against its reference on random inputs, bitwise equal across GOMAXPROCS.
func checkPSKernels[T Float](t *testing.T, p psKernelPair[T], g *PoolGeom, k int, seed uint64, tol float64) {
	rg := &RoIAlignGeom{N: g.N, C: g.C, H: g.H, W: g.W, PH: g.PH, PW: g.PW, Scale: g.Scale}
	x, boxes, _ := roiAlignKernelCase[T](rg, k, seed)
	_, _, grad := roiAlignKernelCase[T](&RoIAlignGeom{N: g.N, C: g.C / (g.PH * g.PW), H: g.H, W: g.W, PH: g.PH, PW: g.PW, Scale: g.Scale}, k, seed+1)
	wantY, wantDX := p.ref(g, x, boxes, grad)
	y, dx := pairAcrossProcs(t, []int{1, 2, 3, 7}, len(grad), len(x),
		func(y []T) error { return p.forward(g, x, boxes, y) },
		func(dx []T) error { return p.transpose(g, grad, boxes, dx) })
	expectClose(t, "output", y, wantY, tol)
	expectClose(t, "grad", dx, wantDX, tol)
}

func TestPSRoIAlignKernelsMatchReference(t *testing.T) {
	for _, c := range []roiCase[PoolGeom]{
		{"C'=3/3x3/sampling=2", PoolGeom{N: 2, C: 27, H: 13, W: 17, PH: 3, PW: 3, Scale: 0.25, SamplingRatio: 2}, 9},
		{"C'=10/7x7/adaptive", PoolGeom{N: 2, C: 490, H: 13, W: 17, PH: 7, PW: 7, Scale: 0.5, SamplingRatio: 0}, 7},
		{"C'=1/2x2/sampling=3", PoolGeom{N: 1, C: 4, H: 9, W: 11, PH: 2, PW: 2, Scale: 1, SamplingRatio: 3}, 5},
	} {
		t.Run(c.name+"/float32", func(t *testing.T) {
			checkPSKernels(t, psKernelPair[float32]{PSRoIAlignForward[float32], PSRoIAlignTranspose[float32], refPSRoIAlign[float32]}, &c.g, c.k, 11, 1e-5)
		})
		t.Run(c.name+"/float64", func(t *testing.T) {
			checkPSKernels(t, psKernelPair[float64]{PSRoIAlignForward[float64], PSRoIAlignTranspose[float64], refPSRoIAlign[float64]}, &c.g, c.k, 11, 1e-12)
		})
	}
}
