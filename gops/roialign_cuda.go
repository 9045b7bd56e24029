//go:build cuda

package gops

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// RoIAlign's CUDA twin: kernels/roialign.cu. The boxes are copied to the
// host, checked and gridded there by the CPU code (cpu.RoIAlignGrids), so
// the GPU and CPU paths fail alike.

// packGrids packs each box's sampling grid as the kernels read it: batch
// index, startY, startX, binH, binW, gh, gw, count.
func packGrids[T cpu.Float](grids []cpu.RoIAlignBox[T], boxes []T) []T {
	p := make([]T, 0, 8*len(grids))
	for k, b := range grids {
		p = append(p, boxes[5*k], b.StartY, b.StartX, b.BinH, b.BinW, T(b.GH), T(b.GW), b.Count)
	}
	return p
}

// boxGrids downloads the boxes and returns their packed grids on the device.
// With nb > 0 (PSRoIAlign) a box's nb·gh·gw points must fit an int: the
// forward kernel numbers them bin·gh·gw + s.
func boxGrids[T cpu.Float](c *gpuCall, boxes gorgonia.Value, nb int, grids func([]T) ([]cpu.RoIAlignBox[T], error)) (cu.DevicePtr, error) {
	bx, err := download[T](c, boxes)
	if err != nil {
		return 0, err
	}
	gr, err := grids(bx)
	if err != nil {
		return 0, err
	}
	for _, b := range gr {
		if b.GH > 1<<24 || b.GW > 1<<24 {
			return 0, fmt.Errorf("gops: %s: sampling grid %dx%d too large for the GPU kernels", c.name, b.GH, b.GW)
		}
		if nb > 0 && int64(nb)*int64(b.GH)*int64(b.GW) > math.MaxInt32 {
			return 0, fmt.Errorf("gops: %s: %d bins of %dx%d sampling points exceed the CUDA kernels' int range", c.name, nb, b.GH, b.GW)
		}
	}
	return upload(c, packGrids(gr, bx))
}

// launch runs RoIAlign's forward or transpose kernel.
func (d roiAlignGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	g := d.g
	if err := c.fitInt32(in, out, intSize{"H·W", g.H * g.W}, intSize{"the packed box grids", 8 * in[1].Shape()[0]}); err != nil {
		return err
	}
	var bp cu.DevicePtr
	var err error
	if sfx == "_f32" {
		bp, err = boxGrids(c, in[1], 0, func(b []float32) ([]cpu.RoIAlignBox[float32], error) { return cpu.RoIAlignGrids(g, b) })
	} else {
		bp, err = boxGrids(c, in[1], 0, func(b []float64) ([]cpu.RoIAlignBox[float64], error) { return cpu.RoIAlignGrids(g, b) })
	}
	if err != nil {
		return err
	}
	k := in[1].Shape()[0]
	if d.transpose {
		return c.launch("roialign_transpose"+sfx, g.N*g.C, ptr(in[0]), bp, ptr(out), k, g.N, g.C, g.H, g.W, g.PH, g.PW)
	}
	return c.launch("roialign_forward"+sfx, out.Shape().TotalSize(), ptr(in[0]), bp, ptr(out), k, g.C, g.H, g.W, g.PH, g.PW)
}
