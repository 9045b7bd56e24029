package nn_test

import (
	"math"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestDropout: about 1 − p of the elements kept and scaled by 1/(1 − p);
// the gradient is the same mask, its derivative zero; the same seed gives
// the same masks run after run in a new graph, and each run a new mask;
// eval mode and p = 0 return the input; p outside [0, 1] is an error.
func TestDropout(t *testing.T) {
	const n, p = 4000, 0.3
	build := func() (*gorgonia.ExprGraph, *gorgonia.Node, *gorgonia.Node, *gorgonia.Node, *gorgonia.Node) {
		g := gorgonia.NewGraph()
		d := make([]float64, n)
		for i := range d {
			d[i] = 1 + float64(i%5)
		}
		x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(n), gorgonia.WithName("x"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(d))))
		y, err := nn.Dropout(x, p, true, 42)
		if err != nil {
			t.Fatal(err)
		}
		gx, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y)))), x)
		if err != nil {
			t.Fatal(err)
		}
		hx, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gx[0])), x)
		if err != nil {
			t.Fatal(err)
		}
		return g, x, y, gx[0], hx[0]
	}
	var first []float64
	for trial := 0; trial < 2; trial++ {
		g, x, y, gx, hx := build()
		var prev []float64
		for run := 0; run < 2; run++ {
			got, err := graphtest.Eval(g, x, y, gx, hx)
			if err != nil {
				t.Fatal(err)
			}
			kept := 0
			for i, v := range got[1] {
				xv := got[0][i]
				switch {
				case v == 0:
					if got[2][i] != 0 || got[3][i] != 0 {
						t.Fatalf("dropped element %d has gradient %v, %v", i, got[2][i], got[3][i])
					}
				case math.Abs(v-xv/(1-p)) < 1e-12:
					kept++
					// d/dx Σ (x·m)² = 2x·m², its derivative 2m².
					m := 1 / (1 - p)
					if math.Abs(got[2][i]-2*xv*m*m) > 1e-9 || math.Abs(got[3][i]-2*m*m) > 1e-9 {
						t.Fatalf("element %d: gradients %v, %v", i, got[2][i], got[3][i])
					}
				default:
					t.Fatalf("element %d = %v for x = %v", i, v, xv)
				}
			}
			if frac := float64(kept) / n; math.Abs(frac-(1-p)) > 0.03 {
				t.Fatalf("kept %.3f, want about %.2f", frac, 1-p)
			}
			if prev != nil && equal(prev, got[1]) {
				t.Fatal("two runs gave the same mask")
			}
			prev = got[1]
			if run == 0 {
				if first == nil {
					first = got[1]
				} else if !equal(first, got[1]) {
					t.Fatal("the same seed gave another first mask in a new graph")
				}
			}
		}
	}
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"))
	for _, c := range []struct {
		p        float64
		training bool
		same     bool
		err      bool
	}{{0.5, false, true, false}, {0, true, true, false}, {-0.1, true, false, true}, {1.5, true, false, true}, {math.NaN(), true, false, true}} {
		y, err := nn.Dropout(x, c.p, c.training, 1)
		if (err != nil) != c.err || (err == nil && (y == x) != c.same) {
			t.Errorf("p %v training %v: %v, %v", c.p, c.training, y, err)
		}
	}
}

func equal(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}
