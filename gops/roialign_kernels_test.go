package gops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// refRoIAlign is torchvision's roi_align loop written directly, one output
// at a time in float64, over the shared geometry (roiAlignBoxGrid,
// roiAlignTap): y = F(x) and, for grad, dx = Fᵀ(grad). The kernels work
// channels-last in blocks of bins; this is what they must add up to.
func refRoIAlign[T float](g *roiAlignGeom, x, boxes, grad []T) (y, dx []float64) {
	plane, bins := g.h*g.w, g.ph*g.pw
	k := len(boxes) / 5
	y = make([]float64, k*g.c*bins)
	dx = make([]float64, len(x))
	for r := 0; r < k; r++ {
		b, err := roiAlignBoxGrid(g, boxes[5*r:5*r+5])
		if err != nil {
			panic(err)
		}
		n := int(boxes[5*r])
		for c := 0; c < g.c; c++ {
			base := (n*g.c + c) * plane
			for ph := 0; ph < g.ph; ph++ {
				for pw := 0; pw < g.pw; pw++ {
					o := (r*g.c+c)*bins + ph*g.pw + pw
					for iy := 0; iy < b.gh; iy++ {
						for ix := 0; ix < b.gw; ix++ {
							sy := b.startY + T(ph)*b.binH + T(float32(iy)+0.5)*b.binH/T(b.gh)
							sx := b.startX + T(pw)*b.binW + T(float32(ix)+0.5)*b.binW/T(b.gw)
							t := roiAlignTap(sy, sx, g.h, g.w)
							for j, p := range t.pos {
								y[o] += float64(t.w[j]) * float64(x[base+p])
								if !outsideTap(&t) {
									dx[base+p] += float64(t.w[j]) * float64(grad[o]) / float64(b.count)
								}
							}
						}
					}
					y[o] /= float64(b.count)
				}
			}
		}
	}
	return y, dx
}

// roiAlignKernelCase is random data for the kernels: many channels (so that
// the axpy rows are long and not a multiple of the SIMD width), boxes inside,
// across the border and outside both images.
func roiAlignKernelCase[T float](g *roiAlignGeom, k int, seed uint64) (x, boxes, grad []T) {
	r := rand.New(rand.NewPCG(seed, 1))
	x = make([]T, g.n*g.c*g.h*g.w)
	for i := range x {
		x[i] = T(r.NormFloat64())
	}
	s := 1 / g.scale
	for i := 0; i < k; i++ {
		x1, x2 := (r.Float64()*1.4-0.2)*float64(g.w)*s, (r.Float64()*1.4-0.2)*float64(g.w)*s
		y1, y2 := (r.Float64()*1.4-0.2)*float64(g.h)*s, (r.Float64()*1.4-0.2)*float64(g.h)*s
		boxes = append(boxes, T(i%g.n), T(min(x1, x2)), T(min(y1, y2)), T(max(x1, x2)), T(max(y1, y2)))
	}
	grad = make([]T, k*g.c*g.ph*g.pw)
	for i := range grad {
		grad[i] = T(r.NormFloat64())
	}
	return x, boxes, grad
}

func checkRoIAlignKernels[T float](t *testing.T, g *roiAlignGeom, k int, tol float64) {
	x, boxes, grad := roiAlignKernelCase[T](g, k, 7)
	wantY, wantDX := refRoIAlign(g, x, boxes, grad)
	y := make([]T, len(grad))
	if err := roiAlignForward(g, x, boxes, y); err != nil {
		t.Fatal(err)
	}
	dx := make([]T, len(x))
	if err := roiAlignTranspose(g, grad, boxes, dx); err != nil {
		t.Fatal(err)
	}
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
}

