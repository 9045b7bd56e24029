package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// refSource is torch's scalar grid_sampler_compute_source_index_set_grad
// (GridSampler.h: unnormalize, clip_coordinates_set_grad,
// reflect_coordinates_set_grad with fmod), written independently of the
// kernels' vectorised formulation: the coordinate and dx/dg.
func refSource(g float64, size int, pad GridPadding, aligned bool) (float64, float64) {
	var x, d float64
	if aligned {
		x, d = (g+1)/2*float64(size-1), float64(size-1)/2
	} else {
		x, d = ((g+1)*float64(size)-1)/2, float64(size)/2
	}
	clip := func(x float64) (float64, float64) {
		switch {
		case x <= 0:
			return 0, 0
		case x >= float64(size-1):
			return float64(size - 1), 0
		}
		return x, 1
	}
	switch pad {
	case GridBorder:
		x, c := clip(x)
		return x, d * c
	case GridReflection:
		lo2, hi2 := -1, 2*size-1
		if aligned {
			lo2, hi2 = 0, 2*(size-1)
		}
		if lo2 == hi2 {
			return 0, 0
		}
		mn, span := float64(lo2)/2, float64(hi2-lo2)/2
		in, sign := x-mn, 1.0
		if in < 0 {
			in, sign = -in, -1
		}
		extra := math.Mod(in, span)
		if int(math.Floor(in/span))%2 == 0 {
			x = extra + mn
		} else {
			x, sign = span-extra+mn, -sign
		}
		x, c := clip(x)
		return x, d * sign * c
	}
	return x, d
}

// refMember is member (a, b) of K at every output, by direct loops over
// the corners with bounds tests (torch's within_bounds_2d).
func refMember(g *GridSampleGeom, a, b int, x, grid []float64) []float64 {
	p := g.HO * g.WO
	out := make([]float64, g.N*g.C*p)
	for n := 0; n < g.N; n++ {
		for j := 0; j < p; j++ {
			gx, gy := grid[2*(n*p+j)], grid[2*(n*p+j)+1]
			xs, kx := refSource(gx, g.W, g.Padding, g.AlignCorners)
			ys, ky := refSource(gy, g.H, g.Padding, g.AlignCorners)
			for c := 0; c < g.C; c++ {
				plane := x[(n*g.C+c)*g.H*g.W:]
				at := func(yy, xx int) float64 {
					if yy < 0 || yy >= g.H || xx < 0 || xx >= g.W {
						return 0
					}
					return plane[yy*g.W+xx]
				}
				var v float64
				if g.Nearest {
					if a+b == 0 {
						v = at(int(math.RoundToEven(ys)), int(math.RoundToEven(xs)))
					}
				} else {
					x0, y0 := math.Floor(xs), math.Floor(ys)
					lx, ly := xs-x0, ys-y0
					fx := [2]float64{1 - lx, lx}
					if a == 1 {
						fx = [2]float64{-kx, kx}
					}
					fy := [2]float64{1 - ly, ly}
					if b == 1 {
						fy = [2]float64{-ky, ky}
					}
					ix, iy := int(x0), int(y0)
					v = fy[0]*fx[0]*at(iy, ix) + fy[0]*fx[1]*at(iy, ix+1) + fy[1]*fx[0]*at(iy+1, ix) + fy[1]*fx[1]*at(iy+1, ix+1)
				}
				out[(n*g.C+c)*p+j] = v
			}
		}
	}
	return out
}

func randSlice(r *rand.Rand, n int, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = scale * (2*r.Float64() - 1)
	}
	return v
}

// randGrid is n grid coordinates drawn uniformly from [−lim, lim) as T:
// T(2·lim·u − lim) for u = r.Float64().
func randGrid[T Float](r *rand.Rand, n int, lim float64) []T {
	grid := make([]T, n)
	for i := range grid {
		grid[i] = T(2*lim*r.Float64() - lim)
	}
	return grid
}

