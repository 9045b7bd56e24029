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

// member evaluates F_ab (RoIAlignForward for (0, 0)).
func member(t *testing.T, g *RoIAlignGeom, a, b int, xMajor bool, x, boxes []float64) []float64 {
	t.Helper()
	k := len(boxes) / 5
	out := make([]float64, k*boxDerivChannels(a, b)*g.C*g.PH*g.PW)
	var err error
	if a+b == 0 {
		err = RoIAlignForward(g, x, boxes, out)
	} else {
		err = RoIAlignBoxDeriv(g, a, b, xMajor, x, boxes, out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRoIAlignBoxDerivFiniteDifferences: each member's derivative w.r.t. a
// box coordinate is the member one order up (channel of that coordinate),
// checked by central differences, and each member's transpose is its
// adjoint.
func TestRoIAlignBoxDerivFiniteDifferences(t *testing.T) {
	geoms := map[string]RoIAlignGeom{
		"unaligned/adaptive":  {N: 2, C: 3, H: 9, W: 11, PH: 2, PW: 3, Scale: 1},
		"aligned/sampling=2":  {N: 2, C: 3, H: 9, W: 11, PH: 3, PW: 2, Scale: 0.5, SamplingRatio: 2, Aligned: true},
		"unaligned/sampling3": {N: 1, C: 2, H: 8, W: 7, PH: 2, PW: 2, Scale: 0.25, SamplingRatio: 3},
	}
	const eps = 1e-6
	for name, g := range geoms {
		t.Run(name, func(t *testing.T) {
			x, boxes := boxDerivCase(&g, 6, 7)
			bins := g.PH * g.PW
			for _, m := range []struct {
				a, b   int
				xMajor bool
			}{{0, 0, false}, {1, 0, false}, {0, 1, false}} {
				J := boxDerivChannels(m.a, m.b)
				for col := 1; col < 5; col++ {
					isY := col%2 == 0
					if isY && m.a == 1 || !isY && m.b == 1 {
						continue // order 2 in one coordinate: zero
					}
					// The member one order up, in the layout whose outer
					// channel index is the new coordinate.
					up := member(t, &g, m.a+btoi(isY), m.b+btoi(!isY), !isY, x, boxes)
					for k := 0; k < len(boxes)/5; k++ {
						bp := append([]float64(nil), boxes...)
						bp[5*k+col] += eps
						plus := member(t, &g, m.a, m.b, m.xMajor, x, bp)
						bp[5*k+col] -= 2 * eps
						minus := member(t, &g, m.a, m.b, m.xMajor, x, bp)
						which := (col - 1) / 2 // 0: x1/y1, 1: x2/y2
						n := J * g.C * bins
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
				y := member(t, &g, m[0], m[1], m[2] == 1, x, boxes)
				gr := make([]float64, len(y))
				for i := range gr {
					gr[i] = r.NormFloat64()
				}
				dx := make([]float64, len(x))
				if err := RoIAlignBoxDerivTranspose(&g, m[0], m[1], m[2] == 1, gr, boxes, dx); err != nil {
					t.Fatal(err)
				}
				var l, rr float64
				for i := range y {
					l += y[i] * gr[i]
				}
				for i := range x {
					rr += x[i] * dx[i]
				}
				if math.Abs(l-rr) > 1e-10*(1+math.Abs(l)) {
					t.Fatalf("member %v: <F x, g> = %g, <x, Fᵀ g> = %g", m, l, rr)
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
