package gops

import (
	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
)

// PSRoIPoolOpts are the parameters of PSRoIPool, named as in
// torchvision.ops.ps_roi_pool.
type PSRoIPoolOpts struct {
	// OutputSize is the (height, width) of each pooled output, in bins.
	// The input's channels must be a multiple of OutputSize[0]·OutputSize[1].
	OutputSize [2]int
	// SpatialScale multiplies box coordinates (image pixels) to give input
	// coordinates (feature-map pixels). 0 means 1.
	SpatialScale float64
}

// PSRoIPool average-pools each box of boxes from input with
// position-sensitive channels, as torchvision.ops.ps_roi_pool (R-FCN's
// position-sensitive RoI pooling).
//
// input is [N, C, H, W] with C a multiple of PH·PW (PH, PW = OutputSize);
// boxes is [K, 5] with rows (batch_index, x1, y1, x2, y2) in image
// coordinates, in input's dtype (float32 or float64). The result is
// [K, C/(PH·PW), PH, PW]: output channel c of bin (i, j) is the mean of
// input channel c·PH·PW + i·PW + j over that bin.
//
// Geometry: each coordinate times SpatialScale, computed in the input's
// dtype, is rounded half away from zero (C's round); the roi spans
// s = max(end - start, 1) pixels per side; bin (i, j) covers rows
// [floor(i·s/PH), ceil((i+1)·s/PH)) after the start (s/PH in the input's
// dtype), clipped to [0, H], and likewise columns; an empty bin gives 0.
//
// The result is linear in input and differentiable w.r.t. input to every
// order (use ad.Grad). Box coordinates are rounded, so the result is piecewise
// constant in boxes: ad.Grad gives boxes a zero gradient.
//
// Difference from torchvision, whose forward and backward disagree: its
// forward clips bins at H-1 and W-1 (dropping the last row and column of
// the input), its backward at H and W, and the backward rounds coordinates
// in float32 even for float64 input, so its gradient is not the derivative
// of its forward. PSRoIPool clips at [0, H] and [0, W] (as roi_pool) and
// rounds once, in the input's dtype, in both directions: value and gradient
// are consistent. Its value equals torchvision's for every box none of whose
// bins reaches the last row or column, and its gradient equals torchvision's
// wherever the float32 rounding does not change a coordinate. As the other
// RoI ops, a batch index that is not an integer in [0, N), or a non-finite
// coordinate, is a run-time error naming the box; rounded coordinates are
// clamped to ±2⁴⁰. K = 0 gives an empty result.
//
// Errors when the node is built: input not 4-D or with H or W of 0, C not a
// multiple of PH·PW, boxes not [K, 5], dtypes differ or are not
// float32/float64, OutputSize not positive or beyond 2²⁴ bins, SpatialScale
// negative, not finite, or (for float32) beyond float32's range.
func PSRoIPool(input, boxes *gorgonia.Node, opts PSRoIPoolOpts) (*gorgonia.Node, error) {
	g, err := newPoolGeom("PSRoIPool", input, boxes, opts.OutputSize, opts.SpatialScale, true)
	if err != nil {
		return nil, err
	}
	// The transpose clears each plane as it adds into it (KernelOverwrites).
	f, _ := psSpecs(g, "PSRoIPool", true,
		boxKernels(g, cpu.PSRoIPoolForward[float32], cpu.PSRoIPoolForward[float64]),
		boxKernels(g, cpu.PSRoIPoolTransposeSet[float32], cpu.PSRoIPoolTransposeSet[float64]), true, nil)
	return ad.Apply(f, input, boxes)
}
