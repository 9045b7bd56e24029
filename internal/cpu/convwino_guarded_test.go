//go:build linux

package cpu

import (
	"fmt"
	"math"
	"testing"
)

// TestConvWinoGuarded: Winograd's ConvForward (with a bias) and ConvInput
// on winoGeoms, every tensor placed against a guard page at its end and
// then at its start (a read or write past a slice faults), float32 and
// float64, on gemm.Gemm and with U_ξ and V_ξ packed (a nil Product);
// the values checkWino's.
func TestConvWinoGuarded(t *testing.T) {
	for _, g := range winoGeoms() {
		for _, tail := range []bool{true, false} {
			t.Run(fmt.Sprintf("%+v/tail=%v", g, tail), func(t *testing.T) {
				guardedWino[float32](t, &g, tail)
				guardedWino[float64](t, &g, tail)
			})
		}
	}
}

func guardedWino[T float32 | float64](t *testing.T, g *ConvGeom, tail bool) {
	guard, free := guardedCopies[T](t, tail)
	defer free()
	r := newRand(g)
	x, w, bias := guard(normals[T](r, g.N*g.C*g.H*g.W)), guard(normals[T](r, g.Cout*g.Rows())), guard(normals[T](r, g.Cout))
	gr := guard(normals[T](r, g.N*g.Cout*g.L()))
	y, dx := guard(fill[T](len(gr), T(math.NaN()))), guard(fill[T](len(x), T(math.NaN())))
	for _, m := range []struct {
		mode        ConvMode
		out, a, bsv []T
	}{{ConvForward, y, x, bias}, {ConvInput, dx, gr, nil}} {
		want := make([]T, len(m.out))
		must(t, convGEMM(g, m.mode, gemmProduct[T], want, m.a, w, m.bsv))
		for _, mul := range []Product[T]{gemmProduct[T], nil} { // nil: U_ξ and V_ξ packed
			if _, err := convWino(g, m.mode, mul, m.out, m.a, w, m.bsv); err != nil {
				t.Fatal(err)
			}
			tol := 1e-4
			if _, ok := any(T(0)).(float64); ok {
				tol = 1e-10
			}
			expectNear(t, fmt.Sprintf("mode %d, packed %v", m.mode, mul == nil), m.out, want, tol)
		}
	}
}
