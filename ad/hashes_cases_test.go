package ad

import (
	"slices"
	"testing"

	"gorgonia.org/gorgonia"
)

// Found by a search over names: on float64 vector inputs of 4
// elements, Sum(w53574) (a scalar) and Neg(w391) (a vector) have equal
// node hashes, although neither the inputs nor the ops collide.
const opCollideSum, opCollideNeg = "w53574", "w391"

// opCollision builds s = Σa (older) and n = -b (younger) whose hashes
// collide, p = n ⊙ n built on n before any rehash (its cached hash is
// computed from n's old one), and reads s, n and p.
func opCollision(t *testing.T) (g *gorgonia.ExprGraph, s, n, p *gorgonia.Node, sv, nv, pv *gorgonia.Value) {
	t.Helper()
	g = gorgonia.NewGraph()
	a, b := vectorInput(g, opCollideSum, 1), vectorInput(g, opCollideNeg, 10)
	s = gorgonia.Must(gorgonia.Sum(a))
	n = gorgonia.Must(gorgonia.Neg(b))
	if a.Hashcode() == b.Hashcode() || s.Hashcode() != n.Hashcode() || s.ID() >= n.ID() {
		t.Fatalf("Σ%s and -%s no longer collide: find other names", opCollideSum, opCollideNeg)
	}
	p = gorgonia.Must(gorgonia.HadamardProd(n, n))
	sv, nv, pv = new(gorgonia.Value), new(gorgonia.Value), new(gorgonia.Value)
	gorgonia.Read(s, sv)
	gorgonia.Read(n, nv)
	gorgonia.Read(p, pv)
	return
}

func checkOpCollision(t *testing.T, m gorgonia.VM, sv, nv, pv *gorgonia.Value) {
	t.Helper()
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	if got := (*sv).Data().(float64); got != 10 {
		t.Fatalf("Σa = %v, want 10", got)
	}
	if got, want := floats(t, *nv), []float64{-10, -11, -12, -13}; !slices.Equal(got, want) {
		t.Fatalf("-b = %v, want %v", got, want)
	}
	if got, want := floats(t, *pv), []float64{100, 121, 144, 169}; !slices.Equal(got, want) {
		t.Fatalf("(-b)² = %v, want %v", got, want)
	}
}

// Two op nodes (not inputs, not leaves, different ops and shapes) whose
// hashes collide: Gorgonia's machine gives one of them the other's value;
// ad.NewTapeMachine computes both, on the graph and on a subgraph compiled
// without a DistinctHashes of the whole graph first.
func TestOpNodeCollision(t *testing.T) {
	t.Run("gorgonia", func(t *testing.T) {
		g, _, _, _, sv, nv, _ := opCollision(t)
		m := gorgonia.NewTapeMachine(g)
		defer m.Close()
		err := m.RunAll()
		if err == nil && *sv != nil && *nv != nil && slices.Equal(floats(t, *nv), []float64{-10, -11, -12, -13}) {
			t.Fatal("Gorgonia's machine computed both colliding op nodes: has it stopped merging by hash?")
		}
		t.Logf("Gorgonia's machine: err %v, Σa %v, -b %v", err, *sv, *nv)
	})
	t.Run("graph", func(t *testing.T) {
		g, s, n, _, sv, nv, pv := opCollision(t)
		hs := s.Hashcode()
		m, err := NewTapeMachine(g)
		if err != nil {
			t.Fatal(err)
		}
		if s.Hashcode() != hs || n.Hashcode() == hs {
			t.Fatalf("the younger node keeps the hash: Σa %x, -b %x, was %x", s.Hashcode(), n.Hashcode(), hs)
		}
		checkOpCollision(t, m, sv, nv, pv)
	})
	t.Run("subgraph", func(t *testing.T) {
		g, s, n, p, sv, nv, pv := opCollision(t)
		m, err := NewTapeMachine(g.SubgraphRoots(s, n, p))
		if err != nil {
			t.Fatal(err)
		}
		checkOpCollision(t, m, sv, nv, pv)
	})
	t.Run("lisp", func(t *testing.T) { // the LispMachine never merged
		g, _, _, _, sv, nv, pv := opCollision(t)
		checkOpCollision(t, gorgonia.NewLispMachine(g, gorgonia.ExecuteFwdOnly()), sv, nv, pv)
	})
}

// A node DistinctHashes changed is in g once, under its new hash: the
// next op built on it (gorgonia.Read too: Gorgonia calls AddNode on every
// input again) does not add it a second time, and DistinctHashes finds
// nothing to change the next time.
func TestBuildAfterDistinctHashes(t *testing.T) {
	g := gorgonia.NewGraph()
	x, y := vectorInput(g, collideA, 1), vectorInput(g, collideB, 10)
	if k, err := DistinctHashes(g); err != nil || k != 1 {
		t.Fatalf("DistinctHashes: %d, %v", k, err)
	}
	id := y.ID()
	s := gorgonia.Must(gorgonia.Add(x, y))
	var v gorgonia.Value
	gorgonia.Read(y, &v)
	count := 0
	for _, n := range g.AllNodes() {
		if n == y {
			count++
		}
	}
	if count != 1 || y.ID() != id {
		t.Errorf("y is %d times in g.AllNodes() (%v), its ID %d → %d", count, g.AllNodes(), id, y.ID())
	}
	if k, err := DistinctHashes(g); err != nil || k != 0 {
		t.Errorf("DistinctHashes on a graph without colliding nodes: %d changed, %v", k, err)
	}
	_ = s
}

// Two colliding nodes make the same op on each collide too (a node's hash
// is FNV of its op, type, shape and children's hashes), and AddNode merges
// those as they are built (nodeEq does not compare children), before any
// NewTapeMachine: Gorgonia's Sum(y) is Sum(x)'s node. Builder (and Apply,
// and Grad's rules) give their inputs hashes of their own first, and do
// not take an input of equal hash for the same input.
func TestCollidingInputsCascade(t *testing.T) {
	g := gorgonia.NewGraph()
	x, y := vectorInput(g, collideA, 1), vectorInput(g, collideB, 10)
	if sx, sy := gorgonia.Must(gorgonia.Sum(x)), gorgonia.Must(gorgonia.Sum(y)); sx != sy {
		t.Fatal("Gorgonia's Sum(y) is no longer Sum(x)'s node: update DistinctHashes' doc and docs/GORGONIA.md")
	}
	g = gorgonia.NewGraph()
	x, y = vectorInput(g, collideA, 1), vectorInput(g, collideB, 10)
	b := NewBuilder(x)
	ex, ey := b.Exp(x), b.Exp(y)
	sx, sy := b.Sum(x), b.Sum(y)
	if b.Err() != nil {
		t.Fatal(b.Err())
	}
	if ex == ey || sx == sy {
		t.Fatalf("Builder merged ops on colliding inputs: Exp %t, Sum %t", ex == ey, sx == sy)
	}
	var sxv, syv gorgonia.Value
	gorgonia.Read(sx, &sxv)
	gorgonia.Read(sy, &syv)
	m, err := NewTapeMachine(g)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	if gx, gy := sxv.Data().(float64), syv.Data().(float64); gx != 10 || gy != 46 {
		t.Fatalf("Σx, Σy = %v, %v, want 10, 46", gx, gy)
	}
}
