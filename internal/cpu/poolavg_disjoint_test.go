package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// disjointGeoms are pooling geometries whose windows share no input
// position (stride ≥ kernel): kernels 1 to 3, rows or columns no window
// holds, padding, ceil_mode's partial last window, size 1.
func disjointGeoms() []Pool2dGeom {
	type axis struct{ in, k, s, p int }
	axes := []axis{{1, 1, 1, 0}, {2, 2, 2, 0}, {28, 2, 2, 0}, {29, 2, 2, 0}, {7, 3, 3, 1}, {8, 3, 3, 0},
		{11, 1, 3, 0}, {9, 2, 3, 1}, {13, 4, 4, 2}, {5, 5, 5, 0}, {3, 2, 2, 1}}
	var gs []Pool2dGeom
	for i, ra := range axes {
		for j, ca := range axes {
			if (i+j)%3 != 0 && i != j && j != 2 {
				continue
			}
			for _, ceil := range []bool{false, true} {
				ho, wo := PoolOutSize(ra.in, ra.k, ra.s, ra.p, 1, ceil), PoolOutSize(ca.in, ca.k, ca.s, ca.p, 1, ceil)
				if ho <= 0 || wo <= 0 {
					continue
				}
				gs = append(gs, Pool2dGeom{Planes: 3, H: ra.in, W: ca.in,
					Rows: NewPoolAxis(ra.in, ho, ra.k, ra.s, ra.p, 1), Cols: NewPoolAxis(ca.in, wo, ca.k, ca.s, ca.p, 1)})
			}
		}
	}
	gs = append(gs, Pool2dGeom{Planes: 0, H: 4, W: 4, Rows: NewPoolAxis(4, 2, 2, 2, 0, 1), Cols: NewPoolAxis(4, 2, 2, 2, 0, 1)},
		Pool2dGeom{Planes: 2, H: 6, W: 9, Rows: NewAdaptiveAxis(6, 3), Cols: NewAdaptiveAxis(9, 3)})
	return gs
}

func testAvgPoolDisjoint[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	divs := []AvgDivisor{{}, {IncludePad: true}, {Override: 3}, {Override: 4}}
	for _, g := range disjointGeoms() {
		ho, wo := g.Rows.Out(), g.Cols.Out()
		rlo, rhi := inverse(&g.Rows, g.H)
		clo, chi := inverse(&g.Cols, g.W)
		if !disjoint(rlo, rhi) || !disjoint(clo, chi) {
			t.Fatalf("%dx%d->%dx%d: windows overlap", g.H, g.W, ho, wo)
		}
		for _, d := range divs {
			name := fmt.Sprintf("%dx%d->%dx%d/%+v", g.H, g.W, ho, wo, d)
			x := randData[T](r, g.Planes*g.H*g.W)
			y, yRef := randData[T](r, g.Planes*ho*wo), make([]T, g.Planes*ho*wo)
			AvgPool(&g, d, x, y)
			avgPoolRef(&g, d, x, yRef)
			sameBits(t, "AvgPool "+name, y, yRef)
			sameAsAvgPoolTRef[T](t, r, &g, d, name)
		}
	}
}

// sameAsAvgPoolTRef fails t unless AvgPoolT of g (adding into random
// values) equals avgPoolTRef bitwise, and AvgPoolTSet (over them) equals
// it into zeros, on a random gradient from r.
func sameAsAvgPoolTRef[T Float](t *testing.T, r *rand.Rand, g *Pool2dGeom, d AvgDivisor, name string) {
	t.Helper()
	gr := randData[T](r, g.Planes*g.Rows.Out()*g.Cols.Out())
	dx0 := randData[T](r, g.Planes*g.H*g.W)
	got, want := append([]T(nil), dx0...), append([]T(nil), dx0...)
	AvgPoolT(g, d, gr, got)
	avgPoolTRef(g, d, gr, want)
	sameBits(t, "AvgPoolT "+name, got, want)
	AvgPoolTSet(g, d, gr, got) // over garbage: as AvgPoolT into zeros
	clear(want)
	avgPoolTRef(g, d, gr, want)
	sameBits(t, "AvgPoolTSet "+name, got, want)
}

