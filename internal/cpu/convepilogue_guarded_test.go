//go:build linux

package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gops-dev/gops/internal/gemm"
)

// TestConvEpilogueGuarded: ConvEpilogue with bias, scale and shift,
// residual and ReLU on epilogueCases, every slice placed against a guard
// page at its end and then at its start (a read or write past a slice
// faults), float32 and float64: the bits of the same call on ordinary
// slices.
func TestConvEpilogueGuarded(t *testing.T) {
	for i, g := range epilogueCases {
		g.HO, _ = OutSize(g.H, g.KH, g.SH, g.PH, g.DH)
		g.WO, _ = OutSize(g.W, g.KW, g.SW, g.PW, g.DW)
		for _, tail := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d/tail=%v", i, tail), func(t *testing.T) {
				guardedEpilogue[float32](t, &g, tail)
				guardedEpilogue[float64](t, &g, tail)
			})
		}
	}
}

func guardedEpilogue[T gemm.Float](t *testing.T, g *ConvGeom, tail bool) {
	r := rand.New(rand.NewPCG(9, 10))
	sizes := []int{g.N * g.C * g.H * g.W, g.Cout * g.C / g.Groups * g.K(), g.Cout, g.Cout, g.Cout, g.N * g.Cout * g.L(), g.N * g.Cout * g.L()}
	plain := make([][]T, len(sizes))
	guard := make([][]T, len(sizes))
	for k, n := range sizes {
		plain[k] = randNormal[T](r, n)
		s, free := guarded[T](t, n, tail)
		defer free()
		copy(s, plain[k])
		guard[k] = s
	}
	run := func(s [][]T) []T {
		ep := &Epilogue[T]{Scale: s[3], Shift: s[4], Residual: s[5], ReLU: true}
		must(t, ConvEpilogue(g, gemmProduct[T], s[6], s[0], s[1], s[2], ep))
		return s[6]
	}
	want, got := run(plain), run(guard)
	if !slices.Equal(bitsOf(got), bitsOf(want)) {
		t.Fatalf("%T: guarded slices give other bits", got[0])
	}
}
