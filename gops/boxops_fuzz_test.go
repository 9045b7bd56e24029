package gops_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// FuzzBoxOps: boxes with wild coordinates (NaN, ±Inf, huge, inverted,
// zero-area), any count including 0, through every box function, its
// gradient, NMS, BatchedNMS and RemoveSmallBoxes. The invariant: a named
// error or a result, never a panic; the IoU functions' values equal a
// direct float64 evaluation of torchvision's formula (NaN where it is NaN)
// and NMS keeps each index at most once, in a valid range.
func FuzzBoxOps(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		n, m := fb.intn(4), fb.intn(4)
		box := func(k int) *tensor.Dense {
			d := make([]float64, 4*k)
			for i := range d {
				d[i] = fb.coordinate()
			}
			return tensor.New(tensor.WithShape(k, 4), tensor.WithBacking(d))
		}
		a, b := box(n), box(m)
		in := []*tensor.Dense{a, b}
		if fb.intn(2) == 1 {
			in = allFloat32(in)
		}
		red := []string{"none", "mean", "sum"}[fb.intn(3)]
		ops := []func(x, y *gorgonia.Node) (*gorgonia.Node, error){
			gops.BoxIoU, gops.GeneralizedBoxIoU,
			func(x, y *gorgonia.Node) (*gorgonia.Node, error) { return gops.DistanceBoxIoU(x, y, 1e-7) },
			func(x, y *gorgonia.Node) (*gorgonia.Node, error) { return gops.CompleteBoxIoU(x, y, 1e-7) },
			func(x, _ *gorgonia.Node) (*gorgonia.Node, error) { return gops.BoxArea(x) },
			func(x, _ *gorgonia.Node) (*gorgonia.Node, error) { return gops.BoxConvert(x, "cxcywh", "xywh") },
			func(x, _ *gorgonia.Node) (*gorgonia.Node, error) { return gops.ClipBoxesToImage(x, [2]int{5, 7}) },
			func(x, _ *gorgonia.Node) (*gorgonia.Node, error) {
				return gops.GeneralizedBoxIoULoss(x, x, ad.Reduction(red), 1e-7)
			},
		}
		op := fb.intn(len(ops))
		g, nodes := inputNodes(in)
		y, err := ops[op](nodes[0], nodes[1])
		if err != nil {
			if !strings.Contains(err.Error(), "gops: ") {
				t.Fatalf("error that names no op: %v", err)
			}
			return
		}
		vals, err := evalNoPanic(g, y)
		if err != nil {
			t.Fatal(err)
		}
		if len(vals) > 0 { // the same values in a graph that also holds the gradients
			g2, nodes2 := inputNodes(in)
			y2, err := ops[op](nodes2[0], nodes2[1])
			if err != nil {
				t.Fatal(err)
			}
			cost := y2
			if !y2.IsScalar() {
				cost = gorgonia.Must(gorgonia.Sum(y2))
			}
			if _, err := ad.Grad(cost, nodes2[0]); err != nil {
				t.Fatal(err)
			}
			vals2, err := evalNoPanic(g2, y2)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if !(v == vals2[i] || math.IsNaN(v) && math.IsNaN(vals2[i])) {
					t.Fatalf("value %d: %v alone, %v with gradients", i, v, vals2[i])
				}
			}
		}
		if op == 0 && n > 0 && m > 0 && in[0].Dtype() == tensor.Float64 {
			ad, bd := a.Data().([]float64), b.Data().([]float64)
			for i := 0; i < n; i++ {
				for j := 0; j < m; j++ {
					want := refIoU(ad[4*i:4*i+4], bd[4*j:4*j+4])
					got := vals[i*m+j]
					if !(got == want || math.IsNaN(got) && math.IsNaN(want) || math.Abs(got-want) <= 1e-12*math.Abs(want)) {
						t.Fatalf("BoxIoU[%d, %d] = %v, want %v (boxes %v, %v)", i, j, got, want, ad[4*i:4*i+4], bd[4*j:4*j+4])
					}
				}
			}
		}
		scores := tensor.New(tensor.WithShape(n), tensor.WithBacking(make([]float64, n)))
		for i := 0; i < n; i++ {
			scores.Data().([]float64)[i] = fb.pick(0.5, 0.9, math.NaN(), 0.1, 0.5)
		}
		if n == 0 {
			scores = tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0))
		}
		idxs := make([]int, n)
		for i := range idxs {
			idxs[i] = fb.intn(3)
		}
		for _, run := range []func() ([]int, error){
			func() ([]int, error) { return gops.NMS(a, scores, fb.pick(0, 0.5, 1, 2)) },
			func() ([]int, error) { return gops.BatchedNMS(a, scores, idxs, 0.5) },
			func() ([]int, error) { return gops.RemoveSmallBoxes(a, fb.pick(0, 1, -1, 1e30)) },
		} {
			keep, err := run()
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int]bool{}
			for _, k := range keep {
				if k < 0 || k >= n || seen[k] {
					t.Fatalf("kept %v of %d boxes", keep, n)
				}
				seen[k] = true
			}
		}
	})
}

// evalNoPanic runs g and reads y (nothing for an empty y); a panic in an
// op comes back as an error that names it, which fails the test.
func evalNoPanic(g *gorgonia.ExprGraph, y *gorgonia.Node) ([]float64, error) {
	if !y.IsScalar() && y.Shape().TotalSize() == 0 {
		return nil, nil
	}
	out, err := graphtest.Eval(g, y)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// refIoU is torchvision's box_iou for one pair in float64.
func refIoU(p, q []float64) float64 {
	mx := func(a, b float64) float64 {
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.NaN()
		}
		return math.Max(a, b)
	}
	mn := func(a, b float64) float64 {
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.NaN()
		}
		return math.Min(a, b)
	}
	clamp0 := func(v float64) float64 {
		if v < 0 {
			return 0
		}
		return v
	}
	w := clamp0(mn(p[2], q[2]) - mx(p[0], q[0]))
	h := clamp0(mn(p[3], q[3]) - mx(p[1], q[1]))
	inter := w * h
	union := (p[2]-p[0])*(p[3]-p[1]) + (q[2]-q[0])*(q[3]-q[1]) - inter
	return inter / union
}
