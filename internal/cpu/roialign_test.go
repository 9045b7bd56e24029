package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refRoIAlign is torchvision's roi_align loop written directly, one output
// at a time in float64, over the shared geometry (roiAlignBoxGrid,
// roiAlignTap): y = F(x) and, for grad, dx = Fᵀ(grad). The kernels work
// channels-last in blocks of bins; this is what they must add up to.
func refRoIAlign[T Float](g *RoIAlignGeom, x, boxes, grad []T) (y, dx []float64) {
	plane, bins := g.H*g.W, g.PH*g.PW
	k := len(boxes) / 5
	y = make([]float64, k*g.C*bins)
	dx = make([]float64, len(x))
	for r := 0; r < k; r++ {
		b, err := roiAlignBoxGrid(g, boxes[5*r:5*r+5])
		if err != nil {
			panic(err)
		}
		n := int(boxes[5*r])
		for c := 0; c < g.C; c++ {
			base := (n*g.C + c) * plane
			for ph := 0; ph < g.PH; ph++ {
				for pw := 0; pw < g.PW; pw++ {
					o := (r*g.C+c)*bins + ph*g.PW + pw
					for iy := 0; iy < b.GH; iy++ {
						for ix := 0; ix < b.GW; ix++ {
							sy := b.StartY + T(ph)*b.BinH + T(float32(iy)+0.5)*b.BinH/T(b.GH)
							sx := b.StartX + T(pw)*b.BinW + T(float32(ix)+0.5)*b.BinW/T(b.GW)
							t := roiAlignTap(sy, sx, g.H, g.W)
							for j, p := range t.pos {
								y[o] += float64(t.w[j]) * float64(x[base+p])
								if !outsideTap(&t) {
									dx[base+p] += float64(t.w[j]) * float64(grad[o]) / float64(b.Count)
								}
							}
						}
					}
					y[o] /= float64(b.Count)
				}
			}
		}
	}
	return y, dx
}

// roiAlignKernelCase is random data for the kernels: many channels (so that
// the axpy rows are long and not a multiple of the SIMD width), boxes inside,
// across the border and outside both images.
func roiAlignKernelCase[T Float](g *RoIAlignGeom, k int, seed uint64) (x, boxes, grad []T) {
	r := rand.New(rand.NewPCG(seed, 1))
	x = randNormal[T](r, g.N*g.C*g.H*g.W)
	boxes = randBoxes[T](r, k, g.N, g.H, g.W, g.Scale)
	grad = randNormal[T](r, k*g.C*g.PH*g.PW)
	return x, boxes, grad
}

func checkRoIAlignKernels[T Float](t *testing.T, g *RoIAlignGeom, k int, tol float64) {
	x, boxes, grad := roiAlignKernelCase[T](g, k, 7)
	wantY, wantDX := refRoIAlign(g, x, boxes, grad)
	y, dx := pairAcrossProcs(t, []int{1}, len(grad), len(x),
		func(y []T) error { return RoIAlignForward(g, x, boxes, y) },
		func(dx []T) error { return RoIAlignTranspose(g, grad, boxes, dx) })
	expectClose(t, "output", y, wantY, tol)
	expectClose(t, "grad", dx, wantDX, tol)
}

func TestRoIAlignKernelsMatchReference(t *testing.T) {
	for _, c := range []roiCase[RoIAlignGeom]{
		{"C=37/7x7/sampling=2/aligned", RoIAlignGeom{N: 2, C: 37, H: 13, W: 17, PH: 7, PW: 7, Scale: 0.25, SamplingRatio: 2, Aligned: true}, 9},
		{"C=37/3x2/adaptive", RoIAlignGeom{N: 2, C: 37, H: 13, W: 17, PH: 3, PW: 2, Scale: 0.5, SamplingRatio: 0}, 9},
		{"C=40/30x30 (bins in two blocks)", RoIAlignGeom{N: 1, C: 40, H: 9, W: 11, PH: 30, PW: 30, Scale: 1, SamplingRatio: 1}, 3},
		{"C=33000/2x2 (one bin a block)", RoIAlignGeom{N: 1, C: 33000, H: 3, W: 4, PH: 2, PW: 2, Scale: 1, SamplingRatio: 2, Aligned: true}, 2},
	} {
		t.Run(c.name+"/float32", func(t *testing.T) { checkRoIAlignKernels[float32](t, &c.g, c.k, 1e-5) })
		t.Run(c.name+"/float64", func(t *testing.T) { checkRoIAlignKernels[float64](t, &c.g, c.k, 1e-12) })
	}
}

// The kernels' results are bitwise the same for any number of threads, with
// channel counts that split unevenly.
func TestRoIAlignKernelsDeterministic(t *testing.T) {
	g := &RoIAlignGeom{N: 2, C: 37, H: 13, W: 17, PH: 7, PW: 7, Scale: 0.25, SamplingRatio: 0, Aligned: true}
	x, boxes, grad := roiAlignKernelCase[float32](g, 11, 3)
	pairAcrossProcs(t, []int{1, 2, 3, 5, 8}, len(grad), len(x),
		func(y []float32) error { return RoIAlignForward(g, x, boxes, y) },
		func(dx []float32) error { return RoIAlignTranspose(g, grad, boxes, dx) })
}

