package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// boxDerivCase is random data for the box members: boxes well inside the
// image (away from the clamps), a few tiny ones (the unaligned size clamp),
// random coordinates (sample points almost surely off the integers).
func boxDerivCase(g *RoIAlignGeom, k int, seed uint64) (x, boxes []float64) {
	r := rand.New(rand.NewPCG(seed, 2))
	x = make([]float64, g.N*g.C*g.H*g.W)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	s := 1 / g.Scale
	for i := 0; i < k; i++ {
		y1 := 1.1 + r.Float64()*float64(g.H-4)
		x1 := 1.1 + r.Float64()*float64(g.W-4)
		h := 0.3 + r.Float64()*(float64(g.H)-2.2-y1)
		w := 0.3 + r.Float64()*(float64(g.W)-2.2-x1)
		if i%3 == 2 {
			h, w = 0.4*r.Float64(), 0.6
		}
		boxes = append(boxes, float64(r.IntN(g.N)), x1*s, y1*s, (x1+w)*s, (y1+h)*s)
	}
	return x, boxes
}

// boxFamilyFuncs evaluate a family's member F_ab (its forward for (0, 0))
// and the transpose of a member of order >= 1.
type boxFamilyFuncs struct {
	member    func(a, b int, xMajor bool, x, boxes, out []float64) error
	transpose func(a, b int, xMajor bool, grad, boxes, dst []float64) error
	perJ      int // outputs per box and coefficient channel: C'·PH·PW
}

