package gops

import (
	"math"
	"runtime"
	"slices"
	"testing"
)

// refPSRoIAlign is ps_roi_align written directly, one output at a time in
// float64, over psRoIAlignGrids' geometry: y = F(x) and dx = Fᵀ(grad).
func refPSRoIAlign[T float](g *poolGeom, x, boxes, grad []T) (y, dx []float64) {
	ag, grids, err := psRoIAlignGrids(g, boxes)
	if err != nil {
		panic(err)
	}
	plane, nb := g.h*g.w, g.ph*g.pw
	cOut := g.c / nb
	y = make([]float64, len(boxes)/5*cOut*nb)
	dx = make([]float64, len(x))
	for k, b := range grids {
		n := int(boxes[5*k])
		for co := 0; co < cOut; co++ {
			for bin := 0; bin < nb; bin++ {
				ph, pw := bin/g.pw, bin%g.pw
				base := (n*g.c + co*nb + bin) * plane
				o := (k*cOut+co)*nb + bin
				for iy := 0; iy < b.gh; iy++ {
					for ix := 0; ix < b.gw; ix++ {
						sy := b.startY + T(ph)*b.binH + T(float32(iy)+0.5)*b.binH/T(b.gh)
						sx := b.startX + T(pw)*b.binW + T(float32(ix)+0.5)*b.binW/T(b.gw)
						t := roiAlignTap(sy, sx, ag.h, ag.w)
						if outsideTap(&t) {
							continue
						}
						for j, p := range t.pos {
							y[o] += float64(t.w[j]) * float64(x[base+p])
							dx[base+p] += float64(t.w[j]) * float64(grad[o]) / float64(b.count)
						}
					}
				}
				y[o] /= float64(b.count)
			}
		}
	}
	return y, dx
}

func checkPSRoIAlignKernels[T float](t *testing.T, g *poolGeom, k int, tol float64) {
	rg := &roiAlignGeom{n: g.n, c: g.c, h: g.h, w: g.w, ph: g.ph, pw: g.pw, scale: g.scale}
	x, boxes, _ := roiAlignKernelCase[T](rg, k, 11)
	_, _, grad := roiAlignKernelCase[T](&roiAlignGeom{n: g.n, c: g.c / (g.ph * g.pw), h: g.h, w: g.w, ph: g.ph, pw: g.pw, scale: g.scale}, k, 12)
	wantY, wantDX := refPSRoIAlign(g, x, boxes, grad)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var refY, refDX []T
	for _, procs := range []int{1, 2, 3, 7} {
		runtime.GOMAXPROCS(procs)
		y := make([]T, len(grad))
		for i := range y {
			y[i] = 42 // every output is written
		}
		dx := make([]T, len(x))
		if err := psRoIAlignForward(g, x, boxes, y); err != nil {
			t.Fatal(err)
		}
		if err := psRoIAlignTranspose(g, grad, boxes, dx); err != nil {
			t.Fatal(err)
		}
		if refY == nil {
			refY, refDX = y, dx
			for i, v := range y {
				if d := math.Abs(float64(v) - wantY[i]); !(d <= tol*(1+math.Abs(wantY[i]))) {
					t.Fatalf("output[%d] = %v, want %v", i, v, wantY[i])
				}
			}
			for i, v := range dx {
				if d := math.Abs(float64(v) - wantDX[i]); !(d <= tol*(1+math.Abs(wantDX[i]))) {
					t.Fatalf("grad[%d] = %v, want %v", i, v, wantDX[i])
				}
			}
			continue
		}
		if !slices.Equal(y, refY) || !slices.Equal(dx, refDX) {
			t.Fatalf("GOMAXPROCS=%d: results differ from GOMAXPROCS=1", procs)
		}
	}
}

func TestPSRoIAlignKernelsMatchReference(t *testing.T) {
	for _, c := range []struct {
		name string
		g    poolGeom
		k    int
	}{
		{"C'=3/3x3/sampling=2", poolGeom{n: 2, c: 27, h: 13, w: 17, ph: 3, pw: 3, scale: 0.25, samplingRatio: 2}, 9},
		{"C'=10/7x7/adaptive", poolGeom{n: 2, c: 490, h: 13, w: 17, ph: 7, pw: 7, scale: 0.5, samplingRatio: 0}, 7},
		{"C'=1/2x2/sampling=3", poolGeom{n: 1, c: 4, h: 9, w: 11, ph: 2, pw: 2, scale: 1, samplingRatio: 3}, 5},
	} {
		t.Run(c.name+"/float32", func(t *testing.T) { checkPSRoIAlignKernels[float32](t, &c.g, c.k, 1e-5) })
		t.Run(c.name+"/float64", func(t *testing.T) { checkPSRoIAlignKernels[float64](t, &c.g, c.k, 1e-12) })
	}
}
