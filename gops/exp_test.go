package gops

import (
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestExpSecond(t *testing.T) {
	g := G.NewGraph()
	x := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking([]float64{0.3, 0.7, 1.1}))))
	f := G.Must(G.Sum(G.Must(G.HadamardProd(G.Must(G.Sin(x)), x))))
	g1, err := Grad(f, x)
	if err != nil {
		t.Fatal(err)
	}
	s := G.Must(G.Sum(g1[0]))
	g2, err := Grad(s, x)
	if err != nil {
		t.Fatal(err)
	}
	var v1, v2 G.Value
	G.Read(g1[0], &v1)
	G.Read(g2[0], &v2)
	m := G.NewTapeMachine(g)
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	t.Log(v1, v2)
	// third
	s2 := G.Must(G.Sum(g2[0]))
	g3, err := Grad(s2, x)
	if err != nil {
		t.Fatal(err)
	}
	var v3 G.Value
	G.Read(g3[0], &v3)
	m = G.NewTapeMachine(g)
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	t.Log(v3)
	// scalar case
	g = G.NewGraph()
	x = G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking([]float64{0.3, 0.7, 1.1}))))
	sx := G.Must(G.Sum(G.Must(G.Square(x))))
	f = G.Must(G.Mul(sx, sx))
	g1, _ = Grad(f, x)
	g2, err = Grad(G.Must(G.Sum(g1[0])), x)
	if err != nil {
		t.Fatal(err)
	}
	g3, err = Grad(G.Must(G.Sum(g2[0])), x)
	if err != nil {
		t.Fatal(err)
	}
	G.Read(g2[0], &v2)
	G.Read(g3[0], &v3)
	m = G.NewTapeMachine(g)
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	t.Log(v2, v3)
}