func (f *boxFamilyFuncs) eval(t *testing.T, a, b int, xMajor bool, x, boxes []float64) []float64 {
	t.Helper()
	out := make([]float64, len(boxes)/5*boxDerivChannels(a, b)*f.perJ)
	if err := f.member(a, b, xMajor, x, boxes, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func roiAlignFamilyFuncs(g *RoIAlignGeom) *boxFamilyFuncs {
	return &boxFamilyFuncs{
		member: func(a, b int, xMajor bool, x, boxes, out []float64) error {
			if a+b == 0 {
				return RoIAlignForward(g, x, boxes, out)
			}
			return RoIAlignBoxDeriv(g, a, b, xMajor, x, boxes, out)
		},
		transpose: func(a, b int, xMajor bool, grad, boxes, dst []float64) error {
			return RoIAlignBoxDerivTranspose(g, a, b, xMajor, grad, boxes, dst)
		},
		perJ: g.C * g.PH * g.PW,
	}
}

func psRoIAlignFamilyFuncs(g *PoolGeom) *boxFamilyFuncs {
	return &boxFamilyFuncs{
		member: func(a, b int, xMajor bool, x, boxes, out []float64) error {
			if a+b == 0 {
				return PSRoIAlignForward(g, x, boxes, out)
			}
			return PSRoIAlignBoxDeriv(g, a, b, xMajor, x, boxes, out)
		},
		transpose: func(a, b int, xMajor bool, grad, boxes, dst []float64) error {
			return PSRoIAlignBoxDerivTranspose(g, a, b, xMajor, grad, boxes, dst)
		},
		perJ: g.C / (g.PH * g.PW) * g.PH * g.PW,
	}
}

// checkBoxFamily: each member's derivative w.r.t. a box coordinate is the
// member one order up (channel of that coordinate), checked by central
// differences, and each member's transpose is its adjoint.
func checkBoxFamily(t *testing.T, f *boxFamilyFuncs, x, boxes []float64) {
	const eps = 1e-6
	for _, m := range []struct {
		a, b   int
		xMajor bool
	}{{0, 0, false}, {1, 0, false}, {0, 1, false}} {
		n := boxDerivChannels(m.a, m.b) * f.perJ
		for col := 1; col < 5; col++ {
			isY := col%2 == 0
			if isY && m.a == 1 || !isY && m.b == 1 {
				continue // order 2 in one coordinate: zero
			}
			// The member one order up, in the layout whose outer channel
			// index is the new coordinate.
			up := f.eval(t, m.a+btoi(isY), m.b+btoi(!isY), !isY, x, boxes)
			for k := 0; k < len(boxes)/5; k++ {
				bp := append([]float64(nil), boxes...)
				bp[5*k+col] += eps
				plus := f.eval(t, m.a, m.b, m.xMajor, x, bp)
				bp[5*k+col] -= 2 * eps
				minus := f.eval(t, m.a, m.b, m.xMajor, x, bp)
				which := (col - 1) / 2 // 0: x1/y1, 1: x2/y2
				for i := 0; i < n; i++ {
					num := (plus[k*n+i] - minus[k*n+i]) / (2 * eps)
					ana := up[(k*2+which)*n+i]
					if math.Abs(num-ana) > 1e-6+1e-6*math.Abs(ana) {
						t.Fatalf("F_%d%d box %d col %d elem %d: analytic %g, numeric %g", m.a, m.b, k, col, i, ana, num)
					}
				}
			}
		}
	}
	// Adjoints.
	r := rand.New(rand.NewPCG(3, 4))
	for _, m := range [][3]int{{1, 0, 0}, {0, 1, 0}, {1, 1, 0}, {1, 1, 1}} {
		y := f.eval(t, m[0], m[1], m[2] == 1, x, boxes)
		gr := make([]float64, len(y))
		for i := range gr {
			gr[i] = r.NormFloat64()
		}
		dx := make([]float64, len(x))
		if err := f.transpose(m[0], m[1], m[2] == 1, gr, boxes, dx); err != nil {
			t.Fatal(err)
		}
		l, rr := dot(y, gr), dot(x, dx)
		if math.Abs(l-rr) > 1e-10*(1+math.Abs(l)) {
			t.Fatalf("member %v: <F x, g> = %g, <x, Fᵀ g> = %g", m, l, rr)
		}
	}
}

// TestRoIAlignBoxDerivFiniteDifferences checks RoIAlign's family
// (checkBoxFamily).
func TestRoIAlignBoxDerivFiniteDifferences(t *testing.T) {
	geoms := map[string]RoIAlignGeom{
		"unaligned/adaptive":  {N: 2, C: 3, H: 9, W: 11, PH: 2, PW: 3, Scale: 1},
		"aligned/sampling=2":  {N: 2, C: 3, H: 9, W: 11, PH: 3, PW: 2, Scale: 0.5, SamplingRatio: 2, Aligned: true},
		"unaligned/sampling3": {N: 1, C: 2, H: 8, W: 7, PH: 2, PW: 2, Scale: 0.25, SamplingRatio: 3},
	}
	for name, g := range geoms {
		t.Run(name, func(t *testing.T) {
			x, boxes := boxDerivCase(&g, 6, 7)
			checkBoxFamily(t, roiAlignFamilyFuncs(&g), x, boxes)
		})
	}
}

// TestPSRoIAlignBoxDerivFiniteDifferences checks PSRoIAlign's family
// (checkBoxFamily): its sampling and position-sensitive channels.
func TestPSRoIAlignBoxDerivFiniteDifferences(t *testing.T) {
	geoms := map[string]PoolGeom{
		"adaptive":         {N: 2, C: 12, H: 9, W: 11, PH: 2, PW: 3, Scale: 1},
		"sampling=2":       {N: 2, C: 6, H: 9, W: 11, PH: 3, PW: 2, Scale: 0.5, SamplingRatio: 2},
		"sampling3/c'=1":   {N: 1, C: 4, H: 8, W: 7, PH: 2, PW: 2, Scale: 0.25, SamplingRatio: 3},
		"sampling1/single": {N: 1, C: 3, H: 8, W: 7, PH: 1, PW: 1, Scale: 1, SamplingRatio: 1},
	}
	for name, g := range geoms {
		t.Run(name, func(t *testing.T) {
			// boxDerivCase needs only the sizes and scale.
			x, boxes := boxDerivCase(&RoIAlignGeom{N: g.N, C: g.C, H: g.H, W: g.W, Scale: g.Scale}, 6, 9)
			checkBoxFamily(t, psRoIAlignFamilyFuncs(&g), x, boxes)
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
