package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"unsafe"
)

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

// boxMajorPSRoIPoolT is PSRoIPoolTranspose's additions in box-major order
// (the order before the channel-major loop): every pixel receives its
// boxes' additions in box order either way, so the bits must agree.
func boxMajorPSRoIPoolT[T Float](g *PoolGeom, grad, boxes, dst []T) {
	plane, nb := g.H*g.W, g.PH*g.PW
	cOut := g.C / nb
	for k := 0; k < len(boxes)/5; k++ {
		bins := PoolBins(g, boxes[5*k:5*k+5], false, nil)
		n := int(boxes[5*k])
		for ci := 0; ci < g.C; ci++ {
			b := bins[ci%nb]
			if b.empty() {
				continue
			}
			d := grad[(k*cOut+ci/nb)*nb+ci%nb] / T(b.area())
			for h := b.HS; h < b.HE; h++ {
				for w := b.WS; w < b.WE; w++ {
					dst[(n*g.C+ci)*plane+h*g.W+w] += d
				}
			}
		}
	}
}

// TestPSRoIPoolTransposeSet: PSRoIPoolTransposeSet into a dst of NaNs,
// PSRoIPoolTranspose into zeros and the box-major additions give the same
// bits, for 1 to 7 threads, boxes overlapping (many per image) and some
// empty, -0 and NaN in the gradient.
func TestPSRoIPoolTransposeSet(t *testing.T) {
	for _, c := range []struct {
		g PoolGeom
		k int
	}{
		{PoolGeom{N: 2, C: 490, H: 13, W: 17, PH: 7, PW: 7, Scale: 0.5}, 40},
		{PoolGeom{N: 3, C: 27, H: 9, W: 11, PH: 3, PW: 3, Scale: 1}, 25},
		{PoolGeom{N: 1, C: 4, H: 5, W: 6, PH: 2, PW: 2, Scale: 2}, 0},
	} {
		t.Run(fmt.Sprint(c.g.C, c.k), func(t *testing.T) {
			testPSRoIPoolTransposeSet[float32](t, &c.g, c.k)
			testPSRoIPoolTransposeSet[float64](t, &c.g, c.k)
		})
	}
}

func testPSRoIPoolTransposeSet[T Float](t *testing.T, g *PoolGeom, k int) {
	_, boxes, _ := roiAlignKernelCase[T](&RoIAlignGeom{N: g.N, C: g.C, H: g.H, W: g.W, PH: g.PH, PW: g.PW, Scale: g.Scale}, k, 7)
	r := rand.New(rand.NewPCG(8, 9))
	grad := randNormal[T](r, k*g.C)
	for i := range grad {
		switch r.IntN(8) {
		case 0:
			grad[i] = T(math.Copysign(0, -1))
		case 1:
			grad[i] = nanOf[T](uint64(i))
		}
	}
	want := make([]T, g.N*g.C*g.H*g.W)
	boxMajorPSRoIPoolT(g, grad, boxes, want)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, p := range []int{1, 2, 3, 7} {
		runtime.GOMAXPROCS(p)
		add, set := make([]T, len(want)), make([]T, len(want))
		for i := range set {
			set[i] = nanOf[T](1)
		}
		if err := PSRoIPoolTranspose(g, grad, boxes, add); err != nil {
			t.Fatal(err)
		}
		if err := PSRoIPoolTransposeSet(g, grad, boxes, set); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(bitsOf(add), bitsOf(want)) || !slices.Equal(bitsOf(set), bitsOf(want)) {
			t.Fatalf("%T GOMAXPROCS=%d: channel-major or set results differ from the box-major additions", T(0), p)
		}
	}
}

// TestBinSumOrder: binSum is, bit for bit, binSumLanes' order written
// out directly (lane l the columns j ≡ l mod V, row by row, then the
// tree; the CUDA twin's loops), by the AVX2 loop and by the Go loop, for
// every bin of 1–9 rows by 1–19 columns, at the start, inside and at the
// end of a plane (where the AVX2 loop's blocks do not fit unless the
// columns are a multiple of V, and the Go loop runs), values of mixed
// magnitude (so that another order rounds differently: some bins must
// differ from one chain of additions).
func TestBinSumOrder(t *testing.T) {
	testBinSumOrder[float32](t)
	testBinSumOrder[float64](t)
}

