//go:build linux

package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/internal/gemm"
)

// TestConvDirectGuarded: the three members of Conv on random narrow-group
// geometries (1 to 8 channels a group, multipliers 1 to 3, kernels up to
// 5×5 and the in-place 3×3 path, strides, dilations, padding up to 3,
// widths around the masked column blocks, one or two samples), every
// tensor placed against a guard page at its end and then at its start (a
// read or write past a slice faults), with the assembly and the Go
// loops, float32 and float64; values as convGEMM's within checkDirect's
// tolerances.
func TestConvDirectGuarded(t *testing.T) {
	loops := []bool{false}
	if directAVX512 {
		loops = append(loops, true)
	}
	defer func(v bool) { directAVX512 = v }(directAVX512)
	r := rand.New(rand.NewPCG(21, 22))
	for n := 0; n < 150; {
		cig := 1
		if r.IntN(3) == 0 {
			cig = 1 + r.IntN(8)
		}
		groups, cog := 1+r.IntN(3), 1+r.IntN(3)
		kh, kw := 3, 3
		if r.IntN(3) == 0 {
			kh, kw = 1+r.IntN(5), 1+r.IntN(5)
		}
		g := ConvGeom{N: 1 + r.IntN(2), C: cig * groups, H: 1 + r.IntN(12), W: 1 + r.IntN(40), Cout: cog * groups, Groups: groups,
			KH: kh, KW: kw, SH: 1, SW: 1, PH: r.IntN(4), PW: r.IntN(4), DH: 1, DW: 1 + r.IntN(2)}
		if r.IntN(3) == 0 {
			g.SH, g.SW, g.DH = 1+r.IntN(3), 1+r.IntN(3), 1+r.IntN(2)
		}
		var err error
		if g.HO, err = OutSize(g.H, g.KH, g.SH, g.PH, g.DH); err != nil || g.HO < 1 {
			continue
		}
		if g.WO, err = OutSize(g.W, g.KW, g.SW, g.PW, g.DW); err != nil || g.WO < 1 {
			continue
		}
		n++
		for _, asm := range loops {
			for _, tail := range []bool{true, false} {
				t.Run(fmt.Sprintf("%+v/asm=%v/tail=%v", g, asm, tail), func(t *testing.T) {
					directAVX512 = asm
					guardedDirect[float32](t, &g, tail, 2e-6)
					guardedDirect[float64](t, &g, tail, 1e-13)
				})
			}
		}
	}
}

// guardedDirect runs Conv's members on g with every tensor guarded (tail:
// at its end) and checks them against convGEMM.
func guardedDirect[T gemm.Float](t *testing.T, g *ConvGeom, tail bool, tol float64) {
	r := rand.New(rand.NewPCG(uint64(g.H), uint64(g.W)))
	guard, free := guardedCopies[T](t, tail)
	defer free()
	x := guard(randNormal[T](r, g.N*g.C*g.H*g.W))
	w := guard(randNormal[T](r, g.Cout*g.C/g.Groups*g.K()))
	bias := guard(randNormal[T](r, g.Cout))
	gr := guard(randNormal[T](r, g.N*g.Cout*g.L()))
	y, dx, dw := guard(fill[T](len(gr), 42)), guard(fill[T](len(x), 42)), guard(fill[T](len(w), 42))
	wy, wdx, wdw := make([]T, len(y)), make([]T, len(dx)), make([]T, len(dw))
	for _, m := range []struct {
		mode                 ConvMode
		out, want, a, b, bsv []T
	}{{ConvForward, y, wy, x, w, bias}, {ConvInput, dx, wdx, gr, w, nil}, {ConvWeight, dw, wdw, x, gr, nil}} {
		if err := Conv(g, m.mode, gemmProduct[T], m.out, m.a, m.b, m.bsv); err != nil {
			t.Fatal(err)
		}
		if err := convGEMM(g, m.mode, gemmProduct[T], m.want, m.a, m.b, m.bsv); err != nil {
			t.Fatal(err)
		}
		expectNear(t, fmt.Sprintf("member %d", m.mode), m.out, m.want, tol)
	}
}