func TestRoIAlignKernelsMatchReference(t *testing.T) {
	for _, c := range []struct {
		name string
		g    roiAlignGeom
		k    int
	}{
		{"C=37/7x7/sampling=2/aligned", roiAlignGeom{n: 2, c: 37, h: 13, w: 17, ph: 7, pw: 7, scale: 0.25, samplingRatio: 2, aligned: true}, 9},
		{"C=37/3x2/adaptive", roiAlignGeom{n: 2, c: 37, h: 13, w: 17, ph: 3, pw: 2, scale: 0.5, samplingRatio: 0}, 9},
		{"C=40/30x30 (bins in two blocks)", roiAlignGeom{n: 1, c: 40, h: 9, w: 11, ph: 30, pw: 30, scale: 1, samplingRatio: 1}, 3},
		{"C=33000/2x2 (one bin a block)", roiAlignGeom{n: 1, c: 33000, h: 3, w: 4, ph: 2, pw: 2, scale: 1, samplingRatio: 2, aligned: true}, 2},
	} {
		t.Run(c.name+"/float32", func(t *testing.T) { checkRoIAlignKernels[float32](t, &c.g, c.k, 1e-5) })
		t.Run(c.name+"/float64", func(t *testing.T) { checkRoIAlignKernels[float64](t, &c.g, c.k, 1e-12) })
	}
}

// The kernels' results are bitwise the same for any number of threads, with
// channel counts that split unevenly.
func TestRoIAlignKernelsDeterministic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	g := &roiAlignGeom{n: 2, c: 37, h: 13, w: 17, ph: 7, pw: 7, scale: 0.25, samplingRatio: 0, aligned: true}
	x, boxes, grad := roiAlignKernelCase[float32](g, 11, 3)
	var refY, refDX []float32
	for _, procs := range []int{1, 2, 3, 5, 8} {
		runtime.GOMAXPROCS(procs)
		y := make([]float32, len(grad))
		dx := make([]float32, len(x))
		if err := roiAlignForward(g, x, boxes, y); err != nil {
			t.Fatal(err)
		}
		if err := roiAlignTranspose(g, grad, boxes, dx); err != nil {
			t.Fatal(err)
		}
		if refY == nil {
			refY, refDX = y, dx
			continue
		}
		if !slices.Equal(bitsOf(y), bitsOf(refY)) || !slices.Equal(bitsOf(dx), bitsOf(refDX)) {
			t.Fatalf("GOMAXPROCS=%d: results differ from GOMAXPROCS=1", procs)
		}
	}
}

// A pixel that one point reads with weight 0 and another with a positive
// weight: torchvision adds 0·Inf, so an infinite input (or upstream
// gradient) gives NaN, which merging the two reads must not turn into Inf.
func TestRoIAlignKernelsZeroWeightOfInf(t *testing.T) {
	// Samples at x = 1 (pixels 1, 2 with weights 1, 0) and x = 2 (the last
	// column: pixel 2 only).
	g := &roiAlignGeom{n: 1, c: 1, h: 3, w: 3, ph: 1, pw: 1, scale: 1, samplingRatio: 2}
	boxes := []float64{0, 0.5, 0, 2.5, 0}
	x := make([]float64, 9)
	for r := 0; r < 3; r++ {
		x[r*3+2] = math.Inf(1)
	}
	grad := []float64{math.Inf(1)}
	wantY, wantDX := refRoIAlign(g, x, boxes, grad)
	y, dx := make([]float64, 1), make([]float64, 9)
	if err := roiAlignForward(g, x, boxes, y); err != nil {
		t.Fatal(err)
	}
	if err := roiAlignTranspose(g, grad, boxes, dx); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(wantY[0]) || !math.IsNaN(y[0]) {
		t.Errorf("output %v, want NaN (reference %v)", y[0], wantY[0])
	}
	for i := range dx {
		if math.IsNaN(wantDX[i]) != math.IsNaN(dx[i]) || !math.IsNaN(dx[i]) && dx[i] != wantDX[i] {
			t.Errorf("grad[%d] = %v, want %v", i, dx[i], wantDX[i])
		}
	}
}

func bitsOf(s []float32) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%08x", math.Float32bits(v))
	}
	return out
}
