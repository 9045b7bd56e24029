package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/gops-dev/gops/internal/gemm"
)

// directGeoms are the narrow-group geometries of the direct kernels'
// tests: odd sizes, width 1, a kernel larger than the input, padding
// larger than the kernel, strides, dilation, channel multipliers, 2, 4 and 8
// input channels a group, one sample, no samples, and sizes large enough
// for several workers, 8-row groups and masked column blocks.
func directGeoms(t *testing.T) []ConvGeom {
	type c struct {
		name                              string
		n, ch, h, w, cout, groups, kh, kw int
		sh, sw, ph, pw, dh, dw            int
	}
	cases := []c{
		{"depthwise-3x3-odd", 2, 5, 7, 9, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1},
		{"width-1", 2, 3, 6, 1, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1},
		{"kernel-larger-than-input", 2, 3, 2, 3, 3, 3, 5, 5, 1, 1, 2, 2, 1, 1},
		{"padding-larger-than-kernel", 1, 2, 3, 3, 2, 2, 2, 2, 1, 1, 3, 3, 1, 1},
		{"stride-2", 2, 4, 9, 11, 4, 4, 3, 3, 2, 2, 1, 1, 1, 1},
		{"stride-3x2", 2, 4, 13, 20, 4, 4, 3, 3, 3, 2, 1, 0, 1, 1},
		{"dilation-2", 2, 3, 10, 9, 3, 3, 3, 3, 1, 1, 2, 2, 2, 2},
		{"3x3-padding-3", 2, 3, 5, 6, 3, 3, 3, 3, 1, 1, 3, 3, 1, 1},
		{"3x3-column-dilation-2", 2, 3, 9, 20, 3, 3, 3, 3, 1, 1, 0, 2, 1, 2},
		{"dilation-stride", 2, 3, 17, 19, 3, 3, 3, 3, 2, 2, 2, 1, 2, 3},
		{"multiplier-2", 2, 4, 8, 7, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1},
		{"two-a-group", 2, 6, 9, 12, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1},
		{"four-a-group-x2", 2, 8, 11, 10, 4, 2, 3, 3, 1, 2, 1, 1, 1, 1},
		{"eight-a-group", 2, 16, 9, 19, 16, 2, 3, 3, 1, 1, 1, 1, 1, 1},
		{"one-to-eight", 2, 2, 10, 17, 16, 2, 3, 3, 1, 1, 1, 1, 1, 1},
		{"pointwise", 2, 6, 5, 7, 6, 6, 1, 1, 1, 1, 0, 0, 1, 1},
		{"rect-1x5", 2, 4, 9, 21, 4, 4, 1, 5, 1, 1, 0, 2, 1, 1},
		{"one-sample", 1, 4, 12, 18, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1},
		{"no-samples", 0, 4, 6, 6, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1},
		{"dense-one-channel", 2, 1, 9, 9, 3, 1, 3, 3, 1, 1, 1, 1, 1, 1},
		{"large", 3, 16, 30, 37, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1},
		{"large-5x5-mult-2", 2, 16, 23, 33, 32, 16, 5, 5, 1, 1, 2, 2, 1, 1},
		{"large-stride-2", 3, 16, 31, 35, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1},
	}
	var gs []ConvGeom
	for _, c := range cases {
		g := ConvGeom{N: c.n, C: c.ch, H: c.h, W: c.w, Cout: c.cout, Groups: c.groups, KH: c.kh, KW: c.kw,
			SH: c.sh, SW: c.sw, PH: c.ph, PW: c.pw, DH: c.dh, DW: c.dw}
		var err error
		if g.HO, err = OutSize(g.H, g.KH, g.SH, g.PH, g.DH); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if g.WO, err = OutSize(g.W, g.KW, g.SW, g.PW, g.DW); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !directConv(&g) {
			t.Fatalf("%s: not a direct geometry", c.name)
		}
		gs = append(gs, g)
	}
	return gs
}

