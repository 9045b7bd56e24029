//go:build linux

package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestAvgPoolOneGuarded: AvgPool with one output per plane (the AVX-512
// or AVX2 kernels where the CPU has them) on inputs that end, and then start,
// against a guard page, planes of sizes that leave a short last block:
// no read outside x, and the bits of the same call on an ordinary slice.
func TestAvgPoolOneGuarded(t *testing.T) {
	for _, s := range [][2]int{{7, 7}, {1, 1}, {3, 5}, {4, 4}, {9, 13}} {
		for _, planes := range []int{16, 17, 40} {
			g := Pool2dGeom{Planes: planes, H: s[0], W: s[1], Rows: NewAdaptiveAxis(s[0], 1), Cols: NewAdaptiveAxis(s[1], 1)}
			for _, tail := range []bool{true, false} {
				t.Run(fmt.Sprintf("%dx%dx%d/tail=%v", planes, s[0], s[1], tail), func(t *testing.T) {
					guardedAvgOne[float32](t, &g, tail)
					guardedAvgOne[float64](t, &g, tail)
				})
			}
		}
	}
}

func guardedAvgOne[T Float](t *testing.T, g *Pool2dGeom, tail bool) {
	r := rand.New(rand.NewPCG(31, 32))
	x := randData[T](r, g.Planes*g.H*g.W)
	gx, free := guarded[T](t, len(x), tail)
	defer free()
	copy(gx, x)
	want, got := make([]T, g.Planes), make([]T, g.Planes)
	AvgPool(g, AvgDivisor{}, x, want)
	AvgPool(g, AvgDivisor{}, gx, got)
	sameBitsStrict(t, "guarded AvgPool", got, want)
}
