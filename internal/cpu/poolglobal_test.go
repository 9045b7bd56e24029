package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// oneWindowGeoms are geometries with one output per plane: adaptive
// pooling to 1×1 of planes 1×1 to 9×13, a window inside the plane (kernel
// 3 at stride 3 over 5), one in the padding's corner, plane counts around
// the groups of four.
func oneWindowGeoms() []Pool2dGeom {
	var gs []Pool2dGeom
	for _, planes := range []int{0, 1, 3, 4, 5, 9, 16, 21, 35} {
		for _, s := range [][2]int{{1, 1}, {7, 7}, {1, 13}, {9, 1}, {9, 13}} {
			gs = append(gs, Pool2dGeom{Planes: planes, H: s[0], W: s[1], Rows: NewAdaptiveAxis(s[0], 1), Cols: NewAdaptiveAxis(s[1], 1)})
		}
		gs = append(gs, Pool2dGeom{Planes: planes, H: 5, W: 6, Rows: NewPoolAxis(5, 1, 3, 3, 0, 1), Cols: NewPoolAxis(6, 1, 4, 3, 0, 1)},
			Pool2dGeom{Planes: planes, H: 2, W: 3, Rows: NewPoolAxis(2, 1, 3, 2, 1, 1), Cols: NewPoolAxis(3, 1, 2, 2, 1, 1)})
	}
	return gs
}

func testAvgPoolOne[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, g := range oneWindowGeoms() {
		for _, d := range []AvgDivisor{{}, {IncludePad: true}, {Override: 7}} {
			name := fmt.Sprintf("%d×%dx%d/%d..%d×%d..%d/%+v", g.Planes, g.H, g.W, g.Rows.First[0], g.Rows.End[0], g.Cols.First[0], g.Cols.End[0], d)
			x := randData[T](r, g.Planes*g.H*g.W)
			for i := 0; i+7 < len(x); i += 29 { // NaNs of two payloads, −0
				x[i], x[i+3], x[i+7] = nanOf[T](1), T(math.Copysign(0, -1)), nanOf[T](2)
			}
			got, want := randData[T](r, g.Planes), make([]T, g.Planes)
			AvgPool(&g, d, x, got)
			avgPoolRef(&g, d, x, want)
			if raceBuild {
				sameBits(t, "AvgPool "+name, got, want)
			} else {
				sameBitsStrict(t, "AvgPool "+name, got, want) // NaN payloads too
			}
			sameAsAvgPoolTRef[T](t, r, &g, d, name)
		}
	}
}

// TestAvgPoolOne: AvgPool and AvgPoolT with one output per plane equal
// the general loops bitwise (−0 included, and NaN payloads but in the
// race detector's build, whose Go loops may order an addition's operands
// otherwise), with and without AVX2 (the reference's division and sums,
// and the transposing kernels), and across GOMAXPROCS.
func TestAvgPoolOne(t *testing.T) {
	withAVX2(t, &avgAVX2, func(t *testing.T) {
		s2 := avgOneAVX2
		defer func() { avgOneAVX2 = s2 }()
		modes := []bool{false} // AVX2
		if s2 {
			modes = append(modes, true)
		}
		for _, k := range modes {
			avgOneAVX2 = k
			name := map[bool]string{false: "go", true: "avgone2"}[k]
			t.Run("kernel="+name, func(t *testing.T) {
				t.Run("float32", testAvgPoolOne[float32])
				t.Run("float64", testAvgPoolOne[float64])
			})
		}
	})
	g := Pool2dGeom{Planes: 103, H: 7, W: 7, Rows: NewAdaptiveAxis(7, 1), Cols: NewAdaptiveAxis(7, 1)}
	r := rand.New(rand.NewPCG(25, 26))
	x, gr := randData[float32](r, 103*49), randData[float32](r, 103)
	pairAcrossProcs(t, []int{1, 2, 4}, 103, 103*49,
		func(y []float32) error { AvgPool(&g, AvgDivisor{}, x, y); return nil },
		func(dx []float32) error { AvgPoolTSet(&g, AvgDivisor{}, gr, dx); return nil })
}

// BenchmarkAvgPoolOne: AdaptiveAvgPool2d(1) of [8, 2048, 7, 7] float32
// (ResNet-50's head), forward and transpose, against the general loops.
func BenchmarkAvgPoolOne(b *testing.B) {
	const planes = 8 * 2048
	g := Pool2dGeom{Planes: planes, H: 7, W: 7, Rows: NewAdaptiveAxis(7, 1), Cols: NewAdaptiveAxis(7, 1)}
	r := rand.New(rand.NewPCG(5, 6))
	x, y, dx := randData[float32](r, planes*49), make([]float32, planes), make([]float32, planes*49)
	benchAvgKernels(b, &g, x, y, dx)
	b.Run("float64", func(b *testing.B) {
		x, y, dx := randData[float64](r, planes*49), make([]float64, planes), make([]float64, planes*49)
		benchAvgKernels(b, &g, x, y, dx)
	})
}

// nanOf is a quiet NaN of T with payload k.
func nanOf[T Float](k uint64) T {
	var z T
	if any(z) == any(float32(0)) {
		return T(math.Float32frombits(0x7fc00000 | uint32(k)))
	}
	return T(math.Float64frombits(0x7ff8000000000000 | k))
}
