package graphtest_test

// Review 27 attacks on Directional. A failure is a finding in
// /work/wt/notes-review27.md.

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func r27must(n *gorgonia.Node, err error) *gorgonia.Node {
	if err != nil {
		panic(err)
	}
	return n
}

func TestReview27DirectionalFloat32(t *testing.T) {
	g := gorgonia.NewGraph()
	w := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(3), gorgonia.WithName("w"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{1, 2, 3}))))
	cost := r27must(gorgonia.Sum(r27must(gorgonia.Square(w))))
	_, err := graphtest.Directional(cost, gorgonia.Nodes{w}, graphtest.DirectionalOpts{})
	t.Logf("float32: %v", err)
	if err == nil || !strings.Contains(err.Error(), "w") || !strings.Contains(err.Error(), "float64") {
		t.Errorf("float32 wrt: %v", err)
	}
}

// A wrt node the cost does not depend on.
func TestReview27DirectionalUnusedWrt(t *testing.T) {
	g := gorgonia.NewGraph()
	val := func() *tensor.Dense { return tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3})) }
	w := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("w"), gorgonia.WithValue(val()))
	u := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("unused"), gorgonia.WithValue(val()))
	cost := r27must(gorgonia.Sum(r27must(gorgonia.Square(w))))
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("panic: %v", r)
			}
		}()
		_, err = graphtest.Directional(cost, gorgonia.Nodes{w, u}, graphtest.DirectionalOpts{Order: 2})
	}()
	t.Logf("unused wrt: %v", err)
	if err != nil && !strings.Contains(err.Error(), "unused") {
		t.Errorf("a wrt node the cost does not use: %v (does not name it)", err)
	}
}

// A run failure inside Directional: the message should be the op's own
// (ad.RunAll), not Gorgonia's "PC n. Failed to execute instruction" chain.
func TestReview27DirectionalRunError(t *testing.T) {
	g := gorgonia.NewGraph()
	w := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(1, 3), gorgonia.WithName("logits"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 3), tensor.WithBacking([]float64{1, 2, 3}))))
	y := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(1), gorgonia.WithName("y"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1), tensor.WithBacking([]int{9}))))
	cost := r27must(nn.CrossEntropy(w, y, nn.CrossEntropyOpts{}))
	_, err := graphtest.Directional(cost, gorgonia.Nodes{w}, graphtest.DirectionalOpts{})
	t.Logf("run error: %v", err)
	if err == nil || strings.Contains(err.Error(), "Failed to execute instruction") {
		t.Errorf("Directional's run error keeps Gorgonia's VM prefix (it calls m.RunAll, not ad.RunAll): %v", err)
	}
	// The fix: an *ad.RunError, the point written θ, the op's message.
	var re *ad.RunError
	const wantPrefix, wantOp = "graphtest: Directional: running the graph at θ: ad: node ", "nn: CrossEntropy: target 9 at row 0 is outside [0, 3)"
	if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), wantPrefix) || !strings.Contains(err.Error(), wantOp) {
		t.Errorf("error %v, want an *ad.RunError %q…%q", err, wantPrefix, wantOp)
	}
}

func TestReview27DirectionalBadOpts(t *testing.T) {
	g := gorgonia.NewGraph()
	w := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("w"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3}))))
	cost := r27must(gorgonia.Sum(r27must(gorgonia.Square(w))))
	for _, o := range []graphtest.DirectionalOpts{{Eps: math.NaN()}, {Eps: math.Inf(1)}, {RTol: -1}, {Order: -1}, {RTol: math.Inf(1)}} {
		_, err := graphtest.Directional(cost, gorgonia.Nodes{w}, o)
		t.Logf("%+v: %v", o, err)
		if err == nil && !math.IsInf(o.RTol, 1) {
			t.Errorf("%+v accepted", o)
		}
	}
}
