//go:build cuda

package nn

import (
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/gorgonia"
)

// The poolings on the GPU: internal/cuda/kernels/nn/pool.cu. The windows' tables
// (cpu.PoolAxis) and their inverse (poolTable, cudatables.go) are
// uploaded per call.

// poolTables uploads g's row and column tables.
func poolTables(c *glue.Call, g *cpu.Pool2dGeom) (rows, cols any, err error) {
	r, err := glue.Upload(c, poolTable(&g.Rows, g.H))
	if err != nil {
		return nil, nil, err
	}
	cl, err := glue.Upload(c, poolTable(&g.Cols, g.W))
	return r, cl, err
}

// Launch runs one of max pooling's ops.
func (d maxPoolGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	g := d.g
	ho, wo := g.Rows.Out(), g.Cols.Out()
	switch d.kind {
	case poolGather:
		return c.Launch("pool_max_gather"+sfx, g.Planes*ho*wo, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(out), g.Planes, g.H*g.W, ho*wo)
	case poolEmptyFill:
		return c.Launch("pool_max_emptyfill"+sfx, g.Planes*ho*wo, glue.Ptr(in[1]), glue.Ptr(out), g.Planes*ho*wo)
	}
	rows, cols, err := poolTables(c, g)
	if err != nil {
		return err
	}
	if d.kind == poolArgmax {
		return c.Launch("pool_max_argmax"+sfx, g.Planes*ho*wo, glue.Ptr(in[0]), glue.Ptr(out), g.Planes, g.H, g.W, ho, wo, rows, cols, g.Rows.Step, g.Cols.Step)
	}
	return c.Launch("pool_max_scatteradd"+sfx, g.Planes*g.H*g.W, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(out), g.Planes, g.H, g.W, ho, wo, rows, cols)
}

// Launch runs average pooling or its transpose.
func (d avgPoolGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	g := d.g
	ho, wo := g.Rows.Out(), g.Cols.Out()
	rows, cols, err := poolTables(c, g)
	if err != nil {
		return err
	}
	if d.forward {
		return c.Launch("pool_avg"+sfx, g.Planes*ho*wo, glue.Ptr(in[0]), glue.Ptr(out), g.Planes, g.H, g.W, ho, wo, rows, cols, g.Rows.Step, g.Cols.Step, d.div.IncludePad, d.div.Override)
	}
	return c.Launch("pool_avg_transpose"+sfx, g.Planes*g.H*g.W, glue.Ptr(in[0]), glue.Ptr(out), g.Planes, g.H, g.W, ho, wo, rows, cols, g.Rows.Step, g.Cols.Step, d.div.IncludePad, d.div.Override)
}
