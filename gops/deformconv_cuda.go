//go:build cuda

package gops

import (
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// DeformConv2d's CUDA twins: internal/cuda/kernels/gops/deformconv.cu, the members S, T, C, O
// of every order and the offset embed/split pair.

// Launch runs member d.kind of order (d.a, d.b).
func (d deformGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	g := d.g
	// The kernels' first 15 parameters: the geometry as long long scalars, in the
	// order of deformconv.cu's Geom (cu copies 8 bytes per parameter, so no
	// struct).
	geom := []any{g.N, g.C, g.H, g.W, g.KH, g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW, g.HO, g.WO, g.OG}
	args := func(rest ...any) []any { return append(geom[:len(geom):len(geom)], rest...) }
	var mask cu.DevicePtr // 0: no mask (1)
	switch d.kind {
	case deformS:
		if len(in) == 3 {
			mask = glue.Ptr(in[2])
		}
		return c.Launch("deform_s"+sfx, out.Shape().TotalSize(), args(glue.Ptr(in[0]), glue.Ptr(in[1]), mask, glue.Ptr(out), d.a, d.b)...)
	case deformT:
		if len(in) == 3 {
			mask = glue.Ptr(in[2])
		}
		return c.Launch("deform_t"+sfx, g.N*g.C, args(glue.Ptr(in[0]), glue.Ptr(in[1]), mask, glue.Ptr(out), d.a, d.b)...)
	case deformC:
		return c.Launch("deform_c"+sfx, out.Shape().TotalSize(), args(glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(in[2]), glue.Ptr(out), d.a, d.b)...)
	default:
		if len(in) == 4 {
			mask = glue.Ptr(in[3])
		}
		return c.Launch("deform_o"+sfx, g.MaskLen(), args(glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(in[2]), mask, glue.Ptr(out), d.a, d.b)...)
	}
}

// Launch runs OffsetEmbed or OffsetSplit.
func (d offsetLayoutGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	rows := d.g.MaskLen() / max(d.g.L(), 1)
	name := "offset_split"
	if d.embed {
		name = "offset_embed"
	}
	return c.Launch(name+sfx, out.Shape().TotalSize(), glue.Ptr(in[0]), glue.Ptr(out), rows, d.g.L(), d.which)
}
