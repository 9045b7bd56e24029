package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// avgGeoms are pooling geometries for the fast paths' tests: kernels,
// strides and paddings with ceil_mode windows starting in the padding,
// odd sizes, tiny planes, adaptive axes.
func avgGeoms() []Pool2dGeom {
	var gs []Pool2dGeom
	type axis struct{ in, k, s, p int }
	axes := []axis{{1, 1, 1, 0}, {2, 2, 2, 0}, {5, 3, 2, 1}, {7, 3, 2, 1}, {112, 3, 2, 1}, {37, 2, 2, 0},
		{41, 4, 2, 2}, {40, 5, 2, 2}, {33, 3, 1, 1}, {50, 3, 3, 1}, {19, 1, 2, 0}, {64, 6, 2, 3}, {30, 2, 1, 1}}
	for i, ra := range axes {
		for j, ca := range axes {
			if (i+j)%3 != 0 && i != j {
				continue
			}
			for _, ceil := range []bool{false, true} {
				ho := PoolOutSize(ra.in, ra.k, ra.s, ra.p, 1, ceil)
				wo := PoolOutSize(ca.in, ca.k, ca.s, ca.p, 1, ceil)
				if ho <= 0 || wo <= 0 {
					continue
				}
				gs = append(gs, Pool2dGeom{Planes: 3, H: ra.in, W: ca.in,
					Rows: NewPoolAxis(ra.in, ho, ra.k, ra.s, ra.p, 1), Cols: NewPoolAxis(ca.in, wo, ca.k, ca.s, ca.p, 1)})
			}
		}
	}
	for _, s := range [][4]int{{5, 6, 3, 4}, {112, 112, 7, 7}, {9, 40, 4, 17}, {3, 3, 7, 7}} {
		gs = append(gs, Pool2dGeom{Planes: 2, H: s[0], W: s[1], Rows: NewAdaptiveAxis(s[0], s[2]), Cols: NewAdaptiveAxis(s[1], s[3])})
	}
	// no planes, one output column
	gs = append(gs, Pool2dGeom{Planes: 0, H: 5, W: 5, Rows: NewPoolAxis(5, 3, 3, 2, 1, 1), Cols: NewPoolAxis(5, 3, 3, 2, 1, 1)},
		Pool2dGeom{Planes: 2, H: 40, W: 3, Rows: NewPoolAxis(40, 20, 3, 2, 1, 1), Cols: NewPoolAxis(3, 1, 3, 2, 0, 1)})
	// dilated windows (not average pooling's, but AvgPoolT takes any axes)
	gs = append(gs, Pool2dGeom{Planes: 2, H: 9, W: 11, Rows: NewPoolAxis(9, 4, 3, 2, 1, 2), Cols: NewPoolAxis(11, 5, 3, 2, 2, 2)})
	return gs
}

// randData is n values with a few signed zeros.
func randData[T Float](r *rand.Rand, n int) []T {
	x := make([]T, n)
	for i := range x {
		x[i] = T(r.NormFloat64())
		switch r.IntN(50) {
		case 0:
			x[i] = T(math.Copysign(0, -1))
		case 1:
			x[i] = 0
		}
	}
	return x
}