// gemmProduct is gemm.Gemm as a Product.
func gemmProduct[T gemm.Float](transA, transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) error {
	return gemm.Gemm(transA, transB, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
}

// runMembers runs the three members on g with conv (Conv or convGEMM)
// into y, dx and dw.
func runMembers[T gemm.Float](t *testing.T, conv func(*ConvGeom, ConvMode, Product[T], []T, []T, []T, []T) error, g *ConvGeom,
	x, w, bias, gr, y, dx, dw []T) {
	t.Helper()
	for _, m := range []struct {
		mode      ConvMode
		out, a, b []T
	}{{ConvForward, y, x, w}, {ConvInput, dx, gr, w}, {ConvWeight, dw, x, gr}} {
		var bs []T
		if m.mode == ConvForward {
			bs = bias
		}
		if err := conv(g, m.mode, gemmProduct[T], m.out, m.a, m.b, bs); err != nil {
			t.Fatal(err)
		}
	}
}

// directRun runs the three members on g with the direct kernels (Conv),
// into results first set to 42 so that every element must be written.
func directRun[T gemm.Float](t *testing.T, g *ConvGeom, x, w, bias, gr []T) (y, dx, dw []T) {
	t.Helper()
	y, dx, dw = fill[T](g.N*g.Cout*g.L(), 42), fill[T](g.N*g.C*g.H*g.W, 42), fill[T](len(w), 42)
	runMembers(t, Conv[T], g, x, w, bias, gr, y, dx, dw)
	return y, dx, dw
}

func fill[T Float](n int, v T) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// TestConvDirect checks the direct kernels of narrow groups against
// im2col and the matrix product (convGEMM), float32 and float64, with the
// assembly loops and with the Go loops: the sums run in another order, so
// each result must agree within tol·max(1, max|GEMM's|) over its tensor,
// tol 2e-6 (float32) and 1e-13 (float64); and results bitwise the same for
// GOMAXPROCS 1, 2 and 4.
func TestConvDirect(t *testing.T) {
	loops := []bool{false}
	if directAVX512 {
		loops = append(loops, true)
	}
	defer func(v bool) { directAVX512 = v }(directAVX512)
	for _, g := range directGeoms(t) {
		for _, asm := range loops {
			name := fmt.Sprintf("%+v/asm=%v", g, asm)
			t.Run(name, func(t *testing.T) {
				directAVX512 = asm
				checkDirect[float32](t, &g, 2e-6)
				checkDirect[float64](t, &g, 1e-13)
			})
		}
	}
}

func checkDirect[T gemm.Float](t *testing.T, g *ConvGeom, tol float64) {
	r := rand.New(rand.NewPCG(uint64(g.H), uint64(g.W)))
	x := randNormal[T](r, g.N*g.C*g.H*g.W)
	w := randNormal[T](r, g.Cout*g.C/g.Groups*g.K())
	bias := randNormal[T](r, g.Cout)
	gr := randNormal[T](r, g.N*g.Cout*g.L())
	var y, dx, dw []T
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for i, p := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(p)
		yp, dxp, dwp := directRun(t, g, x, w, bias, gr)
		if i == 0 {
			y, dx, dw = yp, dxp, dwp
			continue
		}
		for _, c := range [][2][]T{{y, yp}, {dx, dxp}, {dw, dwp}} {
			if !slices.Equal(bitsOf(c[0]), bitsOf(c[1])) {
				t.Fatalf("GOMAXPROCS=%d: results differ from GOMAXPROCS=1", p)
			}
		}
	}
	wy, wdx, wdw := make([]T, len(y)), make([]T, len(dx)), make([]T, len(dw))
	runMembers(t, convGEMM[T], g, x, w, bias, gr, wy, wdx, wdw)
	expectNear(t, "forward", y, wy, tol)
	expectNear(t, "input gradient", dx, wdx, tol)
	expectNear(t, "weight gradient", dw, wdw, tol)
}

// expectNear fails unless |got − want| ≤ tol·max(1, max|want|)
// elementwise.
func expectNear[T Float](t *testing.T, what string, got, want []T, tol float64) {
	t.Helper()
	scale := 1.0
	for _, v := range want {
		scale = max(scale, math.Abs(float64(v)))
	}
	for i, v := range got {
		if d := math.Abs(float64(v) - float64(want[i])); !(d <= tol*scale) {
			t.Fatalf("%s[%d] = %v, want %v (scale %v)", what, i, v, want[i], scale)
		}
	}
}

