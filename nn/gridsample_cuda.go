//go:build cuda

package nn

import (
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GridSample's family and AffineGrid on the GPU: internal/cuda/kernels/nn/gridsample.cu.
// A member's taps are built on the host by the Go kernels' functions
// (gridGPUPlan, cpu.GridTable) from the grid and masks, downloaded per
// call, and uploaded with its launches.

func (d gridGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	if c.Dt == tensor.Float32 {
		return gridRun[float32](d, c, sfx, in, out)
	}
	return gridRun[float64](d, c, sfx, in, out)
}

func gridRun[T cpu.Float](d gridGPU, c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	pl, err := gridGPUPlan(d, func(i int) ([]T, error) { return glue.Download[T](c, glue.Ptr(in[i]), size(in[i])) })
	if err != nil {
		return err
	}
	temps := make([]any, pl.temps)
	for k := range temps {
		p, err := c.Temp(int64(pl.tempN) * int64(c.Dt.Size()))
		if err != nil {
			return err
		}
		temps[k] = p
	}
	for _, st := range pl.steps {
		args := make([]any, len(st.args))
		for i, a := range st.args {
			var err error
			switch v := a.(type) {
			case gridIn:
				args[i] = glue.Ptr(in[v])
			case gridOut:
				args[i] = glue.Ptr(out)
			case gridTemp:
				args[i] = temps[v]
			case []int64:
				args[i], err = glue.Upload(c, v)
			case []T:
				args[i], err = glue.Upload(c, v)
			default:
				args[i] = a
			}
			if err != nil {
				return err
			}
		}
		if err := c.Launch(st.name+sfx, st.n, args...); err != nil {
			return err
		}
	}
	return nil
}

func (d gridLayoutGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	if d.split {
		return c.Launch("gridsample_split"+sfx, size(out), glue.Ptr(in[0]), glue.Ptr(out), size(out), d.which)
	}
	n := size(in[0])
	return c.Launch("gridsample_embed"+sfx, 2*n, glue.Ptr(in[0]), glue.Ptr(out), n, d.which)
}

func (d affineGridGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	if c.Dt == tensor.Float32 {
		return affineGridRun[float32](d, c, sfx, in, out)
	}
	return affineGridRun[float64](d, c, sfx, in, out)
}

func affineGridRun[T cpu.Float](d affineGridGPU, c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	xs, err := glue.Upload(c, cpu.AffineGridBase[T](d.w, d.alignCorners))
	if err != nil {
		return err
	}
	ys, err := glue.Upload(c, cpu.AffineGridBase[T](d.h, d.alignCorners))
	if err != nil {
		return err
	}
	name, n := "gridsample_affine", d.n*d.h*d.w*2
	if !d.forward {
		name, n = "gridsample_affine_t", d.n*6
	}
	return c.Launch(name+sfx, n, glue.Ptr(in[0]), glue.Ptr(out), d.n, d.h, d.w, xs, ys)
}
