package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/internal/par"
)

// maxPoolScan is torch's max_pool2d argmax by its sequential scan, the
// reference of the tests: a later value replaces the maximum if larger or
// NaN.
func maxPoolScan[T Float](g *Pool2dGeom, x []T) []int {
	hw, ho, wo, w := g.H*g.W, g.Rows.Out(), g.Cols.Out(), g.W
	idx := make([]int, g.Planes*ho*wo)
	for p := 0; p < g.Planes; p++ {
		for oh := 0; oh < ho; oh++ {
			for ow := 0; ow < wo; ow++ {
				best := -1
				for r := g.Rows.First[oh]; r < g.Rows.End[oh]; r += g.Rows.Step {
					for c := g.Cols.First[ow]; c < g.Cols.End[ow]; c += g.Cols.Step {
						v := x[p*hw+r*w+c]
						if best < 0 || v > x[p*hw+best] || v != v {
							best = r*w + c
						}
					}
				}
				idx[(p*ho+oh)*wo+ow] = best
			}
		}
	}
	return idx
}

// maxPoolCase is a max_pool2d geometry of the tests.
type maxPoolCase struct {
	planes, h, w, kh, kw, sh, sw, ph, pw, dh, dw int
	ceil                                         bool
}

func (c maxPoolCase) geom() *Pool2dGeom {
	ho := PoolOutSize(c.h, c.kh, c.sh, c.ph, c.dh, c.ceil)
	wo := PoolOutSize(c.w, c.kw, c.sw, c.pw, c.dw, c.ceil)
	return &Pool2dGeom{Planes: c.planes, H: c.h, W: c.w, Rows: NewPoolAxis(c.h, ho, c.kh, c.sh, c.ph, c.dh),
		Cols: NewPoolAxis(c.w, wo, c.kw, c.sw, c.pw, c.dw)}
}

var maxPoolCases = []maxPoolCase{
	{3, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, false},
	{2, 13, 37, 3, 3, 2, 2, 1, 1, 1, 1, true},
	{2, 9, 23, 3, 3, 1, 1, 1, 1, 1, 1, false},
	{2, 9, 17, 2, 2, 2, 2, 0, 0, 1, 1, false},
	{2, 10, 31, 2, 2, 3, 3, 1, 1, 1, 1, true},
	{2, 7, 40, 5, 5, 3, 3, 2, 2, 1, 1, true},
	{2, 7, 41, 2, 3, 5, 4, 1, 1, 1, 1, false},
	{2, 8, 29, 2, 2, 1, 2, 0, 1, 2, 3, true},
	{2, 6, 19, 3, 3, 2, 2, 1, 1, 2, 2, false},
	{1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, false},
	{3, 2, 3, 2, 2, 2, 2, 1, 1, 1, 1, true},
	{2, 3, 2, 3, 3, 1, 1, 1, 1, 1, 1, false},
	{2, 4, 4, 2, 2, 2, 2, 1, 1, 3, 3, false},
	{2, 5, 33, 1, 7, 1, 7, 0, 3, 1, 1, true},
	{1, 5, 64, 3, 9, 2, 16, 1, 4, 1, 2, false},
	{1, 5, 64, 2, 2, 2, 17, 0, 1, 1, 1, false},
	{2, 9, 9, 9, 9, 1, 1, 4, 4, 1, 1, false},
	{3, 28, 28, 2, 2, 2, 2, 0, 0, 1, 1, false}, // MNIST's 2×2 pairs
	{2, 6, 8, 2, 2, 2, 2, 0, 0, 1, 1, true},
	{2, 7, 9, 2, 2, 2, 2, 0, 0, 1, 1, true}, // ceil mode: the last windows clipped, no pairs
}

// maxPoolData fills planes of x with values chosen to tie often: small
// integers, −0 and +0, −Inf and (if nan) NaN.
func maxPoolData(r *rand.Rand, x []float32, nan bool) {
	for i := range x {
		switch r.IntN(12) {
		case 0:
			x[i] = float32(math.Copysign(0, -1))
		case 1:
			x[i] = 0
		case 2:
			x[i] = float32(math.Inf(-1))
		case 3:
			if nan {
				x[i] = float32(math.NaN())
			} else {
				x[i] = float32(math.Inf(1))
			}
		case 4, 5, 6:
			x[i] = float32(r.IntN(3) - 1)
		default:
			x[i] = float32(r.NormFloat64())
		}
	}
}

// TestMaxPoolArgmax: MaxPoolArgmax (the fast path of regular column axes,
// with its AVX2 loops where the CPU has them and without, the 64-bit keys
// of NaN planes and of irregular axes, the float64 scan) equals torch's
// scan for geometries with padding, ceil mode, dilation, strides above
// the kernel, odd and tiny sizes, on planes of ties, ±0, −Inf, +Inf,
// NaN, all −Inf, and plain random values.
func TestMaxPoolArgmax(t *testing.T) {
	withAVX2(t, &maxPoolAVX2, testMaxPoolArgmax)
}

