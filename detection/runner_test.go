package detection

import (
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestRunnerBoundsGraphs runs a runner on more batch shapes than it keeps:
// it holds at most maxRunnerGraphs graphs (each holds its machine's
// buffers, hundreds of MB for a ResNet-50 at 800×1333), evicts the least
// recently used, rebuilds an evicted shape on demand, and still computes.
func TestRunnerBoundsGraphs(t *testing.T) {
	builds := 0
	r := newRunner(func(x *gorgonia.Node) ([]*gorgonia.Node, any, error) {
		builds++
		y, err := gorgonia.Mul(x, gorgonia.NewConstant(2.0))
		return []*gorgonia.Node{y}, nil, err
	})
	defer r.close()
	run := func(w int) {
		t.Helper()
		x := tensor.New(tensor.WithShape(1, w), tensor.WithBacking(make([]float64, w)))
		x.Data().([]float64)[0] = float64(w)
		out, _, err := r.run(x)
		if err != nil {
			t.Fatal(err)
		}
		if got := out[0].Data().([]float64)[0]; got != 2*float64(w) {
			t.Fatalf("width %d: %v, want %v", w, got, 2*float64(w))
		}
	}
	for w := 1; w <= maxRunnerGraphs+3; w++ {
		run(w)
		if len(r.graphs) > maxRunnerGraphs {
			t.Fatalf("%d graphs kept after %d shapes, want at most %d", len(r.graphs), w, maxRunnerGraphs)
		}
	}
	if builds != maxRunnerGraphs+3 {
		t.Fatalf("%d builds, want %d", builds, maxRunnerGraphs+3)
	}
	run(maxRunnerGraphs + 3) // the most recent: kept
	if builds != maxRunnerGraphs+3 {
		t.Fatalf("the latest shape was rebuilt")
	}
	run(1) // evicted long ago: rebuilt
	if builds != maxRunnerGraphs+4 {
		t.Fatalf("%d builds, want %d after running an evicted shape", builds, maxRunnerGraphs+4)
	}
}
