//go:build cuda

package cudatest

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Checker is the GPU check of a graph's values and gradients. Grad is
// ad.Grad and Floats graphtest.Floats (or the like): cudatest, internal,
// may not import those public packages.
type Checker struct {
	Grad   func(cost *gorgonia.Node, wrt ...*gorgonia.Node) (gorgonia.Nodes, error)
	Floats func(gorgonia.Value) []float64
}

// Grads adds to g, which holds f, the cost Σ R ⊙ f (R of dtype dt drawn
// from rng), its gradients w.r.t. wrt (order 1, g1) and the gradients of
// Σ_i Σ R2_i ⊙ g1_i w.r.t. wrt (order 2, g2), failing t on an error.
func (c Checker) Grads(t testing.TB, g *gorgonia.ExprGraph, rng *rand.Rand, dt tensor.Dtype, f *gorgonia.Node, wrt gorgonia.Nodes) (g1, g2 gorgonia.Nodes) {
	t.Helper()
	must := Must(t)
	weighted := func(n *gorgonia.Node, name string) *gorgonia.Node {
		r := Input(g, name, Random(rng, dt, n.Shape()))
		return must(gorgonia.Sum(must(gorgonia.HadamardProd(n, r))))
	}
	g1, err := c.Grad(weighted(f, "R"), wrt...)
	if err != nil {
		t.Fatal(err)
	}
	terms := make(gorgonia.Nodes, len(g1))
	for i, d := range g1 {
		terms[i] = weighted(d, fmt.Sprintf("R2_%d", i))
	}
	g2, err = c.Grad(must(gorgonia.ReduceAdd(terms)), wrt...)
	if err != nil {
		t.Fatal(err)
	}
	return g1, g2
}

// Must is a graph builder's check for t: it fails t on err, else returns n.
func Must(t testing.TB) func(n *gorgonia.Node, err error) *gorgonia.Node {
	return func(n *gorgonia.Node, err error) *gorgonia.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// Compare runs g, which holds f and its gradients of order 1 (g1) and 2
// (g2), one per node of wrt, on the GPU with Gorgonia's CUDA TapeMachine,
// and compares f, g1 and g2 with a CPU evaluation of the whole graph (each
// node's Do in topological order, from the inputs' values taken before the
// run) within Close's tolerance, failing t (Errorf) on a difference.
func (c Checker) Compare(t testing.TB, dt tensor.Dtype, g *gorgonia.ExprGraph, f *gorgonia.Node, wrt, g1, g2 gorgonia.Nodes) {
	t.Helper()
	if len(g1) != len(wrt) || len(g2) != len(wrt) {
		t.Fatalf("%d and %d gradients for %d inputs", len(g1), len(g2), len(wrt))
	}
	results := append(append(gorgonia.Nodes{f}, g1...), g2...)
	got := make([]gorgonia.Value, len(results))
	for i, n := range results {
		gorgonia.Read(n, &got[i])
	}
	// The inputs' host values, taken before the VM moves anything.
	leaves := map[*gorgonia.Node]gorgonia.Value{}
	for _, n := range g.AllNodes() {
		if n.Op() == nil {
			leaves[n] = HostCopy(n.Value())
		}
	}
	// Gorgonia's own machine: this package may not import ad (layering);
	// g2 comes from ad.Grad, which ends with ad.DistinctHashes, and the
	// Reads above are new nodes of a few hundred in the graph.
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatalf("GPU run: %v", err)
	}
	for i, v := range got {
		if v == nil {
			t.Fatalf("result %d (%v) was not read", i, results[i])
		}
		got[i] = HostCopy(v)
	}

	// The whole graph on the CPU: every node that one of the results
	// depends on (the order-2 gradients are not below the order-2 cost, and
	// a zero gradient is a constant below nothing).
	host := map[*gorgonia.Node]gorgonia.Value{}
	eval := func(n *gorgonia.Node) gorgonia.Value {
		v, err := EvalCPU(g, leaves, host, n)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for i, n := range results {
		what := "f"
		if i > 0 {
			what = fmt.Sprintf("order-%d gradient w.r.t. %s", 1+(i-1)/len(wrt), wrt[(i-1)%len(wrt)].Name())
		}
		if err := Close(c.Floats(got[i]), c.Floats(eval(n)), dt); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
}

// EvalCPU is n's value computed on the CPU: every node below n by its op's
// Do, children first, from the leaves' values in leaves (a leaf missing
// there: a host copy of its value now). memo holds the values computed so
// far and is filled; the graph's own values are not touched.
func EvalCPU(g *gorgonia.ExprGraph, leaves, memo map[*gorgonia.Node]gorgonia.Value, n *gorgonia.Node) (gorgonia.Value, error) {
	if v, done := memo[n]; done {
		return v, nil
	}
	if n.Op() == nil {
		v, ok := leaves[n]
		if !ok {
			v = HostCopy(n.Value())
		}
		memo[n] = v
		return v, nil
	}
	var in []gorgonia.Value
	for it := g.From(n.ID()); it.Next(); {
		v, err := EvalCPU(g, leaves, memo, it.Node().(*gorgonia.Node))
		if err != nil {
			return nil, err
		}
		in = append(in, v)
	}
	v, err := n.Op().Do(in...)
	if err != nil {
		return nil, fmt.Errorf("%v on the CPU: %w", n.Op(), err)
	}
	memo[n] = v
	return v, nil
}