func testBinSumOrder[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(4, 9))
	const w, h = 23, 11
	x := make([]T, w*h)
	for i := range x {
		x[i] = T((r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(7)-3)))
	}
	v := 32 / int(unsafe.Sizeof(T(0)))
	lanes := func(at, rows, cols int) T {
		l := make([]T, v)
		for q := range l {
			for hh := 0; hh < rows; hh++ {
				for j := q; j < cols; j += v {
					l[q] += x[at+hh*w+j]
				}
			}
		}
		if v == 8 {
			return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
		}
		return (l[0] + l[2]) + (l[1] + l[3])
	}
	avx := psAVX2
	defer func() { psAVX2 = avx }()
	differs, fits := 0, 0
	for rows := 1; rows <= 9; rows++ {
		for cols := 1; cols <= 19; cols++ {
			for _, at := range []int{0, 3, (h-rows)*w + w - cols} {
				want := lanes(at, rows, cols)
				for _, asm := range []bool{false, true} {
					psAVX2 = asm && avx
					if binFits(x[at:], w, rows, cols) {
						fits++
					}
					got := binSum(x[at:], w, rows, cols)
					if math.Float64bits(float64(got)) != math.Float64bits(float64(want)) {
						t.Fatalf("%T %d×%d at %d (AVX2 %v): binSum %v, lanes %v", got, rows, cols, at, psAVX2, got, want)
					}
				}
				var chain T
				for hh := 0; hh < rows; hh++ {
					for _, e := range x[at+hh*w:][:cols] {
						chain += e
					}
				}
				if want != chain {
					differs++
				}
			}
		}
	}
	if differs == 0 {
		t.Fatalf("%T: no bin where the lanes' order differs from one chain: the test cannot tell the orders apart", T(0))
	}
	if avx && fits == 0 {
		t.Fatalf("%T: the AVX2 loop never ran", T(0))
	}
}

// TestBinAdd: binAdd by the AVX2 loop and by the Go loop give the same
// bits, leave a partial block's other elements as they were (−0 and NaN
// payloads included) and write nothing past x's end.
func TestBinAdd(t *testing.T) {
	testBinAdd[float32](t)
	testBinAdd[float64](t)
}

func testBinAdd[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(5, 2))
	const w, h = 21, 9
	base := make([]T, w*h+8)
	for i := range base {
		switch r.IntN(8) {
		case 0:
			base[i] = T(math.Copysign(0, -1))
		case 1:
			base[i] = T(math.Float64frombits(0x7ff8000000000000 | uint64(r.IntN(1<<20))))
		default:
			base[i] = T(r.NormFloat64())
		}
	}
	avx := psAVX2
	defer func() { psAVX2 = avx }()
	for rows := 1; rows <= h; rows++ {
		for cols := 1; cols <= w; cols++ {
			for _, at := range []int{0, 5, (h-rows)*w + w - cols} {
				if at+(rows-1)*w+cols > w*h {
					continue // the bin leaves the plane
				}
				d := T(r.NormFloat64())
				var outs [2][]T
				for i, asm := range []bool{false, true} {
					psAVX2 = asm && avx
					buf := slices.Clone(base)
					binAdd(buf[at:w*h:w*h], w, rows, cols, d)
					outs[i] = buf
				}
				for i := range base {
					want := base[i]
					if i < w*h && i >= at && (i-at)%w < cols && (i-at)/w < rows {
						want += d
					}
					for m, o := range outs {
						if math.Float64bits(float64(o[i])) != math.Float64bits(float64(want)) {
							t.Fatalf("%T %d×%d at %d, element %d (AVX2 %v): %v, want %v", d, rows, cols, at, i, m == 1, o[i], want)
						}
					}
				}
			}
		}
	}
}