// BenchmarkConvDirect times the direct kernels against im2col and the
// matrix product on the depthwise workload of issue 26: [8, 128, 28, 28],
// 3×3, padding 1, Groups 128, float32.
func BenchmarkConvDirect(b *testing.B) {
	g := ConvGeom{N: 8, C: 128, H: 28, W: 28, Cout: 128, Groups: 128, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, HO: 28, WO: 28}
	r := rand.New(rand.NewPCG(1, 2))
	x, w, bias := randNormal[float32](r, 8*128*28*28), randNormal[float32](r, 128*9), randNormal[float32](r, 128)
	gr, y, dx, dw := randNormal[float32](r, 8*128*28*28), make([]float32, 8*128*28*28), make([]float32, 8*128*28*28), make([]float32, 128*9)
	var kernels []benchKernel
	for _, k := range []struct {
		name string
		conv func(*ConvGeom, ConvMode, Product[float32], []float32, []float32, []float32, []float32) error
	}{{"direct", Conv[float32]}, {"gemm", convGEMM[float32]}} {
		kernels = append(kernels,
			benchKernel{k.name + "/forward", func() { _ = k.conv(&g, ConvForward, gemmProduct[float32], y, x, w, bias) }},
			benchKernel{k.name + "/input", func() { clear(dx); _ = k.conv(&g, ConvInput, gemmProduct[float32], dx, gr, w, nil) }},
			benchKernel{k.name + "/weight", func() { _ = k.conv(&g, ConvWeight, gemmProduct[float32], dw, x, gr, nil) }})
	}
	benchKernels(b, kernels)
}

// TestChannelSum checks ChannelSum bitwise against the sum of each
// channel in the order n, then l, for channel counts around its blocks
// of eight and GOMAXPROCS 1 and 3.
func TestChannelSum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, s := range [][3]int{{0, 3, 5}, {2, 0, 5}, {2, 3, 0}, {1, 1, 1}, {3, 5, 7}, {2, 8, 33}, {4, 11, 300}, {2, 17, 9}, {8, 128, 784}} {
		n, c, l := s[0], s[1], s[2]
		x := randNormal[float32](r, n*c*l)
		want := make([]float32, c)
		for ci := range want {
			for ni := 0; ni < n; ni++ {
				for _, v := range x[(ni*c+ci)*l:][:l] {
					want[ci] += v
				}
			}
		}
		for _, p := range []int{1, 3} {
			runtime.GOMAXPROCS(p)
			got := fill[float32](c, 42)
			ChannelSum(x, got, n, c, l)
			if !slices.Equal(bitsOf(got), bitsOf(want)) {
				t.Fatalf("%v, GOMAXPROCS=%d: %v, want %v", s, p, got, want)
			}
		}
	}
}

