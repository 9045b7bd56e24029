package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestBatchNormEveryConfig: BatchNorm's derivatives of orders 1 to 3
// against finite differences, and TapeMachine == LispMachine, in training
// (the fused ops) and eval, without weight and bias, with either and with
// both, on [3, 2, 2, 2], one sample with L > 1 ([1, 2, 5]), one channel
// ([4, 1] and [2, 1, 3]).
func TestBatchNormEveryConfig(t *testing.T) {
	for _, s := range [][]int{{3, 2, 2, 2}, {1, 2, 5}, {4, 1}, {2, 1, 3}} {
		for _, train := range []bool{true, false} {
			for _, wb := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				c := s[1]
				in := []*tensor.Dense{smoothTensor(1.5, s...)}
				wi, bi := -1, -1
				if wb[0] {
					wi = len(in)
					in = append(in, smoothTensor(0.5, c))
				}
				if wb[1] {
					bi = len(in)
					in = append(in, smoothTensor(0.3, c))
				}
				f := func(n gorgonia.Nodes) (*gorgonia.Node, error) {
					var w, b *gorgonia.Node
					if wi >= 0 {
						w = n[wi]
					}
					if bi >= 0 {
						b = n[bi]
					}
					var rm, rv *tensor.Dense
					if !train {
						rm = tensor.New(tensor.WithShape(c), tensor.WithBacking(make([]float64, c)))
						rvd := make([]float64, c)
						for i := range rvd {
							rvd[i] = 0.5 + float64(i)
						}
						rv = tensor.New(tensor.WithShape(c), tensor.WithBacking(rvd))
					}
					return nn.BatchNorm(n[0], w, b, rm, rv, nn.BatchNormOpts{Training: train})
				}
				t.Run(fmt.Sprintf("%v/train=%v/wb=%v", s, train, wb), func(t *testing.T) {
					if err := graphtest.Check(f, in, graphtest.Options{Order: 3, Seed: 3, RTol: 1e-4, ATol: 1e-6}); err != nil {
						t.Error(err)
					}
					if err := graphtest.CheckVMs(f, in, graphtest.Options{Seed: 3}); err != nil {
						t.Error("vms:", err)
					}
				})
			}
		}
	}
}

// TestBatchNormRunningOnce: one run of a graph updates the running
// statistics exactly once, torch's momentum update with the unbiased
// variance, when the graph holds only the loss (LispMachine, its own
// backward pass), the loss's gradient w.r.t. x and the weight
// (TapeMachine), and also a gradient of that gradient (BatchNormTrain's
// gradient ops, BatchNormFresh's composed copy, which must not update).
func TestBatchNormRunningOnce(t *testing.T) {
	for _, mode := range []string{"tape1", "tape2", "lisp"} {
		g := gorgonia.NewGraph()
		xs := smoothTensor(1.5, 3, 2, 4)
		x := gorgonia.NewTensor(g, tensor.Float64, 3, gorgonia.WithShape(3, 2, 4), gorgonia.WithValue(xs), gorgonia.WithName("x"))
		w := gorgonia.NewTensor(g, tensor.Float64, 1, gorgonia.WithShape(2), gorgonia.WithValue(smoothTensor(0.5, 2)), gorgonia.WithName("w"))
		rm := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2}))
		rv := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{3, 4}))
		y, err := nn.BatchNorm(x, w, nil, rm, rv, nn.BatchNormOpts{Training: true})
		if err != nil {
			t.Fatal(err)
		}
		cost := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(gorgonia.Must(gorgonia.HadamardProd(y, x))))))
		var m gorgonia.VM
		switch mode {
		case "lisp":
			m = gorgonia.NewLispMachine(g)
		default:
			gs, err := ad.Grad(cost, x, w)
			if err != nil {
				t.Fatal(err)
			}
			if mode == "tape2" {
				c2 := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(gs[0]))))
				if _, err := ad.Grad(c2, x, w); err != nil {
					t.Fatal(err)
				}
			}
			m = gorgonia.NewTapeMachine(g)
		}
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		m.Close()
		// torch's update of (1, 2) and (3, 4) with momentum 0.1.
		d := xs.Data().([]float64)
		for c := 0; c < 2; c++ {
			var s, ss float64
			for n := 0; n < 3; n++ {
				for l := 0; l < 4; l++ {
					s += d[(n*2+c)*4+l]
				}
			}
			mu := s / 12
			for n := 0; n < 3; n++ {
				for l := 0; l < 4; l++ {
					v := d[(n*2+c)*4+l] - mu
					ss += v * v
				}
			}
			wm := 0.9*float64(c+1) + 0.1*mu
			wv := 0.9*float64(c+3) + 0.1*ss/11
			gm, gv := rm.Data().([]float64)[c], rv.Data().([]float64)[c]
			if d := gm - wm; d > 1e-12 || d < -1e-12 {
				t.Errorf("%s: mean[%d] = %v, want %v", mode, c, gm, wm)
			}
			if d := gv - wv; d > 1e-12 || d < -1e-12 {
				t.Errorf("%s: var[%d] = %v, want %v", mode, c, gv, wv)
			}
		}
	}
}

// TestBatchNormEvalReadsRunning: eval BatchNorm reads the running
// statistics when the graph runs: changed between two runs of one
// machine, the second run normalises with the new values.
func TestBatchNormEvalReadsRunning(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 3, gorgonia.WithShape(2, 2, 3), gorgonia.WithValue(smoothTensor(1.5, 2, 2, 3)), gorgonia.WithName("x"))
	rm := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{0, 0}))
	rv := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 1}))
	y, err := nn.BatchNorm(x, nil, nil, rm, rv, nn.BatchNormOpts{})
	if err != nil {
		t.Fatal(err)
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	a := graphtest.Floats(y.Value())
	rm.Data().([]float64)[0] = 10
	rv.Data().([]float64)[1] = 4
	m.Reset()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	b := graphtest.Floats(y.Value())
	xs := graphtest.Floats(x.Value())
	for i := range b {
		c := (i / 3) % 2
		want := (xs[i] - 10) / math.Sqrt(1+1e-5)
		if c == 1 {
			want = xs[i] / math.Sqrt(4+1e-5)
		}
		if math.Abs(b[i]-want) > 1e-12 {
			t.Fatalf("run 2 [%d] = %v, want %v (run 1 %v)", i, b[i], want, a[i])
		}
	}
}
