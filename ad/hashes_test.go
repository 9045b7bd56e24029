package ad

import (
	"slices"
	"testing"

	"gorgonia.org/gorgonia"
)

// The input names below were found by search: float64 vector inputs of 4
// elements named v112789 and v349192 have equal 32-bit Gorgonia node
// hashes (their names differ, so AddNode keeps both).
const collideA, collideB = "v112789", "v349192"

// collidingSum builds x + y on two inputs whose hashes collide, and reads
// x + y and y.
func collidingSum(t *testing.T) (g *gorgonia.ExprGraph, s *gorgonia.Node, sum, y *gorgonia.Value) {
	t.Helper()
	g = gorgonia.NewGraph()
	xn, yn := vectorInput(g, collideA, 1), vectorInput(g, collideB, 10)
	if xn == yn || xn.Hashcode() != yn.Hashcode() {
		t.Fatalf("the inputs %s and %s no longer collide (%x, %x): find other names", collideA, collideB, xn.Hashcode(), yn.Hashcode())
	}
	s, err := gorgonia.Add(xn, yn)
	if err != nil {
		t.Fatal(err)
	}
	sum, y = new(gorgonia.Value), new(gorgonia.Value)
	gorgonia.Read(s, sum)
	gorgonia.Read(yn, y)
	return g, s, sum, y
}

func floats(t *testing.T, v gorgonia.Value) []float64 {
	t.Helper()
	if v == nil {
		t.Fatal("no value read")
	}
	return slices.Clone(v.Data().([]float64))
}

// Gorgonia's own TapeMachine reads x for y: its common subexpression
// elimination goes by node hash alone. If this starts failing, Gorgonia
// has changed: see whether DistinctHashes is still needed.
func TestGorgoniaTapeMachineMergesByHash(t *testing.T) {
	g, _, sum, _ := collidingSum(t)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	got := floats(t, *sum) // x + x or y + y: one input is read for both
	if !slices.Equal(got, []float64{2, 4, 6, 8}) && !slices.Equal(got, []float64{20, 22, 24, 26}) {
		t.Fatalf("Gorgonia's x + y = %v, expected 2x or 2y of its merge", got)
	}
}

// NewTapeMachine computes both nodes.
func TestNewTapeMachineDistinctHashes(t *testing.T) {
	g, _, sum, y := collidingSum(t)
	m, err := NewTapeMachine(g)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	if got, want := floats(t, *sum), []float64{11, 13, 15, 17}; !slices.Equal(got, want) {
		t.Fatalf("x + y = %v, want %v", got, want)
	}
	if got, want := floats(t, *y), []float64{10, 11, 12, 13}; !slices.Equal(got, want) {
		t.Fatalf("y = %v, want %v", got, want)
	}
	seen := map[uint32]*gorgonia.Node{}
	for _, n := range g.AllNodes() {
		if o, ok := seen[n.Hashcode()]; ok {
			t.Fatalf("nodes %v and %v share hash %x", o, n, n.Hashcode())
		}
		seen[n.Hashcode()] = n
	}
	if k, err := DistinctHashes(g); err != nil || k != 0 {
		t.Fatalf("DistinctHashes again: %d, %v; want 0 changed", k, err)
	}
}

// DistinctHashes changes the younger node only, and a subgraph compiled
// after it computes both.
func TestDistinctHashesSubgraph(t *testing.T) {
	g, s, sum, _ := collidingSum(t)
	all := g.AllNodes()
	before := make([]uint32, len(all))
	for i, n := range all {
		before[i] = n.Hashcode()
	}
	k, err := DistinctHashes(g)
	if err != nil || k != 1 {
		t.Fatalf("DistinctHashes: %d, %v; want 1 changed", k, err)
	}
	for i, n := range all {
		if changed := n.Hashcode() != before[i]; changed != (n.Name() == collideB) {
			t.Fatalf("node %v: hash changed %t", n, changed)
		}
	}
	m, err := NewTapeMachine(g.SubgraphRoots(s))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	if got, want := floats(t, *sum), []float64{11, 13, 15, 17}; !slices.Equal(got, want) {
		t.Fatalf("x + y = %v, want %v", got, want)
	}
}

// Grad leaves no colliding pair behind, so Gorgonia's own NewTapeMachine
// computes its gradients right: d/dx Σ x ⊙ y = y and d/dy = x.
func TestGradDistinctHashes(t *testing.T) {
	g := gorgonia.NewGraph()
	x, y := vectorInput(g, collideA, 1), vectorInput(g, collideB, 10)
	p, err := gorgonia.HadamardProd(x, y)
	if err != nil {
		t.Fatal(err)
	}
	c, err := gorgonia.Sum(p)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := Grad(c, x, y)
	if err != nil {
		t.Fatal(err)
	}
	var gx, gy, cv gorgonia.Value
	gorgonia.Read(gs[0], &gx)
	gorgonia.Read(gs[1], &gy)
	gorgonia.Read(c, &cv)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	if got, want := floats(t, gx), []float64{10, 11, 12, 13}; !slices.Equal(got, want) {
		t.Fatalf("dc/dx = %v, want %v", got, want)
	}
	if got, want := floats(t, gy), []float64{1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("dc/dy = %v, want %v", got, want)
	}
	if got, want := cv.Data().(float64), 1*10.+2*11+3*12+4*13; got != want {
		t.Fatalf("c = %v, want %v", got, want)
	}
}

func TestDistinctHashesErrors(t *testing.T) {
	if _, err := DistinctHashes(nil); err == nil {
		t.Fatal("nil graph: no error")
	}
	if _, err := NewTapeMachine(gorgonia.NewGraph()); err == nil {
		t.Fatal("empty graph: no error")
	}
}
