//go:build cuda

package gops

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/cudaglue"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The CUDA side shared by the RoI ops: the boxes are copied to the host,
// checked and turned into sampling grids or bins there by the CPU code, so
// the GPU and CPU paths fail alike, and the result is uploaded.

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
	p, err := checkPackGrids(c, gr, bx, nb)
	if err != nil {
		return 0, err
	}
	return cudaglue.Upload(c, p)
}

// checkPackGrids checks that the grids fit the kernels' int arithmetic and
// packs them (packGrids).
func checkPackGrids[T cpu.Float](c *gpuCall, gr []cpu.RoIAlignBox[T], bx []T, nb int) ([]T, error) {
	for _, b := range gr {
		if b.GH > 1<<24 || b.GW > 1<<24 {
			return nil, fmt.Errorf("gops: %s: sampling grid %dx%d too large for the GPU kernels", c.Name, b.GH, b.GW)
		}
		if nb > 0 && int64(nb)*int64(b.GH)*int64(b.GW) > math.MaxInt32 {
			return nil, fmt.Errorf("gops: %s: %d bins of %dx%d sampling points exceed the CUDA kernels' int range", c.Name, nb, b.GH, b.GW)
		}
	}
	return packGrids(gr, bx), nil
}

// deviceGrids downloads the boxes and returns the packed sampling grids of
// RoIAlign (geometry ra) or PSRoIAlign (ps) on the device.
func deviceGrids(c *gpuCall, sfx string, boxes gorgonia.Value, ra *cpu.RoIAlignGeom, ps *cpu.PoolGeom) (cu.DevicePtr, error) {
	nb := 0
	if ps != nil {
		nb = ps.PH * ps.PW
	}
	if sfx == "_f32" {
		return boxGrids(c, boxes, nb, func(b []float32) ([]cpu.RoIAlignBox[float32], error) { return gridsOf(ra, ps, b) })
	}
	return boxGrids(c, boxes, nb, func(b []float64) ([]cpu.RoIAlignBox[float64], error) { return gridsOf(ra, ps, b) })
}

// gridsOf is cpu.RoIAlignGrids or, without ra, cpu.PSRoIAlignGrids.
func gridsOf[T cpu.Float](ra *cpu.RoIAlignGeom, ps *cpu.PoolGeom, boxes []T) ([]cpu.RoIAlignBox[T], error) {
	if ra != nil {
		return cpu.RoIAlignGrids(ra, boxes)
	}
	_, gr, err := cpu.PSRoIAlignGrids(ps, boxes)
	return gr, err
}

// poolBinsOf downloads the boxes, checks them and returns every box's bins
// as 4 int32 (hs, he, ws, we) on the device.
func poolBinsOf[T cpu.Float](c *gpuCall, g *cpu.PoolGeom, boxes gorgonia.Value, inclusive bool) (cu.DevicePtr, error) {
	bx, err := download[T](c, boxes)
	if err != nil {
		return 0, err
	}
	if err := cpu.CheckBoxes(c.Name, bx, g.N); err != nil {
		return 0, err
	}
	var bins []cpu.PoolBin
	for k := 0; k < len(bx)/5; k++ {
		bins = cpu.PoolBins(g, bx[5*k:5*k+5], inclusive, bins)
	}
	p := make([]int32, 0, 4*len(bins))
	for _, b := range bins {
		p = append(p, int32(b.HS), int32(b.HE), int32(b.WS), int32(b.WE))
	}
	return cudaglue.Upload(c, p)
}

// deviceBins is poolBinsOf for the boxes' dtype.
func deviceBins(c *gpuCall, boxes gorgonia.Value, g *cpu.PoolGeom, inclusive bool) (cu.DevicePtr, error) {
	if boxes.Dtype() == tensor.Float32 {
		return poolBinsOf[float32](c, g, boxes, inclusive)
	}
	return poolBinsOf[float64](c, g, boxes, inclusive)
}

// launch runs the forward or transpose kernel of PSRoIAlign or, when the op
// rounds its boxes, of PSRoIPool (psroipool_cuda.go).
func (d psGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	g, k := d.g, in[1].Shape()[0]
	nb := g.PH * g.PW
	packed := intSize{"the packed bins", 4 * k * nb}
	if d.align {
		packed = intSize{"the packed box grids", 8 * k}
	}
	if err := fitInt32(c, in, out, intSize{"H·W", g.H * g.W}, packed); err != nil {
		return err
	}
	if !d.align {
		return d.launchPool(c, sfx, in, out)
	}
	return d.launchAlign(c, sfx, in, out)
}