// sameBits fails t unless got and want are equal bit for bit.
func sameBits[T Float](t *testing.T, what string, got, want []T) {
	t.Helper()
	for i := range want {
		if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) && !(got[i] != got[i] && want[i] != want[i]) {
			t.Fatalf("%s: [%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// withAVX2 runs f as subtests "avx2=false" and "avx2=true" with *flag (a
// kernel family's AVX2 switch) set to each, the AVX2 kernels on only
// where *flag was true (the CPU has them); *flag is restored after.
func withAVX2(t *testing.T, flag *bool, f func(t *testing.T)) {
	saved := *flag
	defer func() { *flag = saved }()
	for _, on := range []bool{false, true} {
		if on && !saved {
			continue
		}
		*flag = on
		t.Run(fmt.Sprint("avx2=", on), f)
	}
}

func testAvgPoolFast[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	divs := []AvgDivisor{{}, {IncludePad: true}, {Override: 3}}
	for _, g := range avgGeoms() {
		ho, wo := g.Rows.Out(), g.Cols.Out()
		for _, d := range divs {
			name := fmt.Sprintf("%dx%d->%dx%d/%+v", g.H, g.W, ho, wo, d)
			if g.Rows.Step == 1 && g.Cols.Step == 1 {
				x := randData[T](r, g.Planes*g.H*g.W)
				got, want := make([]T, g.Planes*ho*wo), make([]T, g.Planes*ho*wo)
				AvgPool(&g, d, x, got)
				avgPoolRef(&g, d, x, want)
				sameBits(t, "AvgPool "+name, got, want)
			}
			gr := randData[T](r, g.Planes*ho*wo)
			dx0 := randData[T](r, g.Planes*g.H*g.W) // AvgPoolT adds
			got, want := append([]T(nil), dx0...), append([]T(nil), dx0...)
			AvgPoolT(&g, d, gr, got)
			avgPoolTRef(&g, d, gr, want)
			sameBits(t, "AvgPoolT "+name, got, want)
			clear(got)
			clear(want)
			AvgPoolT(&g, d, gr, got)
			avgPoolTRef(&g, d, gr, want)
			sameBits(t, "AvgPoolT zeroed "+name, got, want)
		}
	}
}

// TestAvgPoolFast: AvgPool and AvgPoolT equal the general loops they
// replaced, bitwise, with and without AVX2.
func TestAvgPoolFast(t *testing.T) {
	withAVX2(t, &avgAVX2, func(t *testing.T) {
		t.Run("float32", testAvgPoolFast[float32])
		t.Run("float64", testAvgPoolFast[float64])
	})
}

// interpGeoms are bilinear and nearest geometries: ×2 both ways, align
// corners both ways, non-integer scales, downscaling, tiny planes.
func interpGeoms() []InterpGeom {
	var gs []InterpGeom
	sizes := [][2]int{{1, 1}, {1, 5}, {2, 4}, {3, 6}, {5, 10}, {7, 14}, {56, 112}, {17, 34}, {20, 30}, {9, 7}, {33, 100}, {40, 40}, {24, 48}}
	for i, rs := range sizes {
		for j, cs := range sizes {
			if (i+2*j)%5 != 0 && i != j {
				continue
			}
			for _, align := range []bool{false, true} {
				gs = append(gs, InterpGeom{Planes: 2, H: rs[0], W: cs[0], Rows: LinearAxis(rs[0], rs[1], 0, align), Cols: LinearAxis(cs[0], cs[1], 0, align)})
			}
			gs = append(gs, InterpGeom{Planes: 2, H: rs[0], W: cs[0], Rows: LinearAxis(rs[0], rs[1], 2, false), Cols: LinearAxis(cs[0], cs[1], 2, false)},
				InterpGeom{Planes: 2, H: rs[0], W: cs[0], Rows: NearestAxis(rs[0], rs[1], 0), Cols: NearestAxis(cs[0], cs[1], 0), Nearest: true})
		}
	}
	gs = append(gs, InterpGeom{Planes: 3, H: 30, W: 41, Rows: LinearAxis(30, 45, 1.5, false), Cols: LinearAxis(41, 61, 1.5, false)},
		InterpGeom{Planes: 1, H: 50, W: 50, Rows: IdentityAxis(50), Cols: LinearAxis(50, 100, 0, true)},
		InterpGeom{Planes: 0, H: 4, W: 4, Rows: LinearAxis(4, 8, 0, false), Cols: LinearAxis(4, 8, 0, false)},
		InterpGeom{Planes: 2, H: 30, W: 30, Rows: LinearAxis(30, 61, 0, false), Cols: LinearAxis(30, 59, 0, false)},
		InterpGeom{Planes: 2, H: 6, W: 40, Rows: LinearAxis(6, 3, 0, false), Cols: LinearAxis(40, 81, 2.0001, false)})
	return gs
}

func testInterpFast[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, g := range interpGeoms() {
		ho, wo := len(g.Rows.I0), len(g.Cols.I0)
		name := fmt.Sprintf("%dx%d->%dx%d/nearest=%v", g.H, g.W, ho, wo, g.Nearest)
		sameAsInterpRef[T](t, r, &g, name)
	}
}

// sameAsInterpRef fails t unless Interp and InterpT (adding into random
// values) of g equal interpRef and interpTRef bitwise on random data
// from r; it returns the output gradient it used.
func sameAsInterpRef[T Float](t *testing.T, r *rand.Rand, g *InterpGeom, name string) []T {
	t.Helper()
	ho, wo := len(g.Rows.I0), len(g.Cols.I0)
	x := randData[T](r, g.Planes*g.H*g.W)
	got, want := make([]T, g.Planes*ho*wo), make([]T, g.Planes*ho*wo)
	Interp(g, x, got)
	interpRef(g, x, want)
	sameBits(t, "Interp "+name, got, want)
	gr := randData[T](r, g.Planes*ho*wo)
	dx0 := randData[T](r, g.Planes*g.H*g.W)
	gt, wt := append([]T(nil), dx0...), append([]T(nil), dx0...)
	InterpT(g, gr, gt)
	interpTRef(g, gr, wt)
	sameBits(t, "InterpT "+name, gt, wt)
	return gr
}

// TestInterpFast: Interp and InterpT equal the general loops they
// replaced, bitwise, with and without AVX2.
func TestInterpFast(t *testing.T) {
	withAVX2(t, &avgAVX2, func(t *testing.T) {
		t.Run("float32", testInterpFast[float32])
		t.Run("float64", testInterpFast[float64])
	})
}

// BenchmarkAvgPoolKernel: the ResNet stem's 3×3, stride 2, padding 1
// average pooling of 128 planes of 112×112 (forward and transpose), the
// kernels against the general loops they replaced (ref).
func BenchmarkAvgPoolKernel(b *testing.B) {
	const planes, h = 128, 112
	a := NewPoolAxis(h, 56, 3, 2, 1, 1)
	g := Pool2dGeom{Planes: planes, H: h, W: h, Rows: a, Cols: a}
	r := rand.New(rand.NewPCG(5, 6))
	x, y := randData[float32](r, planes*h*h), make([]float32, planes*56*56)
	dx := make([]float32, planes*h*h)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"forward", func() { AvgPool(&g, AvgDivisor{IncludePad: true}, x, y) }},
		{"forward/ref", func() { avgPoolRef(&g, AvgDivisor{IncludePad: true}, x, y) }},
		{"transpose", func() { AvgPoolT(&g, AvgDivisor{IncludePad: true}, y, dx) }},
		{"transpose/ref", func() { avgPoolTRef(&g, AvgDivisor{IncludePad: true}, y, dx) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.f()
			}
		})
	}
}

// BenchmarkInterpKernel: bilinear ×2 (align corners false) of 128 planes
// of 56×56 (forward and transpose), against the general loops (ref).
func BenchmarkInterpKernel(b *testing.B) {
	const planes, h = 128, 56
	a := LinearAxis(h, 2*h, 2, false)
	g := InterpGeom{Planes: planes, H: h, W: h, Rows: a, Cols: a}
	r := rand.New(rand.NewPCG(7, 8))
	x, y := randData[float32](r, planes*h*h), make([]float32, planes*4*h*h)
	dx := make([]float32, planes*h*h)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"forward", func() { Interp(&g, x, y) }},
		{"forward/ref", func() { interpRef(&g, x, y) }},
		{"transpose", func() { InterpT(&g, y, dx) }},
		{"transpose/ref", func() { interpTRef(&g, y, dx) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.f()
			}
		})
	}
}