// TestGridSampleMembers: S, T, C and O of every order against refMember
// (S directly, T through <T(G), X> = <G, S(X)>, C and O as channel
// contractions of refMember), every mode, padding and align_corners, with
// and without a mask; and bitwise the same for GOMAXPROCS 1 and 3.
func TestGridSampleMembers(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, nearest := range []bool{false, true} {
		for _, pad := range []GridPadding{GridZeros, GridBorder, GridReflection} {
			for _, ac := range []bool{false, true} {
				g := &GridSampleGeom{N: 2, C: 3, H: 5, W: 7, HO: 4, WO: 6, Nearest: nearest, Padding: pad, AlignCorners: ac}
				t.Run(fmt.Sprintf("nearest=%t/pad=%d/align=%t", nearest, pad, ac), func(t *testing.T) {
					x := randSlice(r, g.N*g.C*g.H*g.W, 1)
					grid := randSlice(r, g.N*g.HO*g.WO*2, 1.6)
					gr := randSlice(r, g.N*g.C*g.HO*g.WO, 1)
					mask := randSlice(r, g.N*g.HO*g.WO, 1)
					mo := g.MaxOrder()
					for a := 0; a <= mo; a++ {
						for b := 0; b <= mo; b++ {
							checkMember(t, g, a, b, x, grid, gr, mask)
						}
					}
					if !nearest {
						checkPair(t, g, x, grid, gr, mask)
					}
				})
			}
		}
	}
}

func checkMember(t *testing.T, g *GridSampleGeom, a, b int, x, grid, gr, mask []float64) {
	t.Helper()
	p := g.HO * g.WO
	ref := refMember(g, a, b, x, grid)
	close := func(what string, got, want []float64) {
		t.Helper()
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
				t.Fatalf("(%d, %d) %s[%d] = %v, want %v", a, b, what, i, got[i], want[i])
			}
		}
	}
	run := func(f func()) {
		// The kernels' results must not depend on the threads.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		f()
	}
	s := make([]float64, len(ref))
	run(func() { GridSampleS(g, a, b, x, grid, nil, s) })
	close("S", s, ref)
	sm := make([]float64, len(ref))
	GridSampleS(g, a, b, x, grid, mask, sm)
	for i := range ref {
		ref[i] *= mask[i/(g.C*p)*p+i%p]
	}
	close("S masked", sm, ref)
	// <T(G, M), X> = <M ⊙ G, K(X)>.
	tr := make([]float64, len(x))
	run(func() { GridSampleT(g, a, b, gr, grid, mask, tr) })
	lhs, rhs := dot(tr, x), dot(gr, sm)
	if math.Abs(lhs-rhs) > 1e-11*(1+math.Abs(rhs)) {
		t.Fatalf("(%d, %d): <T(G), X> = %v, <G, S(X)> = %v", a, b, lhs, rhs)
	}
	tr3 := make([]float64, len(x))
	func() {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
		GridSampleT(g, a, b, gr, grid, mask, tr3)
	}()
	for i := range tr {
		if math.Float64bits(tr[i]) != math.Float64bits(tr3[i]) {
			t.Fatalf("(%d, %d): T differs with GOMAXPROCS 3 at %d", a, b, i)
		}
	}
	// C and O: channel contractions of the unmasked members.
	contract := func(k []float64) []float64 {
		out := make([]float64, g.N*p)
		for n := 0; n < g.N; n++ {
			for c := 0; c < g.C; c++ {
				for j := 0; j < p; j++ {
					out[n*p+j] += gr[(n*g.C+c)*p+j] * k[(n*g.C+c)*p+j]
				}
			}
		}
		return out
	}
	cr := make([]float64, g.N*p)
	GridSampleC(g, a, b, x, grid, gr, cr)
	close("C", cr, contract(refMember(g, a, b, x, grid)))
	o := make([]float64, 2*g.N*p)
	GridSampleO(g, a, b, x, grid, gr, mask, o)
	want := make([]float64, 2*g.N*p)
	mo := g.MaxOrder()
	for half, ab := range [2][2]int{{a + 1, b}, {a, b + 1}} {
		if ab[0] > mo || ab[1] > mo {
			continue
		}
		cc := contract(refMember(g, ab[0], ab[1], x, grid))
		for j := range cc {
			want[2*j+half] = mask[j] * cc[j]
		}
	}
	close("O", o, want)
}