func testMaxPoolArgmax(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	geoms := map[string]*Pool2dGeom{}
	for _, c := range maxPoolCases {
		geoms[fmt.Sprint(c)] = c.geom()
	}
	for _, io := range [][4]int{{7, 5, 3, 4}, {12, 12, 6, 6}, {9, 16, 4, 8}, {5, 5, 5, 5}, {3, 8, 1, 1}, {9, 10, 4, 4}} {
		geoms[fmt.Sprint("adaptive", io)] = &Pool2dGeom{Planes: 2, H: io[0], W: io[1], Rows: NewAdaptiveAxis(io[0], io[2]), Cols: NewAdaptiveAxis(io[1], io[3])}
	}
	for name, g := range geoms {
		for _, kind := range []string{"ties", "nan", "random", "-inf", "nan-plane", "nan-next"} {
			x := make([]float32, g.Planes*g.H*g.W)
			switch kind {
			case "ties", "nan":
				maxPoolData(r, x, kind == "nan")
			case "random":
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
			case "-inf":
				for i := range x {
					x[i] = float32(math.Inf(-1))
				}
			case "nan-plane":
				maxPoolData(r, x, false)
				x[r.IntN(g.H*g.W)] = float32(math.NaN()) // in the first plane only
			case "nan-next":
				maxPoolData(r, x, false)
				if g.Planes > 1 {
					x[g.H*g.W] = float32(math.NaN()) // just past the first plane
				}
			}
			want := maxPoolScan(g, x)
			got := make([]int, len(want))
			MaxPoolArgmax(g, x, got)
			// float64: the same values, and for random ones a difference
			// that float32 would not hold.
			x64 := make([]float64, len(x))
			for i, v := range x {
				x64[i] = float64(v)
				if kind == "random" {
					x64[i] += 1e-12 * r.NormFloat64()
				}
			}
			want64 := maxPoolScan(g, x64)
			got64 := make([]int, len(want))
			MaxPoolArgmax(g, x64, got64)
			for i := range want {
				if got[i] != want[i] || got64[i] != want64[i] {
					t.Fatalf("%s %s: output %d: float32 %d, want %d; float64 %d, want %d", name, kind, i, got[i], want[i], got64[i], want64[i])
				}
			}
		}
	}
}

// TestRegularAxis: the fast path takes max_pool2d's column axes and
// adaptive ones that are regular, not the others.
func TestRegularAxis(t *testing.T) {
	for _, c := range maxPoolCases {
		g := c.geom()
		tp, ok := regularAxis(&g.Cols, g.W)
		if want := c.sw <= maxPoolMaxStride && g.Cols.Out() >= 3; want && !ok {
			t.Errorf("%v: regular %v, want %v", c, ok, want)
		} else if ok && want && (tp.S != c.sw || tp.Dil != c.dw || tp.Q0 != -c.pw || tp.K > c.kw) {
			t.Errorf("%v: taps %+v", c, tp)
		}
	}
	for _, c := range []struct {
		in, out int
		regular bool
	}{{12, 6, true}, {16, 8, true}, {5, 5, true}, {8, 1, true}, {7, 3, true}, {5, 4, true}, {7, 4, true}, {10, 4, false}} {
		a := NewAdaptiveAxis(c.in, c.out)
		if _, ok := regularAxis(&a, c.in); ok != c.regular {
			t.Errorf("adaptive %d→%d: regular %v, want %v", c.in, c.out, ok, c.regular)
		}
	}
}

// BenchmarkMaxPoolKernel: MaxPoolArgmax (float32, float64) and
// PlaneGather at nn's BenchmarkMaxPool2d size, the ResNet stem's 3×3,
// stride 2, padding 1 pooling of [8, 64, 112, 112]; keys64 and scan64 are
// the float32 and float64 paths the fast path replaced (still used for
// irregular axes and NaN planes). Each also reports the process's CPU
// time per call (cpu-ns/op, where measured): on a shared machine the wall
// times include the time other processes hold the cores.
func BenchmarkMaxPoolKernel(b *testing.B) {
	g := maxPoolCase{8 * 64, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, false}.geom()
	r := rand.New(rand.NewPCG(1, 2))
	x := randNormal[float32](r, g.Planes*g.H*g.W)
	x64 := make([]float64, len(x))
	for i, v := range x {
		x64[i] = float64(v)
	}
	hw, l := g.H*g.W, g.Rows.Out()*g.Cols.Out()
	idx := make([]int, g.Planes*l)
	out := make([]float32, len(idx))
	kernels := []benchKernel{
		{"float32", func() { MaxPoolArgmax(g, x, idx) }},
		{"keys64", func() { maxPoolArgmax32(g, x, idx) }},
		{"float64", func() { MaxPoolArgmax(g, x64, idx) }},
		{"scan64", func() {
			par.For(g.Planes, func(lo, hi int) {
				for p := lo; p < hi; p++ {
					maxPoolPlaneScan(g, x64[p*hw:(p+1)*hw], idx[p*l:(p+1)*l])
				}
			})
		}},
		{"gather", func() { PlaneGather(x, idx, out, g.Planes, hw, l) }},
		// As nn runs them: the argmax, then the gather.
		{"argmax+gather", func() { MaxPoolArgmax(g, x, idx); PlaneGather(x, idx, out, g.Planes, hw, l) }},
	}
	benchKernels(b, kernels)
}
