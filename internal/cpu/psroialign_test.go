package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
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

// boxMajorPSRoIAlign is PSRoIAlign's forward and transpose box by box
// (the loops before psBinMajor): each box's points in sampleChunks'
// chunks, every output channel of a bin in turn. The bin-major kernels
// must give the same bits.
func boxMajorPSRoIAlign[T Float](g *PoolGeom, x, boxes, grad, out, dst []T) {
	ag, grids, err := PSRoIAlignGrids(g, boxes)
	if err != nil {
		panic(err)
	}
	plane, nb := g.H*g.W, g.PH*g.PW
	cOut := g.C / nb
	var taps, in []bilinearTap[T]
	var spans []binSpan
	for k := range grids {
		b := &grids[k]
		n := int(boxes[5*k])
		o := out[k*cOut*nb : (k+1)*cOut*nb]
		if b.GH*b.GW == 0 {
			clear(o)
			continue
		}
		div := newDivider(b)
		b.sampleChunks(ag, &taps, &spans, func(taps []bilinearTap[T], spans []binSpan) {
			for _, sp := range spans {
				in = insideTaps(in[:0], taps[sp.lo:sp.hi])
				for co := 0; co < cOut; co++ {
					ci := co*nb + sp.bin
					xp, dp := x[(n*g.C+ci)*plane:], dst[(n*g.C+ci)*plane:]
					gv := grad[(k*cOut+co)*nb+sp.bin]
					var v T
					for i := range in {
						t := &in[i]
						v += t.w[0]*xp[t.pos[0]] + t.w[1]*xp[t.pos[1]] + t.w[2]*xp[t.pos[2]] + t.w[3]*xp[t.pos[3]]
						for j, p := range t.pos {
							if div.exact {
								dp[p] += gv * t.w[j] * div.inv
							} else {
								dp[p] += gv * t.w[j] / div.count
							}
						}
					}
					psFinish(o[co*nb+sp.bin:], sp, v, b.Count)
				}
			}
		})
	}
}

// TestPSRoIAlignBinMajor: the bin-major kernels against boxMajorPSRoIAlign
// bitwise (any NaN matching any there: the compiler may order an
// addition's operands either way, which picks a NaN's payload), and
// against themselves at GOMAXPROCS=1 bit for bit, NaN payloads too, for 2,
// 3, 5 and 7 threads: boxes overlapping, inside and outside the map, empty, and
// (adaptive sampling on a large map) with more points than one chunk,
// bins cut between chunks; NaN and -0 in x and G;
// PSRoIAlignTransposeSet into a dst of NaNs.
func TestPSRoIAlignBinMajor(t *testing.T) {
	for _, c := range []struct {
		g PoolGeom
		k int
	}{
		{PoolGeom{N: 2, C: 98, H: 13, W: 17, PH: 7, PW: 7, Scale: 0.5, SamplingRatio: 2}, 30},
		{PoolGeom{N: 1, C: 18, H: 150, W: 170, PH: 3, PW: 3, Scale: 1, SamplingRatio: 0}, 6},
		{PoolGeom{N: 3, C: 5, H: 9, W: 11, PH: 1, PW: 1, Scale: 1, SamplingRatio: 0}, 9},
		{PoolGeom{N: 1, C: 8, H: 5, W: 6, PH: 2, PW: 2, Scale: 2, SamplingRatio: 1}, 0},
	} {
		t.Run(fmt.Sprint(c.g.C, c.g.H, c.k), func(t *testing.T) {
			testPSRoIAlignBinMajor[float32](t, &c.g, c.k)
			testPSRoIAlignBinMajor[float64](t, &c.g, c.k)
		})
	}
}

func testPSRoIAlignBinMajor[T Float](t *testing.T, g *PoolGeom, k int) {
	r := rand.New(rand.NewPCG(uint64(g.C), uint64(k)))
	boxes := randBoxes[T](r, k, g.N, g.H, g.W, g.Scale)
	if k > 0 {
		boxes[1], boxes[2], boxes[3], boxes[4] = -1, -1, T(float64(g.W)/g.Scale+1), T(float64(g.H)/g.Scale+1) // the whole map
	}
	special := func(s []T) []T {
		for i := range s {
			switch r.IntN(16) {
			case 0:
				s[i] = T(math.Copysign(0, -1))
			case 1:
				s[i] = nanOf[T](uint64(i))
			}
		}
		return s
	}
	nb := g.PH * g.PW
	x := randNormal[T](r, g.N*g.C*g.H*g.W)
	if g.H < 100 { // the large map's bins would all hold a NaN
		x = special(x)
	}
	grad := special(randNormal[T](r, k*g.C/nb*nb))
	wantY, wantDX := make([]T, len(grad)), make([]T, len(x))
	boxMajorPSRoIAlign(g, x, boxes, grad, wantY, wantDX)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var first [3][]T // GOMAXPROCS=1's results, which the others must equal bit for bit, NaNs too
	for _, p := range []int{1, 2, 3, 5, 7} {
		runtime.GOMAXPROCS(p)
		y, add, set := make([]T, len(grad)), make([]T, len(x)), make([]T, len(x))
		for i := range set {
			set[i] = nanOf[T](1)
		}
		for i := range y {
			y[i] = 42
		}
		if err := PSRoIAlignForward(g, x, boxes, y); err != nil {
			t.Fatal(err)
		}
		if err := PSRoIAlignTranspose(g, grad, boxes, add); err != nil {
			t.Fatal(err)
		}
		if err := PSRoIAlignTransposeSet(g, grad, boxes, set); err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("%T GOMAXPROCS=%d", T(0), p)
		sameBits(t, what+" forward", y, wantY)
		sameBits(t, what+" transpose", add, wantDX)
		sameBits(t, what+" transpose set", set, wantDX)
		if p == 1 {
			first = [3][]T{y, add, set}
			continue
		}
		sameBitsStrict(t, what+" forward against GOMAXPROCS=1", y, first[0])
		sameBitsStrict(t, what+" transpose against GOMAXPROCS=1", add, first[1])
		sameBitsStrict(t, what+" transpose set against GOMAXPROCS=1", set, first[2])
	}
}