// TestGridSampleNonFinite: NaN, infinite and huge grid values read nothing
// outside the input and give finite results for finite inputs.
func TestGridSampleNonFinite(t *testing.T) {
	vals := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e300, -1e300, 3e9, -3e9, 1e-320}
	for _, nearest := range []bool{false, true} {
		for _, pad := range []GridPadding{GridZeros, GridBorder, GridReflection} {
			for _, ac := range []bool{false, true} {
				g := &GridSampleGeom{N: 1, C: 2, H: 3, W: 4, HO: 1, WO: len(vals) * len(vals), Nearest: nearest, Padding: pad, AlignCorners: ac}
				grid := make([]float64, 0, 2*g.WO)
				for _, u := range vals {
					for _, v := range vals {
						grid = append(grid, u, v)
					}
				}
				x := make([]float64, g.C*g.H*g.W)
				for i := range x {
					x[i] = float64(i + 1)
				}
				out := make([]float64, g.C*g.WO)
				GridSampleS(g, 0, 0, x, grid, nil, out)
				dx := make([]float64, len(x))
				GridSampleT(g, 0, 0, out, grid, nil, dx)
				o := make([]float64, len(grid))
				GridSampleO(g, 0, 0, x, grid, out, nil, o)
				for _, v := range append(append(out, dx...), o...) {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Fatalf("nearest=%t pad=%d align=%t: non-finite %v", nearest, pad, ac, v)
					}
				}
			}
		}
	}
}

// TestAffineGridTranspose: <AffineGridT(G), θ> = <G, AffineGrid(θ)>, and
// the base coordinates of torch's linspace.
func TestAffineGridTranspose(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, ac := range []bool{false, true} {
		n, h, w := 2, 3, 5
		theta, gr := randSlice(r, 6*n, 1), randSlice(r, n*h*w*2, 1)
		out, dt := make([]float64, n*h*w*2), make([]float64, 6*n)
		AffineGrid(n, h, w, ac, theta, out)
		AffineGridT(n, h, w, ac, gr, dt)
		lhs, rhs := dot(dt, theta), dot(gr, out)
		if math.Abs(lhs-rhs) > 1e-12 {
			t.Fatalf("align=%t: %v vs %v", ac, lhs, rhs)
		}
	}
	for _, c := range []struct {
		n    int
		ac   bool
		want []float64
	}{{1, false, []float64{0}}, {4, false, []float64{-0.75, -0.25, 0.25, 0.75}}, {3, true, []float64{-1, 0, 1}}, {5, true, []float64{-1, -0.5, 0, 0.5, 1}}} {
		got := AffineGridBase[float64](c.n, c.ac)
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-15 {
				t.Fatalf("base(%d, %t) = %v, want %v", c.n, c.ac, got, c.want)
			}
		}
	}
}

// checkPair: S2 and T2 of (a, b) = (0, 0) equal the sums of their two
// members.
func checkPair(t *testing.T, g *GridSampleGeom, x, grid, gr, m1 []float64) {
	t.Helper()
	m2 := make([]float64, len(m1))
	for i := range m2 {
		m2[i] = 1 - 0.5*m1[i]
	}
	nOut, nIn := g.N*g.C*g.HO*g.WO, len(x)
	s2, s10, s01 := make([]float64, nOut), make([]float64, nOut), make([]float64, nOut)
	GridSampleS2(g, 0, 0, x, grid, m1, m2, s2)
	GridSampleS(g, 1, 0, x, grid, m1, s10)
	GridSampleS(g, 0, 1, x, grid, m2, s01)
	t2, t10, t01 := make([]float64, nIn), make([]float64, nIn), make([]float64, nIn)
	GridSampleT2(g, 0, 0, gr, grid, m1, m2, t2)
	GridSampleT(g, 1, 0, gr, grid, m1, t10)
	GridSampleT(g, 0, 1, gr, grid, m2, t01)
	for i := range s2 {
		if want := s10[i] + s01[i]; math.Abs(s2[i]-want) > 1e-12*(1+math.Abs(want)) {
			t.Fatalf("S2[%d] = %v, want %v", i, s2[i], want)
		}
	}
	for i := range t2 {
		if want := t10[i] + t01[i]; math.Abs(t2[i]-want) > 1e-12*(1+math.Abs(want)) {
			t.Fatalf("T2[%d] = %v, want %v", i, t2[i], want)
		}
	}
	np := g.N * g.HO * g.WO
	o2, o10, o01 := make([]float64, 2*np), make([]float64, 2*np), make([]float64, 2*np)
	GridSampleO2(g, 0, 0, x, grid, gr, m1, m2, o2)
	GridSampleO(g, 1, 0, x, grid, gr, m1, o10)
	GridSampleO(g, 0, 1, x, grid, gr, m2, o01)
	for i := range o2 {
		if want := o10[i] + o01[i]; math.Abs(o2[i]-want) > 1e-12*(1+math.Abs(want)) {
			t.Fatalf("O2[%d] = %v, want %v", i, o2[i], want)
		}
	}
}

