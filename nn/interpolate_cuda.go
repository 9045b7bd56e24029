//go:build cuda

package nn

import (
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/gorgonia"
)

// Interpolate on the GPU: internal/cuda/kernels/nn/interp.cu. The axes' tables
// (cpu.InterpAxis) and their inverse (interpTable, cudatables.go) are
// uploaded per call.

// Launch runs Interpolate or its transpose.
func (d interpGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	g := d.g
	ho, wo := len(g.Rows.I0), len(g.Cols.I0)
	var p [4]any
	for i, h := range []func() (any, error){
		func() (any, error) { return glue.Upload(c, interpTable(&g.Rows, g.H)) },
		func() (any, error) { return glue.Upload(c, g.Rows.L) },
		func() (any, error) { return glue.Upload(c, interpTable(&g.Cols, g.W)) },
		func() (any, error) { return glue.Upload(c, g.Cols.L) },
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
	return c.Launch(name+sfx, n, glue.Ptr(in[0]), glue.Ptr(out), g.Planes, g.H, g.W, ho, wo, p[0], p[1], p[2], p[3], g.Nearest)
}
