//go:build cuda

package nn

import (
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/cudaglue"
	"gorgonia.org/gorgonia"
)

// Interpolate on the GPU: kernels/interp.cu. The axes' tables
// (cpu.InterpAxis) and their inverse are uploaded per call.

// interpTable packs an axis of in input positions for the kernels: I0 and
// I1, then Lo and Hi, the range of outputs reading each input position
// (empty: Lo = out, Hi = 0).
func interpTable(a *cpu.InterpAxis, in int) []int64 {
	out := len(a.I0)
	t := make([]int64, 2*out+2*in)
	lo, hi := t[2*out:2*out+in], t[2*out+in:]
	for r := range lo {
		lo[r] = int64(out)
	}
	for o := 0; o < out; o++ {
		t[o], t[out+o] = int64(a.I0[o]), int64(a.I1[o])
		for _, r := range []int{a.I0[o], a.I1[o]} {
			lo[r], hi[r] = min(lo[r], int64(o)), max(hi[r], int64(o+1))
		}
	}
	return t
}

// launch runs Interpolate or its transpose.
func (d interpGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	g := d.g
	ho, wo := len(g.Rows.I0), len(g.Cols.I0)
	var p [4]any
	for i, h := range []func() (any, error){
		func() (any, error) { return cudaglue.Upload(c, interpTable(&g.Rows, g.H)) },
		func() (any, error) { return cudaglue.Upload(c, g.Rows.L) },
		func() (any, error) { return cudaglue.Upload(c, interpTable(&g.Cols, g.W)) },
		func() (any, error) { return cudaglue.Upload(c, g.Cols.L) },
	} {
		var err error
		if p[i], err = h(); err != nil {
			return err
		}
	}
	name, n := "interp_forward", g.Planes*ho*wo
	if !d.forward {
		name, n = "interp_transpose", g.Planes*g.H*g.W
	}
	return c.Launch(name+sfx, n, ptr(in[0]), ptr(out), g.Planes, g.H, g.W, ho, wo, p[0], p[1], p[2], p[3], g.Nearest)
}