// TestGridSampleBicubicMembers: for bicubic, every member's T is S's
// adjoint, C and O are S's channel contractions, S2 and T2 their pairs'
// sums, and NaN, infinite and huge coordinates give finite results.
// (Values and first derivatives equal torch's: nn's tests.)
func TestGridSampleBicubicMembers(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 15))
	for _, pad := range []GridPadding{GridZeros, GridBorder, GridReflection} {
		for _, ac := range []bool{false, true} {
			g := &GridSampleGeom{N: 2, C: 3, H: 5, W: 6, HO: 3, WO: 4, Bicubic: true, Padding: pad, AlignCorners: ac}
			x := randSlice(r, g.N*g.C*g.H*g.W, 1)
			grid := randSlice(r, g.N*g.HO*g.WO*2, 1.6)
			grid[0], grid[3], grid[5] = math.NaN(), math.Inf(1), 1e30
			gr := randSlice(r, g.N*g.C*g.HO*g.WO, 1)
			mask := randSlice(r, g.N*g.HO*g.WO, 1)
			p := g.HO * g.WO
			for a := 0; a <= 3; a++ {
				for b := 0; b <= 3; b++ {
					s, tr := make([]float64, len(gr)), make([]float64, len(x))
					GridSampleS(g, a, b, x, grid, mask, s)
					GridSampleT(g, a, b, gr, grid, mask, tr)
					lhs, rhs := dot(tr, x), dot(gr, s)
					if math.IsNaN(lhs) || math.Abs(lhs-rhs) > 1e-10*(1+math.Abs(rhs)) {
						t.Fatalf("pad %d align %t (%d, %d): <T(G), X> = %v, <G, S(X)> = %v", pad, ac, a, b, lhs, rhs)
					}
					// C against the unmasked S.
					su, c := make([]float64, len(gr)), make([]float64, g.N*p)
					GridSampleS(g, a, b, x, grid, nil, su)
					GridSampleC(g, a, b, x, grid, gr, c)
					for n := 0; n < g.N; n++ {
						for j := 0; j < p; j++ {
							var want float64
							for ch := 0; ch < g.C; ch++ {
								want += gr[(n*g.C+ch)*p+j] * su[(n*g.C+ch)*p+j]
							}
							if math.Abs(c[n*p+j]-want) > 1e-12*(1+math.Abs(want)) {
								t.Fatalf("pad %d (%d, %d): C %v, want %v", pad, a, b, c[n*p+j], want)
							}
						}
					}
				}
			}
			checkPair(t, g, x, grid, gr, mask)
		}
	}
}

// TestGridTapsZeros: gridTapsZeros (bilinear "zeros") makes the same taps
// as newGridPoint and tap, and gridOTapsZeros the same O taps and scales
// as gridOTapsPoints, bitwise, for every bilinear member, with and
// without a mask, both align_corners, points inside, outside, on
// borders and cell edges, NaN and infinite, in float32 and float64.
func TestGridTapsZeros(t *testing.T) {
	testGridTapsZeros[float32](t)
	testGridTapsZeros[float64](t)
}