// TestTapRowsImage3x3 checks that the 3×3 kernel reading the input plane
// in place gives, with the AVX-512 loops, bit for bit the values of
// tapRows on the padded copy (the same sums in the same order), over paddings (negative ones too,
// as the input gradient's), column dilations and widths around the
// column blocks; and its Go loops (tapRowsImageGo) within 1e-6 of the
// largest |value| (the compiler may fuse their products differently).
// The weight gradient's in-place taps (tapDotsImage3x3, tapDotsImageGo)
// must match tapDots on the padded copy within 1e-5 of the largest |dot|
// (sums of up to 2800 products, in another order).
func TestTapRowsImage3x3(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct{ h, w, pt, pl, dw int }{
		{1, 1, 1, 1, 1}, {5, 7, 1, 1, 1}, {28, 28, 1, 1, 1}, {9, 33, 0, 2, 2}, {6, 17, 3, 3, 1}, {12, 40, -1, -1, 1}, {3, 70, 2, 0, 3},
	} {
		g := ConvGeom{N: 1, C: 1, H: c.h, W: c.w, Cout: 1, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: max(c.pt, 0), PW: max(c.pl, 0), DH: 1, DW: c.dw}
		rows, wo := c.h+2*c.pt-2, c.w+2*c.pl-2*c.dw
		if rows < 1 || wo < 1 {
			t.Fatalf("%+v: no output", c)
		}
		src := randNormal[float32](r, c.h*c.w)
		taps, bias := randNormal[float32](r, 9), float32(r.NormFloat64())
		got, gotGo := fill[float32](rows*wo, 42), fill[float32](rows*wo, 42)
		tapRowsImage3x3(got, src, taps, rows, wo, c.h, c.w, c.pt, c.pl, c.dw, bias)
		tapRowsImageGo(gotGo, src, taps, rows, wo, c.h, c.w, c.pt, c.pl, c.dw, bias)
		// The padded copy, by (pt, pl) or cropped where they are negative.
		p := phased{rows: c.h + 2*c.pt, stride: 1, width: c.w + 2*c.pl}
		pad := make([]float32, p.plane())
		for y := range c.h {
			for x := range c.w {
				if py, px := y+c.pt, x+c.pl; py >= 0 && py < p.rows && px >= 0 && px < p.width {
					pad[py*p.width+px] = src[y*c.w+x]
				}
			}
		}
		offs := inputOffsets(&g, p, 1)
		want := fill[float32](rows*wo, 42)
		tapRows(want, pad, taps, offs, rows, wo, wo, p.width, bias)
		if directAVX512 && !slices.Equal(bitsOf(got), bitsOf(want)) { // both the assembly's
			t.Fatalf("%+v: in place %v, padded %v", c, got, want)
		}
		expectNear(t, fmt.Sprintf("%+v: Go loops", c), gotGo, want, 1e-6)
		// The weight gradient's taps in place, assembly and Go loops,
		// against tapDots on the padded copy.
		gr := randNormal[float32](r, rows*wo)
		dots, dotsGo, wantDots := make([]float32, 9), make([]float32, 9), make([]float32, 9)
		tapDotsImage3x3(dots, gr, src, rows, wo, c.h, c.w, c.pt, c.pl, c.dw)
		tapDotsImageGo(dotsGo, gr, src, rows, wo, c.h, c.w, c.pt, c.pl, c.dw)
		tapDots(wantDots, gr, pad, offs, rows, wo, wo, p.width)
		expectNear(t, fmt.Sprintf("%+v: weight taps", c), dots, wantDots, 1e-5)
		expectNear(t, fmt.Sprintf("%+v: weight taps, Go loops", c), dotsGo, wantDots, 1e-5)
	}
}

// TestConvDirectNonFiniteWeight: a weight tap that is ±Inf or NaN reaches
// only the input positions it multiplies a real output element into, as
// with im2col and the matrix product (and torch): the input gradient of
// the direct kernels, with the assembly loops and with the Go loops, has
// NaN and ±Inf exactly where convGEMM's has, and the other elements agree
// within 2e-6 of the largest finite |value|. The forward member and the
// weight's gradient multiply the padding's zeros by design (as im2col) and
// are not checked here.
func TestConvDirectNonFiniteWeight(t *testing.T) {
	loops := []bool{false}
	if directAVX512 {
		loops = append(loops, true)
	}
	defer func(v bool) { directAVX512 = v }(directAVX512)
	for _, c := range []struct{ cout, kh, sh, ph int }{{2, 3, 1, 1}, {2, 5, 1, 2}, {2, 3, 2, 1}, {4, 3, 1, 1}, {2, 3, 1, 3}} {
		g := ConvGeom{N: 2, C: 2, H: 5, W: 19, Cout: c.cout, Groups: 2, KH: c.kh, KW: c.kh, SH: c.sh, SW: c.sh, PH: c.ph, PW: c.ph, DH: 1, DW: 1}
		g.HO, _ = OutSize(g.H, g.KH, g.SH, g.PH, g.DH)
		g.WO, _ = OutSize(g.W, g.KW, g.SW, g.PW, g.DW)
		r := rand.New(rand.NewPCG(1, 2))
		w := randNormal[float32](r, g.Cout*g.K())
		w[0], w[g.K()+g.KW-1] = float32(math.Inf(1)), float32(math.NaN())
		gr := randNormal[float32](r, g.N*g.Cout*g.L())
		want := make([]float32, g.N*g.C*g.H*g.W)
		if err := convGEMM(&g, ConvInput, gemmProduct[float32], want, gr, w, nil); err != nil {
			t.Fatal(err)
		}
		for _, asm := range loops {
			directAVX512 = asm
			got := fill[float32](len(want), 42)
			if err := Conv(&g, ConvInput, gemmProduct[float32], got, gr, w, nil); err != nil {
				t.Fatal(err)
			}
			scale := 1.0
			for _, v := range want {
				if !math.IsInf(float64(v), 0) && !math.IsNaN(float64(v)) {
					scale = max(scale, math.Abs(float64(v)))
				}
			}
			for i, v := range got {
				a, b := float64(v), float64(want[i])
				same := math.IsNaN(a) && math.IsNaN(b) || a == b || math.Abs(a-b) <= 2e-6*scale
				if !same {
					t.Fatalf("%+v asm=%v: dx[%d] = %v, convGEMM %v", c, asm, i, v, want[i])
				}
			}
		}
	}
}