// TestAvgPoolDisjoint: AvgPool's and AvgPoolT's paths for windows that
// share no input position equal the general loops bitwise, with and
// without AVX2, and AvgPoolTSet equals them into zeros.
func TestAvgPoolDisjoint(t *testing.T) {
	withAVX2(t, &avgAVX2, func(t *testing.T) {
		t.Run("float32", testAvgPoolDisjoint[float32])
		t.Run("float64", testAvgPoolDisjoint[float64])
	})
}

// TestAvgPoolSetOverlapping: AvgPoolTSet of overlapping and dilated
// windows (the other paths) equals the general loops into zeros.
func TestAvgPoolSetOverlapping(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, g := range avgGeoms() {
		ho, wo := g.Rows.Out(), g.Cols.Out()
		gr := randData[float64](r, g.Planes*ho*wo)
		got, want := randData[float64](r, g.Planes*g.H*g.W), make([]float64, g.Planes*g.H*g.W)
		AvgPoolTSet(&g, AvgDivisor{IncludePad: true}, gr, got)
		avgPoolTRef(&g, AvgDivisor{IncludePad: true}, gr, want)
		sameBits(t, fmt.Sprintf("AvgPoolTSet %dx%d->%dx%d", g.H, g.W, ho, wo), got, want)
	}
}

// TestAvgPoolDisjointSignedZero: a −0 gradient reaches dx as the
// separable sums' +0 (−0 + +0 = +0), not as −0.
func TestAvgPoolDisjointSignedZero(t *testing.T) {
	a := NewPoolAxis(2, 1, 2, 2, 0, 1)
	g := Pool2dGeom{Planes: 1, H: 2, W: 2, Rows: a, Cols: a}
	nz := math.Copysign(0, -1)
	dx := []float64{nz, nz, nz, nz}
	AvgPoolT(&g, AvgDivisor{IncludePad: true}, []float64{nz}, dx)
	for i, v := range dx {
		if math.Signbit(v) {
			t.Fatalf("dx[%d] = −0, want +0", i)
		}
	}
}

// TestAvgPoolDisjointProcs: the disjoint path's results are bitwise the
// same for any GOMAXPROCS.
func TestAvgPoolDisjointProcs(t *testing.T) {
	a := NewPoolAxis(29, 15, 2, 2, 0, 1)
	g := Pool2dGeom{Planes: 41, H: 29, W: 29, Rows: a, Cols: a}
	r := rand.New(rand.NewPCG(15, 16))
	gr, x := randData[float32](r, g.Planes*15*15), randData[float32](r, g.Planes*29*29)
	pairAcrossProcs(t, []int{1, 2, 4}, g.Planes*15*15, g.Planes*29*29,
		func(y []float32) error { AvgPool(&g, AvgDivisor{IncludePad: true}, x, y); return nil },
		func(dx []float32) error { AvgPoolTSet(&g, AvgDivisor{IncludePad: true}, gr, dx); return nil })
}

// BenchmarkAvgPool2x2Kernel: 2×2, stride 2 average pooling of 2048
// planes of 28×28 (issue 26's [8, 256, 28, 28]), forward and transpose
// (into zeros), against the general loops (ref).
func BenchmarkAvgPool2x2Kernel(b *testing.B) {
	b.Run("float32", benchAvgPool2x2[float32])
	b.Run("float64", benchAvgPool2x2[float64])
}

func benchAvgPool2x2[T Float](b *testing.B) {
	const planes, h = 2048, 28
	a := NewPoolAxis(h, h/2, 2, 2, 0, 1)
	g := Pool2dGeom{Planes: planes, H: h, W: h, Rows: a, Cols: a}
	r := rand.New(rand.NewPCG(5, 6))
	x, y, dx := randData[T](r, planes*h*h), randData[T](r, planes*h*h/4), randData[T](r, planes*h*h)
	benchAvgKernels(b, &g, x, y, dx)
}

// benchAvgKernels times AvgPool of x into y and AvgPoolTSet of y into dx
// on g (divisor with padding) against the general loops (ref).
func benchAvgKernels[T Float](b *testing.B, g *Pool2dGeom, x, y, dx []T) {
	div := AvgDivisor{IncludePad: true}
	benchKernels(b, []benchKernel{
		{"forward", func() { AvgPool(g, div, x, y) }},
		{"forward/ref", func() { avgPoolRef(g, div, x, y) }},
		{"transpose", func() { AvgPoolTSet(g, div, y, dx) }},
		{"transpose/ref", func() { clear(dx); avgPoolTRef(g, div, y, dx) }},
	})
}