func testGridTapsZeros[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(14, 15))
	for _, sz := range [][2]int{{5, 7}, {1, 1}, {1, 6}, {64, 64}} {
		for _, ac := range []bool{false, true} {
			g := &GridSampleGeom{N: 2, C: 1, H: sz[0], W: sz[1], HO: 9, WO: 13, AlignCorners: ac}
			n := g.N * g.HO * g.WO
			special := []T{-1, 1, 0, -1 - 1/T(g.W), 1 + 1/T(g.W), 2 / T(g.W), 1 - 1/T(g.H), T(math.NaN()),
				T(math.Inf(1)), T(math.Inf(-1)), 1e30, -1e30, -3, T(math.Nextafter(-1, -2))}
			grid, mask := make([]T, 2*n), make([]T, n)
			for i := range grid {
				grid[i] = T(2.6*r.Float64() - 1.3)
				if r.IntN(4) == 0 {
					grid[i] = special[r.IntN(len(special))]
				}
			}
			for i := range mask {
				mask[i] = T(r.NormFloat64())
			}
			ax, ay := newGridAxis[T](g.W, g.Padding, ac), newGridAxis[T](g.H, g.Padding, ac)
			for _, m := range [][]T{nil, mask} {
				for _, ab := range [][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {2, 0}} {
					got := make([]gridTap[T], n)
					gridTapsZeros(g, ab[0], ab[1], grid, m, got)
					for j := range got {
						pt := newGridPoint(g, &ax, &ay, grid[2*j], grid[2*j+1])
						var want gridTap[T]
						var mj T
						if m != nil {
							mj = m[j]
						}
						pt.tap(&want, false, ab[0], ab[1], mj, m != nil)
						if !pt.ok {
							want.i = g.zeroCell()
						}
						same := got[j].i == want.i && got[j].ok == want.ok
						for k := range want.w {
							same = same && math.Float64bits(float64(got[j].w[k])) == math.Float64bits(float64(want.w[k]))
						}
						if !same {
							t.Fatalf("%T size %v align %t member %v mask %t: point %d (%v, %v): %+v, want %+v",
								*new(T), sz, ac, ab, m != nil, j, grid[2*j], grid[2*j+1], got[j], want)
						}
					}
					// GridSampleO's taps and scales.
					gotS, want, wantS := make([]T, 2*n), make([]gridTap[T], n), make([]T, 2*n)
					gridOTapsZeros(g, ab[0], ab[1], grid, m, got, gotS)
					gridOTapsPoints(g, ab[0], ab[1], grid, m, want, wantS)
					for j := range got {
						same := got[j].i == want[j].i && got[j].ok == want[j].ok
						for k := range want[j].w {
							same = same && math.Float64bits(float64(got[j].w[k])) == math.Float64bits(float64(want[j].w[k]))
						}
						for h := 0; h < 2; h++ {
							same = same && math.Float64bits(float64(gotS[2*j+h])) == math.Float64bits(float64(wantS[2*j+h]))
						}
						if !same {
							t.Fatalf("%T size %v align %t O member %v mask %t: point %d (%v, %v): %+v %v, want %+v %v", *new(T), sz, ac, ab,
								m != nil, j, grid[2*j], grid[2*j+1], got[j], gotS[2*j:2*j+2], want[j], wantS[2*j:2*j+2])
						}
					}
				}
			}
		}
	}
}

// BenchmarkGridSampleKernel: the float32 bilinear kernels at issue 16's
// size, input [8, 64, 64, 64], grid [8, 64, 64, 2] uniform in
// [−1.1, 1.1], zeros padding: S (GridSample), T (its input gradient) and
// O (its grid gradient), results preallocated, and the taps alone; with
// the process's CPU time per call (cpu-ns/op, where measured): on a
// shared machine the wall time varies with the load, the CPU time less.
func BenchmarkGridSampleKernel(b *testing.B) {
	g := &GridSampleGeom{N: 8, C: 64, H: 64, W: 64, HO: 64, WO: 64}
	r := rand.New(rand.NewPCG(1, 2))
	x := randNormal[float32](r, g.N*g.C*g.H*g.W)
	gr := randNormal[float32](r, g.N*g.C*g.HO*g.WO)
	grid := randGrid[float32](r, g.N*g.HO*g.WO*2, 1.1)
	out := make([]float32, len(gr))
	dx := make([]float32, len(x))
	dg := make([]float32, len(grid))
	kernels := []benchKernel{
		{"S", func() { GridSampleS(g, 0, 0, x, grid, nil, out) }},
		{"T", func() { clear(dx); GridSampleT(g, 0, 0, gr, grid, nil, dx) }},
		{"O", func() { clear(dg); GridSampleO(g, 0, 0, x, grid, gr, nil, dg) }},
		{"taps", func() { tapScratch[float32]().Put(gridTaps(g, 0, 0, grid, nil)) }},
	}
	benchKernels(b, kernels)
}
