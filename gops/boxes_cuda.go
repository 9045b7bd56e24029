//go:build cuda

package gops

import (
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/cuda/glue"
	"github.com/gops-dev/gops/internal/cuda/pack"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The CUDA side shared by the RoI ops: the boxes are copied to the host,
// checked and turned into sampling grids or bins there by the CPU code, so
// the GPU and CPU paths fail alike, and the result is uploaded.

// boxGrids downloads the boxes and returns their packed grids
// (pack.Grids) on the device.
func boxGrids[T cpu.Float](c *glue.Call, boxes gorgonia.Value, grids func([]T) ([]cpu.RoIAlignBox[T], error)) (cu.DevicePtr, error) {
	bx, err := download[T](c, boxes)
	if err != nil {
		return 0, err
	}
	gr, err := grids(bx)
	if err != nil {
		return 0, err
	}
	p, err := pack.Grids(c.Name, gr, bx)
	if err != nil {
		return 0, err
	}
	return glue.Upload(c, p)
}

// deviceGrids downloads the boxes and returns the packed sampling grids of
// RoIAlign (geometry ra) or PSRoIAlign (ps) on the device.
func deviceGrids(c *glue.Call, sfx string, boxes gorgonia.Value, ra *cpu.RoIAlignGeom, ps *cpu.PoolGeom) (cu.DevicePtr, error) {
	if sfx == "_f32" {
		return boxGrids(c, boxes, func(b []float32) ([]cpu.RoIAlignBox[float32], error) { return gridsOf(ra, ps, b) })
	}
	return boxGrids(c, boxes, func(b []float64) ([]cpu.RoIAlignBox[float64], error) { return gridsOf(ra, ps, b) })
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
// (pack.PoolBins) on the device.
func poolBinsOf[T cpu.Float](c *glue.Call, g *cpu.PoolGeom, boxes gorgonia.Value, inclusive bool) (cu.DevicePtr, error) {
	bx, err := download[T](c, boxes)
	if err != nil {
		return 0, err
	}
	p, err := pack.PoolBins(c.Name, g, bx, inclusive)
	if err != nil {
		return 0, err
	}
	return glue.Upload(c, p)
}

// deviceBins is poolBinsOf for the boxes' dtype.
func deviceBins(c *glue.Call, boxes gorgonia.Value, g *cpu.PoolGeom, inclusive bool) (cu.DevicePtr, error) {
	if boxes.Dtype() == tensor.Float32 {
		return poolBinsOf[float32](c, g, boxes, inclusive)
	}
	return poolBinsOf[float64](c, g, boxes, inclusive)
}

// Launch runs the forward or transpose kernel of PSRoIAlign or, when the op
// rounds its boxes, of PSRoIPool (psroipool_cuda.go).
func (d psGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	if !d.align {
		return d.launchPool(c, sfx, in, out)
	}
	return d.launchAlign(c, sfx, in, out)
}

// download copies a device value's elements to the host.
func download[E any](c *glue.Call, v gorgonia.Value) ([]E, error) {
	return glue.Download[E](c, glue.Ptr(v), glue.Size(v))
}

// int64s is idx as the kernels' long long index tables.
func int64s(idx []int) []int64 {
	t := make([]int64, len(idx))
	for i, v := range idx {
		t[i] = int64(v)
	}
	return t
}