// TestAllFinite: allFinite finds one ±Inf or NaN anywhere in short and
// long (parallel, blocked) slices, at the ends and around block edges,
// and accepts finite ones, the largest magnitudes included.
func TestAllFinite(t *testing.T) {
	testAllFinite[float32](t)
	testAllFinite[float64](t)
}

func testAllFinite[T float32 | float64](t *testing.T) {
	for _, n := range []int{0, 1, 7, 9, 2*finiteGrain - 1, 5*finiteGrain + 3} {
		s := make([]T, n)
		for i := range s {
			s[i] = T(i%7) - 3
		}
		if n > 0 {
			s[n/2] = T(math.MaxFloat32)
		}
		if !allFinite(s) {
			t.Fatalf("%T n=%d: finite values reported not finite", s, n)
		}
		for _, at := range []int{0, n - 1, n / 2, finiteGrain - 1, finiteGrain, 4*finiteGrain + 1} {
			if at < 0 || at >= n {
				continue
			}
			for _, bad := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
				old := s[at]
				s[at] = T(bad)
				if allFinite(s) {
					t.Fatalf("%T n=%d: %v at %d not found", s, n, bad, at)
				}
				s[at] = old
			}
		}
	}
}

// TestFiniteRun: finiteRun, with its AVX2 blocks and without, finds a
// ±Inf or NaN (a signalling one too) at every position of slices of 0 to
// 100 elements (whole blocks and the Go loop's rest), accepts the
// largest finite magnitudes and −0, and never reads past the slice (each
// slice ends where a longer backing array holds an Inf).
func TestFiniteRun(t *testing.T) {
	defer func(v bool) { avgAVX2 = v }(avgAVX2)
	for _, asm := range []bool{true, false} {
		avgAVX2 = asm && avgAVX2
		testFiniteRun[float32](t, math.MaxFloat32, math.Float32frombits(0x7f800001))
		testFiniteRun[float64](t, math.MaxFloat64, math.Float64frombits(0x7ff0000000000001))
	}
}

func testFiniteRun[T float32 | float64](t *testing.T, big float64, snan T) {
	for n := 0; n <= 100; n++ {
		back := make([]T, n+1)
		back[n] = T(math.Inf(1)) // past the slice
		s := back[:n]
		for i := range s {
			s[i] = T(big) * T(1-2*(i%2))
		}
		if n > 0 {
			s[0] = T(math.Copysign(0, -1))
		}
		if !finiteRun(s) {
			t.Fatalf("%T n=%d (AVX2 %v): finite values reported not finite", s, n, avgAVX2)
		}
		for at := range s {
			for _, bad := range []T{T(math.Inf(1)), T(math.Inf(-1)), T(math.NaN()), snan} {
				old := s[at]
				s[at] = bad
				if finiteRun(s) {
					t.Fatalf("%T n=%d (AVX2 %v): %v at %d not found", s, n, avgAVX2, bad, at)
				}
				s[at] = old
			}
		}
	}
}