// A pixel that one point reads with weight 0 and another with a positive
// weight: torchvision adds 0·Inf, so an infinite input (or upstream
// gradient) gives NaN, which merging the two reads must not turn into Inf.
func TestRoIAlignKernelsZeroWeightOfInf(t *testing.T) {
	// Samples at x = 1 (pixels 1, 2 with weights 1, 0) and x = 2 (the last
	// column: pixel 2 only).
	g := &RoIAlignGeom{N: 1, C: 1, H: 3, W: 3, PH: 1, PW: 1, Scale: 1, SamplingRatio: 2}
	boxes := []float64{0, 0.5, 0, 2.5, 0}
	x := make([]float64, 9)
	for r := 0; r < 3; r++ {
		x[r*3+2] = math.Inf(1)
	}
	grad := []float64{math.Inf(1)}
	wantY, wantDX := refRoIAlign(g, x, boxes, grad)
	y, dx := make([]float64, 1), make([]float64, 9)
	if err := RoIAlignForward(g, x, boxes, y); err != nil {
		t.Fatal(err)
	}
	if err := RoIAlignTranspose(g, grad, boxes, dx); err != nil {
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

// Small boxes on a large plane (the kernels read and write the planes in
// place): the results equal the reference, and the transpose sets every
// element of dst (NaN before).
func TestRoIAlignKernelsSmallBoxes(t *testing.T) {
	g := &RoIAlignGeom{N: 3, C: 5, H: 40, W: 37, PH: 3, PW: 4, Scale: 1, SamplingRatio: 2, Aligned: true}
	// Image 0: two boxes far apart; image 1: none; image 2: one across the
	// top edge and an inverted one.
	boxes := []float64{
		0, 3.2, 4.7, 9.1, 8.3,
		0, 20.5, 30.25, 27, 35.5,
		2, 10, -3, 16, 5,
		2, 12, 20, 8, 15,
	}
	r := rand.New(rand.NewPCG(5, 1))
	x := randNormal[float64](r, g.N*g.C*g.H*g.W)
	grad := randNormal[float64](r, 4*g.C*g.PH*g.PW)
	wantY, wantDX := refRoIAlign(g, x, boxes, grad)
	y := make([]float64, len(grad))
	if err := RoIAlignForward(g, x, boxes, y); err != nil {
		t.Fatal(err)
	}
	expectClose(t, "output", y, wantY, 1e-12)
	dx := make([]float64, len(x))
	for i := range dx {
		dx[i] = math.NaN()
	}
	if err := RoIAlignTranspose(g, grad, boxes, dx); err != nil {
		t.Fatal(err)
	}
	expectClose(t, "grad", dx, wantDX, 1e-12)
}

// TestRoIAlignKernelsLayoutsBitwise: the channels-last path and the
// in-place path (roiAlignChannelsLast picks one by how densely the boxes
// sample) give the same bits, forward and transpose, float32 and float64,
// dense and sparse boxes, the transpose's dst prefilled with NaN.
func TestRoIAlignKernelsLayoutsBitwise(t *testing.T) {
	t.Run("float32", func(t *testing.T) { roiAlignLayoutsBitwise[float32](t) })
	t.Run("float64", func(t *testing.T) { roiAlignLayoutsBitwise[float64](t) })
}

func roiAlignLayoutsBitwise[T Float](t *testing.T) {
	defer func(v int) { clTouches = v }(clTouches)
	for _, tc := range []struct {
		g *RoIAlignGeom
		k int
	}{
		{&RoIAlignGeom{N: 2, C: 19, H: 23, W: 17, PH: 3, PW: 5, Scale: 0.5, SamplingRatio: 0, Aligned: true}, 9},
		{&RoIAlignGeom{N: 1, C: 3, H: 64, W: 64, PH: 2, PW: 2, Scale: 1, SamplingRatio: 2}, 2},
	} {
		x, boxes, grad := roiAlignKernelCase[T](tc.g, tc.k, 11)
		run := func(touches int) (y, dx []T) {
			clTouches = touches
			y = make([]T, len(grad))
			dx = make([]T, len(x))
			for i := range dx {
				dx[i] = T(math.NaN())
			}
			if err := RoIAlignForward(tc.g, x, boxes, y); err != nil {
				t.Fatal(err)
			}
			if err := RoIAlignTranspose(tc.g, grad, boxes, dx); err != nil {
				t.Fatal(err)
			}
			return y, dx
		}
		grids, err := RoIAlignGrids(tc.g, boxes)
		if err != nil {
			t.Fatal(err)
		}
		clTouches = 0
		if !roiAlignChannelsLast(tc.g, grids) {
			t.Fatalf("%+v: clTouches 0 does not pick channels-last", tc.g)
		}
		clTouches = 1 << 20
		if roiAlignChannelsLast(tc.g, grids) {
			t.Fatalf("%+v: a huge clTouches picks channels-last", tc.g)
		}
		yc, dc := run(0)
		yp, dp := run(1 << 20)
		for i := range yc {
			if math.Float64bits(float64(yc[i])) != math.Float64bits(float64(yp[i])) {
				t.Fatalf("%+v: output %d: channels-last %v, in place %v", tc.g, i, yc[i], yp[i])
			}
		}
		for i := range dc {
			if math.Float64bits(float64(dc[i])) != math.Float64bits(float64(dp[i])) {
				t.Fatalf("%+v: grad %d: channels-last %v, in place %v", tc.g, i, dc[i], dp[i])
			}
		}
	}
}
