package cpu

import "testing"

// refPSRoIPool is ps_roi_pool written directly over PoolBins' geometry (not
// inclusive), one output at a time in float64: y = F(x) and dx = Fᵀ(grad).
func refPSRoIPool[T Float](g *PoolGeom, x, boxes, grad []T) (y, dx []float64) {
	nb, plane := g.PH*g.PW, g.H*g.W
	cOut := g.C / nb
	k := len(boxes) / 5
	y, dx = make([]float64, k*cOut*nb), make([]float64, len(x))
	for b := 0; b < k; b++ {
		n := int(boxes[5*b])
		bins := PoolBins(g, boxes[5*b:5*b+5], false, nil)
		for co := 0; co < cOut; co++ {
			for bin, pb := range bins {
				if pb.HE <= pb.HS || pb.WE <= pb.WS {
					continue
				}
				area := float64((pb.HE - pb.HS) * (pb.WE - pb.WS))
				o := (b*cOut+co)*nb + bin
				base := (n*g.C + co*nb + bin) * plane
				for h := pb.HS; h < pb.HE; h++ {
					for w := pb.WS; w < pb.WE; w++ {
						y[o] += float64(x[base+h*g.W+w]) / area
						dx[base+h*g.W+w] += float64(grad[o]) / area
					}
				}
			}
		}
	}
	return y, dx
}

// The PSRoIPool kernels against refPSRoIPool, bitwise the same for any
// number of threads.
func TestPSRoIPoolKernelsMatchReference(t *testing.T) {
	for _, c := range []roiCase[PoolGeom]{
		{"C'=3/3x3", PoolGeom{N: 2, C: 27, H: 13, W: 17, PH: 3, PW: 3, Scale: 0.25}, 9},
		{"C'=10/7x7", PoolGeom{N: 2, C: 490, H: 13, W: 17, PH: 7, PW: 7, Scale: 0.5}, 7},
		{"C'=1/2x2", PoolGeom{N: 1, C: 4, H: 9, W: 11, PH: 2, PW: 2, Scale: 1}, 5},
	} {
		t.Run(c.name+"/float32", func(t *testing.T) {
			checkPSKernels(t, psKernelPair[float32]{PSRoIPoolForward[float32], PSRoIPoolTranspose[float32], refPSRoIPool[float32]}, &c.g, c.k, 21, 1e-5)
		})
		t.Run(c.name+"/float64", func(t *testing.T) {
			checkPSKernels(t, psKernelPair[float64]{PSRoIPoolForward[float64], PSRoIPoolTranspose[float64], refPSRoIPool[float64]}, &c.g, c.k, 21, 1e-12)
		})
	}
}
