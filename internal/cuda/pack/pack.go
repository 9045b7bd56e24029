// Package pack packs the tables that gops' CUDA kernels read, from the
// CPU code's grids and bins: the boxes' sampling grids (Grids, and
// BoxDerivGrids with the box members' coefficient flags) and pooling bins
// (PoolBins). gops' launch code (build tag cuda) uploads what these
// functions return, and gops' emulator tests launch the kernels on the
// same tables, so both run on one packing. Pure Go, no build tag.
package pack

import (
	"fmt"

	"github.com/gops-dev/gops/internal/cpu"
)

// GridPack is the number of values per box of Grids.
const GridPack = 8

// BoxDerivPack is the number of values per box of BoxDerivGrids: Grids'
// 8, then the clamp flags of the y and x coefficients.
const BoxDerivPack = 10

// checkGrid fails for a grid too large for the kernels' float arithmetic
// (float coordinates of grid indices are exact up to 2²⁴).
func checkGrid[T cpu.Float](op string, b cpu.RoIAlignBox[T]) error {
	if b.GH > 1<<24 || b.GW > 1<<24 {
		return fmt.Errorf("gops: %s: sampling grid %dx%d too large for the GPU kernels", op, b.GH, b.GW)
	}
	return nil
}

// Grids packs each box's sampling grid gr[k] (of box bx[5k:5k+5]) as the
// RoIAlign, PSRoIAlign and MultiScaleRoIAlign kernels read it: batch
// index, startY, startX, binH, binW, gh, gw, count. op names the op in
// the errors.
func Grids[T cpu.Float](op string, gr []cpu.RoIAlignBox[T], bx []T) ([]T, error) {
	p := make([]T, 0, GridPack*len(gr))
	for k, b := range gr {
		if err := checkGrid(op, b); err != nil {
			return nil, err
		}
		p = append(p, bx[5*k], b.StartY, b.StartX, b.BinH, b.BinW, T(b.GH), T(b.GW), b.Count)
	}
	return p, nil
}

// BoxDerivGrids packs boxes bx and their grids gr as the box-derivative
// kernels (internal/cuda/kernels/gops/roialignbox.cu) read them: Grids' 8 values, then 1
// where newRoIAlignBoxCoefs clamps the roi height (width) to 1, computed
// with its arithmetic (coordinates times scale, minus 0.5 when aligned),
// else 0.
func BoxDerivGrids[T cpu.Float](op string, bx []T, gr []cpu.RoIAlignBox[T], scale float64, aligned bool) ([]T, error) {
	sc := T(scale)
	var off T
	if aligned {
		off = 0.5
	}
	flag := func(b bool) T {
		if b {
			return 1
		}
		return 0
	}
	p := make([]T, 0, BoxDerivPack*len(gr))
	for k, b := range gr {
		if err := checkGrid(op, b); err != nil {
			return nil, err
		}
		box := bx[5*k : 5*k+5]
		rh := (box[4]*sc - off) - (box[2]*sc - off)
		rw := (box[3]*sc - off) - (box[1]*sc - off)
		p = append(p, box[0], b.StartY, b.StartX, b.BinH, b.BinW, T(b.GH), T(b.GW), b.Count,
			flag(!aligned && rh < 1), flag(!aligned && rw < 1))
	}
	return p, nil
}

// PoolBins checks the boxes bx ([K, 5], batch indices below g.N) and
// returns every box's bins (cpu.PoolBins; inclusive: RoIPool's rule) as 4
// int64 each, hs, he, ws, we, as the RoIPool and PSRoIPool kernels read
// them (long long).
func PoolBins[T cpu.Float](op string, g *cpu.PoolGeom, bx []T, inclusive bool) ([]int64, error) {
	if err := cpu.CheckBoxes(op, bx, g.N); err != nil {
		return nil, err
	}
	var bins []cpu.PoolBin
	for k := 0; k < len(bx)/5; k++ {
		bins = cpu.PoolBins(g, bx[5*k:5*k+5], inclusive, bins)
	}
	p := make([]int64, 0, 4*len(bins))
	for _, b := range bins {
		p = append(p, int64(b.HS), int64(b.HE), int64(b.WS), int64(b.WE))
	}
	return p, nil
}
