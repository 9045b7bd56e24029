package gops

import (
	"math"
	"testing"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The fused focal loss (the CPU build's) and focalComposite (the cuda
// build's, and the fused ops' higher derivatives) agree in value, first
// and second derivatives w.r.t. logits and targets, float64.
func TestFocalFusedEqualsComposite(t *testing.T) {
	xs := []float64{-30, -4.2, -1.3, -0.2, 0, 0.4, 1.7, 2.2, 12, 40}
	ts := []float64{0, 1, 1, 0.3, 0, 0.8, 1, 0, 1, 0.5}
	for _, c := range []struct{ alpha, gamma float64 }{{0.25, 2}, {-1, 1.5}, {0.5, 0}, {0.25, 1}} {
		run := func(fused bool) []float64 {
			g := gorgonia.NewGraph()
			mk := func(name string, v []float64) *gorgonia.Node {
				return gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(len(v)), gorgonia.WithName(name),
					gorgonia.WithValue(tensor.New(tensor.WithBacking(append([]float64(nil), v...)))))
			}
			x, tt := mk("x", xs), mk("t", ts)
			var l *gorgonia.Node
			var err error
			if fused {
				l, err = focalNode(x, tt, c.alpha, c.gamma)
			} else {
				l, err = focalComposite(x, tt, c.alpha, c.gamma)
			}
			if err != nil {
				t.Fatal(err)
			}
			b := ad.NewBuilder(l)
			cost := b.Sum(l)
			gs, err := ad.Grad(cost, x, tt)
			if err != nil {
				t.Fatal(err)
			}
			h := b.Add(b.Sum(b.Square(gs[0])), b.Sum(b.HadamardProd(gs[0], gs[1])))
			if b.Err() != nil {
				t.Fatal(b.Err())
			}
			hs, err := ad.Grad(h, x, tt)
			if err != nil {
				t.Fatal(err)
			}
			outs := gorgonia.Nodes{l, gs[0], gs[1], hs[0], hs[1]}
			vals := make([]gorgonia.Value, len(outs))
			for i, n := range outs {
				gorgonia.Read(n, &vals[i])
			}
			m, err := ad.NewTapeMachine(g)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if err := m.RunAll(); err != nil {
				t.Fatal(err)
			}
			var all []float64
			for _, v := range vals {
				all = append(all, v.Data().([]float64)...)
			}
			return all
		}
		f, cmp := run(true), run(false)
		for i := range f {
			if d := math.Abs(f[i] - cmp[i]); !(d <= 1e-12*math.Abs(cmp[i])+1e-300) && !(math.IsNaN(f[i]) && math.IsNaN(cmp[i])) {
				t.Errorf("alpha %v gamma %v: value %d (of l, dl/dx, dl/dt, d²): fused %v, composite %v", c.alpha, c.gamma, i, f[i], cmp[i])
			}
		}
	}
}
