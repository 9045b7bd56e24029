//go:build cuda

package gops

import (
	"unsafe"

	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/cuda/glue"
	"github.com/gops-dev/gops/internal/cuda/pack"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// MultiScaleRoIAlign's CUDA twin: its forward and its levels' box-family
// members M_l,ab and their transposes (levelMemberSpecs) run RoIAlign's
// kernels (roialign.cu, roialignbox.cu) level by level, as the CPU's
// cpu.PyramidForward and cpu.PyramidTranspose do. The boxes are copied to
// the host and assigned to levels there by the CPU code (assignFPNLevels,
// cpu.PyramidLevels), so the two paths fail alike and pick the same level
// for every box. A level holding only some of the boxes is pooled into a
// compact buffer from its boxes' grids and its rows moved to their places (internal/cuda/kernels/gops/multiscale.cu);
// a transpose first gathers the level's rows of the gradient. The results
// are the CPU's: the same kernels on the same boxes, then plain copies.

// launchPyramid runs d (d.pyr set): with d.level < 0 the whole forward
// (in: the maps, then the RoIs), else level d.level's member (in: the map
// or, transposed, the gradient [K, R]; then the RoIs).
func launchPyramid[T cpu.Float](c *glue.Call, sfx string, d boxDerivGPU, in []gorgonia.Value, out gorgonia.Value) error {
	g := d.pyr
	roisV := in[len(in)-1]
	k := roisV.Shape()[0]
	rois, err := download[T](c, roisV)
	if err != nil {
		return err
	}
	byLevel, err := assignFPNLevels(g, rois)
	if err != nil {
		return err
	}
	size := out.Shape().TotalSize()
	if d.transpose {
		idx := byLevel[d.level]
		if len(idx) == 0 {
			return c.Launch("multiscale_zero"+sfx, size, glue.Ptr(out), size)
		}
		return levelLaunch(c, sfx, d, d.level, rois, idx, glue.Ptr(in[0]), glue.Ptr(out), in[0].Shape().TotalSize()/k, size)
	}
	row := size / max(k, 1)
	levels := []int{d.level}
	if d.level < 0 {
		levels = levels[:0]
		for l := range g.Levels {
			levels = append(levels, l)
		}
	}
	whole := false // one level holds every box: it writes every row
	for _, l := range levels {
		whole = whole || len(byLevel[l]) == k
	}
	if !whole {
		if err := c.Launch("multiscale_zero"+sfx, size, glue.Ptr(out), size); err != nil {
			return err
		}
	}
	for _, l := range levels {
		if len(byLevel[l]) == 0 {
			continue
		}
		x := in[0] // a level's member: its map
		if d.level < 0 {
			x = in[l]
		}
		if err := levelLaunch(c, sfx, d, l, rois, byLevel[l], glue.Ptr(x), glue.Ptr(out), row, size); err != nil {
			return err
		}
	}
	return nil
}

// levelLaunch runs level l's member d.a, d.b (RoIAlign for a = b = 0), or
// its transpose, on the boxes idx of rois: x is level l's map (or the
// gradient [K, row]) and out the result [K, row] (or map l, of size
// elements).
func levelLaunch[T cpu.Float](c *glue.Call, sfx string, d boxDerivGPU, l int, rois []T, idx []int, x, out cu.DevicePtr, row, size int) error {
	g, k := d.pyr, len(rois)/5
	lg := g.Levels[l]
	all := len(idx) == k
	sub := rois
	if !all {
		sub = cpu.GatherLevelRows(nil, rois, idx, 5)
	}
	gr, err := cpu.RoIAlignGrids(lg, sub)
	if err != nil {
		return levelError(g, l, rois, idx, err)
	}
	member := d
	member.ra, member.pyr = lg, nil
	geom := member.geom()
	var packed []T
	if d.a+d.b == 0 {
		packed, err = pack.Grids(c.Name, gr, sub)
	} else {
		packed, err = pack.BoxDerivGrids(c.Name, sub, gr, geom.scale, geom.aligned)
	}
	if err != nil {
		return err
	}
	bp, err := glue.Upload(c, packed)
	if err != nil {
		return err
	}
	run := func(x, out cu.DevicePtr, outSize int) error {
		if d.a+d.b == 0 {
			return launchRoIAlignKernel(c, sfx, lg, d.transpose, x, bp, out, len(idx), outSize)
		}
		return member.launchKernel(c, sfx, geom, x, bp, out, len(idx), outSize)
	}
	if all {
		return run(x, out, size)
	}
	ip, err := glue.Upload(c, int64s(idx))
	if err != nil {
		return err
	}
	var t T
	buf, err := c.Temp(int64(len(idx)*row) * int64(unsafe.Sizeof(t)))
	if err != nil {
		return err
	}
	if d.transpose { // the level's rows of the gradient, then the transpose
		if err := c.Launch("multiscale_rows"+sfx, len(idx)*row, x, ip, buf, len(idx), row, 0); err != nil {
			return err
		}
		return run(buf, out, size)
	}
	if err := run(x, buf, len(idx)*row); err != nil {
		return err
	}
	return c.Launch("multiscale_rows"+sfx, len(idx)*row, buf, ip, out, len(idx), row, 1)
}
