//go:build cuda

package gops

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RoIPool's CUDA twins: internal/cuda/kernels/gops/roipool.cu. The boxes are copied to the
// host, checked and binned there by the CPU code (cpu.PoolBins).

// Launch runs one of RoIPool's kernels: argmax, gather or scatter-add.
func (d roiPoolGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	gg := d.g
	nb := gg.PH * gg.PW
	// in[1] is the boxes (argmax) or the indices [K, C, PH, PW], whose
	// positions the error slot holds.
	switch d.kind {
	case roiPoolArgmaxKind:
		bins, err := deviceBins(c, in[1], gg, true)
		if err != nil {
			return err
		}
		if tensor.Int.Size() != 8 {
			return fmt.Errorf("gops: %s: the GPU kernels need a 64-bit int", c.Name)
		}
		return c.Launch("roipool_argmax"+sfx, out.Shape().TotalSize(), glue.Ptr(in[0]), glue.Ptr(in[1]), bins, glue.Ptr(out), in[1].Shape()[0], gg.C, gg.H, gg.W, nb)
	}
	bad, err := glue.Upload(c, []int64{math.MaxInt64})
	if err != nil {
		return err
	}
	idx := in[1]
	if d.kind == roiGatherKind {
		err = c.Launch("roipool_gather"+sfx, out.Shape().TotalSize(), glue.Ptr(in[0]), glue.Ptr(idx), glue.Ptr(out), out.Shape().TotalSize(), int64(in[0].Shape().TotalSize()), bad)
	} else {
		err = c.Launch("roipool_scatteradd"+sfx, gg.N*gg.C, glue.Ptr(in[0]), glue.Ptr(idx), glue.Ptr(out), idx.Shape()[0], gg.N, gg.C, gg.H, gg.W, nb, bad)
	}
	if err != nil {
		return err
	}
	at, err := glue.Download[int64](c, bad, 1)
	if err != nil {
		return err
	}
	if at[0] != math.MaxInt64 {
		ix, err := download[int](c, idx)
		if err != nil {
			return err
		}
		if d.kind == roiGatherKind {
			return fmt.Errorf("gops: RoIGather: index %d at %d is outside the input (%d elements)", ix[at[0]], at[0], in[0].Shape().TotalSize())
		}
		return fmt.Errorf("gops: RoIScatterAdd: index %d at %d is not in the input plane of its box and channel", ix[at[0]], at[0])
	}
	return nil
}
