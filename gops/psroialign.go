package gops

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// PSRoIAlignOpts are the parameters of PSRoIAlign, named as in
// torchvision.ops.ps_roi_align.
type PSRoIAlignOpts struct {
	// OutputSize is the (height, width) of each pooled output, in bins.
	// The input's channels must be a multiple of OutputSize[0]·OutputSize[1].
	OutputSize [2]int
	// SpatialScale multiplies box coordinates (image pixels) to give input
	// coordinates (feature-map pixels), for example 1/16 for a stride-16
	// feature map. 0 means 1.
	SpatialScale float64
	// SamplingRatio is the number of sample points per bin side. <= 0 means
	// adaptive: ceil(roi size / output size) per box and side.
	SamplingRatio int
}

// PSRoIAlign pools each box of boxes from input with bilinear sampling and
// position-sensitive channels, as torchvision.ops.ps_roi_align (R-FCN's
// position-sensitive RoI pooling, with RoIAlign's sampling).
//
// input is [N, C, H, W] with C a multiple of PH·PW (PH, PW = OutputSize);
// boxes is [K, 5] with rows (batch_index, x1, y1, x2, y2) in image
// coordinates, in input's dtype (float32 or float64). The result is
// [K, C/(PH·PW), PH, PW]: output channel c of bin (i, j) averages the
// bilinear samples of input channel c·PH·PW + i·PW + j in that bin.
//
// Geometry is torchvision's: coordinates times SpatialScale in the input's
// dtype, always shifted by -0.5 pixel (roi_align's aligned=True), no roi
// size clamp, SamplingRatio² samples per bin or an adaptive grid, and
// roi_align's bilinear boundary rule.
//
// The result is linear in input and differentiable to every order w.r.t.
// input and boxes, mixed input×box and x×y terms included (use ad.Grad;
// torchvision gives boxes no gradient), as RoIAlign: box gradients follow
// the sample points, which are affine in the box coordinates, through the
// bilinear interpolation. Where the function has kinks, the conventions
// are: the cells, the adaptive grid size (SamplingRatio <= 0), the
// averaging count and the inside/outside decisions are piecewise constant
// (derivative 0); a sample coordinate clamped by torchvision's y <= 0 → 0
// rule or its last-row (last-column) rule has derivative 0 in that
// coordinate; a sample exactly on an integer takes the derivative of the
// cell floor() selects (the right-sided one). A bin without samples has a
// zero gradient. The batch-index column gets a zero gradient. Box
// gradients are computed only when ad.Grad needs them; their kernels have
// CUDA twins (roialignbox_cuda.go), built and linked but not yet run on a
// GPU.
//
// Differences from torchvision: a bin without samples (a box of zero or
// negative size with adaptive sampling) gives 0 where torchvision gives NaN
// (0/0); a batch index that is not an integer in [0, N), or a non-finite
// coordinate, is a run-time error naming the box (torchvision reads out of
// bounds); an adaptive grid beyond 2²⁴ samples per box is an error. K = 0
// gives an empty [0, C/(PH·PW), PH, PW] result.
//
// Errors when the node is built: input not 4-D or with H or W of 0, C not a
// multiple of PH·PW, boxes not [K, 5], dtypes differ or are not
// float32/float64, OutputSize not positive or beyond 2²⁴ bins, SamplingRatio
// beyond 2²⁴ samples per box, SpatialScale negative, not finite, or (for
// float32) beyond float32's range.
func PSRoIAlign(input, boxes *gorgonia.Node, opts PSRoIAlignOpts) (*gorgonia.Node, error) {
	g, err := newPoolGeom("PSRoIAlign", input, boxes, opts.OutputSize, opts.SpatialScale, true)
	if err != nil {
		return nil, err
	}
	if err := checkSamplingRatio("PSRoIAlign", opts.SamplingRatio, opts.OutputSize); err != nil {
		return nil, err
	}
	g.SamplingRatio = opts.SamplingRatio
	f, _ := psRoIAlignFamily{g}.specs(0, 0, false)
	return ad.Apply(f, input, boxes)
}

// psRoIAlignFamily builds the members of one PSRoIAlign's family:
// RoIAlign's (roiAlignFamily) with PSRoIAlign's sampling and
// position-sensitive channels, F_ab → [K, J·C', PH, PW], C' = C/(PH·PW),
// channel j·C' + c of bin (ph, pw) reading input channel
// (c·PH + ph)·PW + pw (internal/cpu/roialignbox.go).
type psRoIAlignFamily struct{ g *cpu.PoolGeom }

// specs are member F_ab of the family and its transpose, a linear pair in
// X; xMajor orders F_11's channels x-major. F_00 is PSRoIAlign (psSpecs,
// as PSRoIPool).
func (f psRoIAlignFamily) specs(a, b int, xMajor bool) (fwd, adj ad.OpSpec) {
	g := f.g
	if a+b == 0 {
		return psSpecs(g, "PSRoIAlign", false,
			boxKernels(g, cpu.PSRoIAlignForward[float32], cpu.PSRoIAlignForward[float64]),
			boxKernels(g, cpu.PSRoIAlignTransposeSet[float32], cpu.PSRoIAlignTransposeSet[float64]), true, f)
	}
	J, cOut := 1<<(a+b), g.C/(g.PH*g.PW)
	return boxMemberSpecs(fmt.Sprintf("PSRoIAlignBoxDeriv%d%d", a, b), fmt.Sprintf("x_major=%t, %s", xMajor, g.Params()),
		inputShape(g), func(k int) tensor.Shape { return tensor.Shape{k, J * cOut, g.PH, g.PW} }, a, b,
		boxDerivKernels(g, a, b, xMajor, cpu.PSRoIAlignBoxDeriv[float32], cpu.PSRoIAlignBoxDeriv[float64]),
		boxDerivKernels(g, a, b, xMajor, cpu.PSRoIAlignBoxDerivTranspose[float32], cpu.PSRoIAlignBoxDerivTranspose[float64]),
		f, &boxDerivGPU{ps: g, a: a, b: b, xMajor: xMajor})
}
