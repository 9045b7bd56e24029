package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// nearestGeoms are nearest geometries covering the fast paths' corners:
// integer scales 1, 2, 3 per axis, non-integer scales (given as a scale
// factor or from the sizes), downscaling, width and height 1, no planes.
func nearestGeoms() []InterpGeom {
	type axis struct {
		in, out int
		sf      float64
	}
	axes := []axis{{1, 1, 0}, {1, 2, 2}, {1, 5, 0}, {5, 5, 0}, {5, 10, 2}, {7, 14, 0}, {6, 18, 3}, {6, 9, 1.5},
		{9, 7, 0}, {10, 5, 0.5}, {13, 40, 0}, {4, 9, 2.3}, {50, 100, 2}, {68, 136, 2}, {3, 1, 0}}
	var gs []InterpGeom
	for i, ra := range axes {
		for j, ca := range axes {
			if (i+j)%4 != 0 && i != j && j != 4 {
				continue
			}
			gs = append(gs, InterpGeom{Planes: 3, H: ra.in, W: ca.in, Nearest: true,
				Rows: NearestAxis(ra.in, ra.out, ra.sf), Cols: NearestAxis(ca.in, ca.out, ca.sf)})
		}
	}
	// no planes; index tables that go back (not torch's, but Interp takes any)
	back := InterpAxis{I0: []int{2, 0, 1, 1, 0}, I1: []int{2, 0, 1, 1, 0}, L: make([]float64, 5)}
	return append(gs, InterpGeom{Planes: 0, H: 4, W: 4, Nearest: true, Rows: NearestAxis(4, 8, 2), Cols: NearestAxis(4, 8, 2)},
		InterpGeom{Planes: 2, H: 3, W: 3, Nearest: true, Rows: back, Cols: NearestAxis(3, 6, 2)},
		InterpGeom{Planes: 2, H: 3, W: 3, Nearest: true, Rows: NearestAxis(3, 6, 2), Cols: back})
}

func testNearest[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, g := range nearestGeoms() {
		ho, wo := len(g.Rows.I0), len(g.Cols.I0)
		name := fmt.Sprintf("%dx%d->%dx%d", g.H, g.W, ho, wo)
		gr := sameAsInterpRef[T](t, r, &g, name)
		x := randData[T](r, g.Planes*g.H*g.W)
		got, want := randData[T](r, g.Planes*ho*wo), make([]T, g.Planes*ho*wo)
		Interp(&g, x, got) // over garbage: every element written
		interpRef(&g, x, want)
		sameBits(t, "Interp over garbage "+name, got, want)
		gt, wt := randData[T](r, g.Planes*g.H*g.W), make([]T, g.Planes*g.H*g.W)
		InterpTSet(&g, gr, gt) // over garbage: as InterpT into zeros
		interpTRef(&g, gr, wt)
		sameBits(t, "InterpTSet "+name, gt, wt)
	}
}

// TestNearest: the nearest kernels equal the general loops they replaced,
// bitwise (InterpTSet as InterpT into zeros), with and without AVX2.
func TestNearest(t *testing.T) {
	withAVX2(t, &avgAVX2, func(t *testing.T) {
		t.Run("float32", testNearest[float32])
		t.Run("float64", testNearest[float64])
	})
}

// TestNearestSignedZero: the 2×2 blocks' sums start from dx, so
// −0 + −0 + … stays −0 and +0 + −0 is +0, as the scatter's.
func TestNearestSignedZero(t *testing.T) {
	g := InterpGeom{Planes: 1, H: 1, W: 2, Nearest: true, Rows: NearestAxis(1, 2, 2), Cols: NearestAxis(2, 4, 2)}
	nz := math.Copysign(0, -1)
	gr := []float64{nz, nz, nz, nz, nz, nz, nz, nz}
	dx := []float64{nz, 0}
	InterpT(&g, gr, dx)
	if !math.Signbit(dx[0]) || math.Signbit(dx[1]) {
		t.Errorf("InterpT of −0 into [−0, +0] = %v (sign bits %v, %v), want [−0, +0]", dx, math.Signbit(dx[0]), math.Signbit(dx[1]))
	}
	dx = []float64{nz, nz}
	InterpTSet(&g, gr, dx)
	if math.Signbit(dx[0]) || math.Signbit(dx[1]) {
		t.Errorf("InterpTSet of −0 = %v, want [+0, +0]", dx)
	}
}

// TestNearestProcs: the nearest kernels' results are bitwise the same
// for any GOMAXPROCS.
func TestNearestProcs(t *testing.T) {
	g := InterpGeom{Planes: 37, H: 13, W: 17, Nearest: true, Rows: NearestAxis(13, 26, 2), Cols: NearestAxis(17, 40, 0)}
	r := rand.New(rand.NewPCG(11, 12))
	ho, wo := len(g.Rows.I0), len(g.Cols.I0)
	x, gr := randData[float32](r, g.Planes*g.H*g.W), randData[float32](r, g.Planes*ho*wo)
	pairAcrossProcs(t, []int{1, 2, 4}, g.Planes*ho*wo, g.Planes*g.H*g.W,
		func(y []float32) error { Interp(&g, x, y); return nil },
		func(dx []float32) error { InterpTSet(&g, gr, dx); return nil })
}

// BenchmarkNearestKernel: nearest ×2 of 512 planes of 50×68 (issue 26's
// FPN level), forward and transpose, against the general loops (ref).
func BenchmarkNearestKernel(b *testing.B) {
	const planes, h, w = 512, 50, 68
	g := InterpGeom{Planes: planes, H: h, W: w, Nearest: true, Rows: NearestAxis(h, 2*h, 2), Cols: NearestAxis(w, 2*w, 2)}
	benchInterpKernel(b, &g)
}

// benchInterpKernel times Interp and InterpTSet of g against the general
// loops (ref), float32 and float64.
func benchInterpKernel(b *testing.B, g *InterpGeom) {
	b.Run("float32", func(b *testing.B) { benchInterpKernelOf[float32](b, g) })
	b.Run("float64", func(b *testing.B) { benchInterpKernelOf[float64](b, g) })
}

func benchInterpKernelOf[T Float](b *testing.B, g *InterpGeom) {
	r := rand.New(rand.NewPCG(7, 8))
	n, m := g.Planes*g.H*g.W, g.Planes*len(g.Rows.I0)*len(g.Cols.I0)
	x, y, dx := randData[T](r, n), make([]T, m), make([]T, n)
	benchKernels(b, []benchKernel{
		{"forward", func() { Interp(g, x, y) }},
		{"forward/ref", func() { interpRef(g, x, y) }},
		{"transpose", func() { InterpTSet(g, y, dx) }},
		{"transpose/ref", func() { clear(dx); interpTRef(g, y, dx) }},
	})
}
