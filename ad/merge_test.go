package ad

import (
	"slices"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The input names below were found by search: Gorgonia's 32-bit node
// hashes of Probe(x23239) and Probe(x55452), and of x + b for x a48529 and
// a63047, are equal, so its AddNode returns the first node for the second
// (docs/GORGONIA.md, "Pooled types and node merging").

// vectorInput is a float64 vector input of 4 elements, base + 0, 1, 2, 3.
func vectorInput(g *gorgonia.ExprGraph, name string, base float64) *gorgonia.Node {
	v := tensor.New(tensor.WithBacking([]float64{base, base + 1, base + 2, base + 3}))
	return gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(4), gorgonia.WithName(name), gorgonia.WithValue(v))
}

// runValues runs g once and returns the values of nodes.
func runValues(t *testing.T, g *gorgonia.ExprGraph, nodes ...*gorgonia.Node) [][]float64 {
	t.Helper()
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	out := make([][]float64, len(nodes))
	for i, n := range nodes {
		out[i] = slices.Clone(n.Value().Data().([]float64))
	}
	return out
}

// Apply's node for colliding inputs is its own, with the right value.
func TestApplyNotMergedOnHashCollision(t *testing.T) {
	g := gorgonia.NewGraph()
	x1, x2 := vectorInput(g, "x23239", 1), vectorInput(g, "x55452", 10)
	spec := OpSpec{Name: "Probe", InputDims: []int{1}, OutputDims: 1,
		Shape:  func(s []tensor.Shape) (tensor.Shape, error) { return s[0], nil },
		Kernel: Floats(copyData[float32], copyData[float64]), KernelOverwrites: true}
	o, err := newOp(spec)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := gorgonia.ApplyOp(o, x1); err != nil {
		t.Fatal(err)
	} else if q, err := gorgonia.ApplyOp(o, x2); err != nil || q != p {
		t.Fatalf("Gorgonia no longer merges the two nodes (%v, %v): find other names", q, err)
	}

	g = gorgonia.NewGraph()
	x1, x2 = vectorInput(g, "x23239", 1), vectorInput(g, "x55452", 10)
	y1, err := Apply(spec, x1)
	if err != nil {
		t.Fatal(err)
	}
	y2, err := Apply(spec, x2)
	if err != nil {
		t.Fatal(err)
	}
	if y1 == y2 || !slices.Equal(children(g, y2), gorgonia.Nodes{x2}) {
		t.Fatalf("Apply(x55452) is %v with inputs %v", y2, children(g, y2))
	}
	// An equal op on the same input is still merged, on purpose.
	if y3, err := Apply(spec, x2); err != nil || y3 != y2 {
		t.Fatalf("Apply(x55452) again: %v, %v; want the node %v", y3, err, y2)
	}
	v := runValues(t, g, y1, y2)
	if !slices.Equal(v[0], []float64{1, 2, 3, 4}) || !slices.Equal(v[1], []float64{10, 11, 12, 13}) {
		t.Fatalf("values %v", v)
	}
}

// elementwise's node for colliding inputs computes its own sum.
func TestElementwiseNotMergedOnHashCollision(t *testing.T) {
	g := gorgonia.NewGraph()
	a1, a2, b := vectorInput(g, "a48529", 1), vectorInput(g, "a63047", 10), vectorInput(g, "b", 100)
	if p, err := gorgonia.Add(a1, b); err != nil {
		t.Fatal(err)
	} else if q, err := gorgonia.Add(a2, b); err != nil || q != p {
		t.Fatalf("Gorgonia no longer merges the two nodes (%v, %v): find other names", q, err)
	}

	g = gorgonia.NewGraph()
	a1, a2, b = vectorInput(g, "a48529", 1), vectorInput(g, "a63047", 10), vectorInput(g, "b", 100)
	s1, err := elementwise(gorgonia.Add, a1, b)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := elementwise(gorgonia.Add, a2, b)
	if err != nil {
		t.Fatal(err)
	}
	if s1 == s2 {
		t.Fatal("a63047 + b is the node of a48529 + b")
	}
	if s3, err := elementwise(gorgonia.Add, a1, b); err != nil || s3 != s1 {
		t.Fatalf("a48529 + b again: %v, %v; want the node %v", s3, err, s1)
	}
	v := runValues(t, g, s1, s2)
	if !slices.Equal(v[0], []float64{101, 103, 105, 107}) || !slices.Equal(v[1], []float64{110, 112, 114, 116}) {
		t.Fatalf("values %v", v)
	}
	// The copy carries the gradient.
	cost, err := gorgonia.Sum(s2)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := Grad(cost, a2)
	if err != nil {
		t.Fatal(err)
	}
	if v := runValues(t, g, gs[0]); !slices.Equal(v[0], []float64{1, 1, 1, 1}) {
		t.Fatalf("gradient %v", v[0])
	}
}

// The check takes a new node as new whatever its inputs: Gorgonia gives it
// the graph's clone of a constant input, and Mul of a vector and a matrix
// its inputs swapped.
func TestCheckedNewNodes(t *testing.T) {
	g := gorgonia.NewGraph()
	x := vectorInput(g, "x", 1)
	k := gorgonia.NewConstant(2.0, gorgonia.In(g))
	b := NewBuilder(x)
	d := b.RSub(3, b.Add(b.Scale(x, 2), k))
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	m := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(4, 2), gorgonia.WithName("m"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(4, 2), tensor.WithBacking([]float64{1, 0, 0, 1, 1, 1, 2, 0}))))
	vm, err := elementwise(gorgonia.Mul, x, m)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(g.AllNodes()); n != 9 {
		t.Errorf("%d nodes, want 9 (no fresh copies)", n)
	}
	v := runValues(t, g, d, vm)
	if !slices.Equal(v[0], []float64{-1, -3, -5, -7}) || !slices.Equal(v[1], []float64{12, 5}) {
		t.Fatalf("values %v", v)
	}
}

// An op that returns its input as it is (Gorgonia's Sum of a scalar) is
// not a merge into another computation's node.
func TestCheckedIdentity(t *testing.T) {
	g := gorgonia.NewGraph()
	x := vectorInput(g, "x", 1)
	b := NewBuilder(x)
	s := b.Sum(x)
	if s2 := b.Sum(s); b.Err() != nil || s2 != s {
		t.Fatalf("Sum of a scalar: %v, %v (want the scalar itself)", s2, b.Err())
	}
}
