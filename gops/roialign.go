package gops

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RoIAlignOpts are the parameters of RoIAlign, named as in
// torchvision.ops.roi_align.
type RoIAlignOpts struct {
	// OutputSize is the (height, width) of each pooled output, in bins.
	OutputSize [2]int
	// SpatialScale multiplies box coordinates (image pixels) to give
	// input coordinates (feature-map pixels), for example 1/16 for a
	// stride-16 feature map. 0 means 1.
	SpatialScale float64
	// SamplingRatio is the number of sample points per bin side. <= 0 means
	// adaptive: ceil(roi size / output size) per box and side.
	SamplingRatio int
	// Aligned shifts box coordinates by -0.5 pixel so that a box's corners
	// fall on pixel centres (and does not clamp the roi size to 1).
	Aligned bool
}

// RoIAlign pools each box of boxes from input with bilinear sampling, as
// torchvision.ops.roi_align (Mask R-CNN's RoIAlign).
//
// input is [N, C, H, W]; boxes is [K, 5] with rows (batch_index, x1, y1, x2,
// y2) in image coordinates, in input's dtype (float32 or float64). The
// result is [K, C, OutputSize[0], OutputSize[1]].
//
// The result is linear in input and differentiable to every order w.r.t.
// input and boxes, mixed input×box and x×y terms included (use ad.Grad;
// torchvision gives boxes no gradient). Box gradients follow the sample
// points, which are affine in the box coordinates, through the bilinear
// interpolation. Where the function has kinks, the conventions are: the
// cells, the adaptive grid size (SamplingRatio <= 0), the averaging count,
// the unaligned max(size, 1) clamp and the inside/outside decisions are
// piecewise constant (derivative 0; a clamped roi size, size < 1, gives
// d/d(y1) = spatial_scale and d/d(y2) = 0 for every sample, likewise x); a
// sample coordinate clamped by torchvision's y <= 0 → 0 rule or its last-row
// (last-column) rule has derivative 0 in that coordinate; a sample exactly
// on an integer takes the derivative of the cell floor() selects (the
// right-sided one). The batch-index column gets a zero gradient. Box
// gradients are computed only when ad.Grad needs them; their kernels have
// CUDA twins (roialignbox_cuda.go), built and linked but not yet run on a
// GPU.
//
// Semantics are torchvision's in every detail (roi size clamp when not
// aligned, the boundary rule of the bilinear interpolation, adaptive
// sampling grid, averaging count), except where torchvision fails: a batch
// index that is not an integer in [0, N), or a non-finite coordinate, is a
// run-time error naming the box (torchvision reads out of bounds); an
// inverted box with Aligned and adaptive sampling pools to zeros
// (torchvision throws a vector-size error). K = 0 gives an empty
// [0, C, PH, PW] result.
//
// A box whose sampling grid would exceed 2²⁴ points (adaptive sampling of
// an enormous box) is a run-time error; sample points whose coordinates
// overflow to a non-finite value sample nothing.
//
// Errors when the node is built: input not 4-D or with H or W of 0, boxes
// not [K, 5], dtypes differ or are not float32/float64, OutputSize not
// positive or beyond 2²⁴ bins, SamplingRatio beyond 2²⁴ samples per box,
// SpatialScale negative, not finite, or (for float32) beyond float32's
// range.
func RoIAlign(input, boxes *gorgonia.Node, opts RoIAlignOpts) (*gorgonia.Node, error) {
	const name = "RoIAlign"
	s, err := checkRoINodes(name, input, boxes)
	if err != nil {
		return nil, err
	}
	if err := checkOutputSize(name, opts.OutputSize); err != nil {
		return nil, err
	}
	if err := checkSamplingRatio(name, opts.SamplingRatio, opts.OutputSize); err != nil {
		return nil, err
	}
	scale, err := spatialScaleOrOne(name, opts.SpatialScale, input.Dtype())
	if err != nil {
		return nil, err
	}
	g := &cpu.RoIAlignGeom{
		N: s[0], C: s[1], H: s[2], W: s[3],
		PH: opts.OutputSize[0], PW: opts.OutputSize[1],
		Scale: scale, SamplingRatio: opts.SamplingRatio, Aligned: opts.Aligned,
	}
	f, _ := roiAlignFamily{g}.specs(0, 0, false)
	return ad.Apply(f, input, boxes)
}

// roiAlignFamily builds the members of one RoIAlign's family, closed under
// differentiation w.r.t. the input and the boxes (docs/ARCHITECTURE.md,
// "RoIAlign's boxes: four members indexed by derivative order"). Member
// F_ab(X, boxes) → [K, J·C, PH, PW], J = 2^(a+b), averages the derivative
// ∂ᵃ_y ∂ᵇ_x of the bilinear value at each sample point times the sample
// coordinates' derivatives w.r.t. the box coordinates that channel j
// selects (internal/cpu/roialignbox.go); F_00 is RoIAlign. Each member is
// linear in X with a transpose F_abᵀ(G, boxes) → [N, C, H, W] (a linear
// pair). With upstream U, the box gradient of <U, F_ab(X, boxes)> is
//
//	y1, y2 columns: MatMul(F_(a+1)b(X, boxes) as [K, 2, R], U as [K, R, 1])   (a = 0)
//	x1, x2 columns: MatMul(F_a(b+1)(X, boxes) as [K, 2, R], U as [K, R, 1])   (b = 0)
//
// (R = J·C·PH·PW; F_11 laid out y-major for the first, x-major for the
// second, so that the new coordinate is the outer channel index), and that
// of <V, F_abᵀ(G, boxes)> = <F_ab(V, boxes), G> the same with X = V and
// U = G. Order 2 in one coordinate is zero, so F_11 does not depend on the
// boxes. The products, reshapes and the column embedding are differentiable
// ops, so the family closes: every order comes from these kernels and
// MatMul's. The batch-index column gets zero. PSRoIAlign's family
// (psRoIAlignFamily) is the same with its sampling and position-sensitive
// channels, and shares the code below (boxFamily). The members' CUDA twins
// (roialignbox_cuda.go, internal/cuda/kernels/gops/roialignbox.cu) are attached by
// boxMemberSpecs from a boxDerivGPU, MultiScaleRoIAlign's level members'
// too (multiscale_cuda.go).
type roiAlignFamily struct{ g *cpu.RoIAlignGeom }

// specs are member F_ab (a, b ∈ {0, 1}) of the family and its transpose
// F_abᵀ, a linear pair in X; xMajor orders F_11's channels x-major. F_00
// is RoIAlign, F(X, boxes) → [K, C, PH, PW], with Fᵀ(G, boxes) → X's
// shape: each is the other's backward in X.
func (f roiAlignFamily) specs(a, b int, xMajor bool) (fwd, adj ad.OpSpec) {
	g := f.g
	in := tensor.Shape{g.N, g.C, g.H, g.W}
	if a+b > 0 {
		J := 1 << (a + b)
		return boxMemberSpecs(fmt.Sprintf("RoIAlignBoxDeriv%d%d", a, b), fmt.Sprintf("x_major=%t, %s", xMajor, f.params()),
			in, func(k int) tensor.Shape { return tensor.Shape{k, J * g.C, g.PH, g.PW} }, a, b,
			boxDerivKernels(g, a, b, xMajor, cpu.RoIAlignBoxDeriv[float32], cpu.RoIAlignBoxDeriv[float64]),
			boxDerivKernels(g, a, b, xMajor, cpu.RoIAlignBoxDerivTranspose[float32], cpu.RoIAlignBoxDerivTranspose[float64]),
			f, &boxDerivGPU{ra: g, a: a, b: b, xMajor: xMajor})
	}
	shape, tshape := roiPairShapes("RoIAlign", in, func(k int) tensor.Shape { return tensor.Shape{k, g.C, g.PH, g.PW} })
	fwd = ad.OpSpec{
		Name:        "RoIAlign",
		Params:      f.params(),
		InputDims:   []int{4, 2},
		OutputDims:  4,
		Shape:       shape,
		Kernel:      boxKernels(g, cpu.RoIAlignForward[float32], cpu.RoIAlignForward[float64]),
		BackwardFor: boxFamilyBackward(f, 0, 0, false),
	}
	adj = fwd
	adj.Name, adj.Shape = "RoIAlignTranspose", tshape
	adj.Kernel = boxKernels(g, cpu.RoIAlignTranspose[float32], cpu.RoIAlignTranspose[float64])
	adj.KernelOverwrites = true
	adj.BackwardFor = boxFamilyBackward(f, 0, 0, true)
	return ad.LinearPair(withCUDA(fwd, roiAlignGPU{g, false}), withCUDA(adj, roiAlignGPU{g, true}))
}

// params describes RoIAlign's geometry for op hashes and printouts.
func (f roiAlignFamily) params() string {
	g := f.g
	return fmt.Sprintf("input=(%d,%d,%d,%d), output_size=(%d,%d), spatial_scale=%v, sampling_ratio=%d, aligned=%t",
		g.N, g.C, g.H, g.W, g.PH, g.PW, g.Scale, g.SamplingRatio, g.Aligned)
}

// roiAlignGPU is what the CUDA twins of RoIAlign and its transpose need
// (roialign_cuda.go).
type roiAlignGPU struct {
	g         *cpu.RoIAlignGeom
	transpose bool
}

// boxFamily is a RoI op's family closed under differentiation w.r.t. its
// boxes, as roiAlignFamily's: RoIAlign's, PSRoIAlign's (psRoIAlignFamily)
// and each MultiScaleRoIAlign level's (levelFamily). The rest of this file
// is the code they share.
type boxFamily interface {
	// specs are member F_ab (F_00 the op itself) and its transpose, a
	// linear pair in the first input; xMajor orders F_11's channels
	// x-major.
	specs(a, b int, xMajor bool) (fwd, adj ad.OpSpec)
}

// boxDerivGPU is what the CUDA twins of a box member F_ab of RoIAlign (ra)
// or PSRoIAlign (ps) and of its transpose need (roialignbox_cuda.go). With
// pyr it is MultiScaleRoIAlign's (multiscale_cuda.go): the member of level
// level (ra = its geometry; a = b = 0 is the level's RoIAlign), or with
// level < 0 the whole forward.
type boxDerivGPU struct {
	ra        *cpu.RoIAlignGeom
	ps        *cpu.PoolGeom
	a, b      int
	xMajor    bool
	transpose bool
	pyr       *pyramidGeom
	level     int
}

// boxMemberSpecs are member F_ab (a + b >= 1) of a box family, named name,
// on input shape in and with result pooled(K), and its transpose: a linear
// pair in the first input whose box gradients are those of the family
// members. With gpu they get CUDA twins (gpu for F_ab, its transpose flag
// set for F_abᵀ).
func boxMemberSpecs(name, params string, in tensor.Shape, pooled func(k int) tensor.Shape, a, b int, fwd, adj ad.Kernel, fam boxFamily, gpu *boxDerivGPU) (f, ft ad.OpSpec) {
	shape, tshape := roiPairShapes(name, in, pooled)
	f = ad.OpSpec{
		Name:       name,
		Params:     params,
		InputDims:  []int{4, 2},
		OutputDims: 4,
		// F_11 is piecewise constant in the boxes.
		DiffWRT:     []bool{true, a+b < 2},
		Shape:       shape,
		Kernel:      fwd,
		BackwardFor: boxFamilyBackward(fam, a, b, false),
	}
	ft = f
	ft.Name, ft.Shape, ft.Kernel = name+"Transpose", tshape, adj
	ft.BackwardFor = boxFamilyBackward(fam, a, b, true)
	if gpu != nil {
		gt := *gpu
		gt.transpose = true
		f, ft = withCUDA(f, *gpu), withCUDA(ft, gt)
	}
	return ad.LinearPair(f, ft)
}

// boxDerivKernels is the ad.Kernel of a member's CPU kernel
// k(g, a, b, xMajor, data, boxes, out), for inputs (data, boxes).
func boxDerivKernels[G any](g G, a, b int, xMajor bool, k32 func(G, int, int, bool, []float32, []float32, []float32) error, k64 func(G, int, int, bool, []float64, []float64, []float64) error) ad.Kernel {
	return boxKernels(g,
		func(g G, x, boxes, out []float32) error { return k32(g, a, b, xMajor, x, boxes, out) },
		func(g G, x, boxes, out []float64) error { return k64(g, a, b, xMajor, x, boxes, out) })
}

// boxFamilyBackward is the box part of the Backward of F_ab (transpose
// false: inputs X, boxes) or F_abᵀ (inputs G, boxes); LinearPair adds the
// first input's gradient.
func boxFamilyBackward(fam boxFamily, a, b int, transpose bool) func(in gorgonia.Nodes, _, up *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
	return func(in gorgonia.Nodes, _, up *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
		grads := make(gorgonia.Nodes, len(in))
		if !want[1] || a+b == 2 {
			return grads, nil
		}
		x, u := in[0], up
		if transpose {
			x, u = up, in[0]
		}
		var err error
		grads[1], err = boxFamilyGrad(fam, a, b, x, in[1], u)
		return grads, err
	}
}

// boxFamilyGrad is the gradient w.r.t. boxes [K, 5] of <U, F_ab(X, boxes)>.
func boxFamilyGrad(fam boxFamily, a, b int, x, boxes, u *gorgonia.Node) (*gorgonia.Node, error) {
	k := boxes.Shape()[0]
	r := u.Shape().TotalSize() / max(k, 1)
	var total *gorgonia.Node
	for dir := 0; dir < 2; dir++ { // 0: y1, y2; 1: x1, x2
		na, nb := a+1-dir, b+dir
		if na > 1 || nb > 1 {
			continue
		}
		next, _ := fam.specs(na, nb, dir == 1)
		d, err := ad.Apply(next, x, boxes) // [K, 2·J·C, PH, PW], the new coordinate outermost
		if err != nil {
			return nil, err
		}
		if d, err = ad.Reshape(d, k, 2, r); err != nil {
			return nil, err
		}
		u3, err := ad.Reshape(u, k, r, 1)
		if err != nil {
			return nil, err
		}
		if d, err = nn.MatMul(d, u3, false, false); err != nil {
			return nil, err
		}
		embed, _ := boxCoordSpecs(k, dir)
		if d, err = ad.Apply(embed, d); err != nil {
			return nil, err
		}
		if total == nil {
			total = d
		} else if total, err = gorgonia.Add(total, d); err != nil {
			return nil, fmt.Errorf("gops: %s box gradient: %w", next.Name, err)
		}
	}
	return total, nil
}

// boxCoordSpecs are BoxCoordEmbed ([K, 2, 1] → [K, 5], zeros but columns
// (2, 4) for dir 0, the y coordinates, or (1, 3) for dir 1, the x
// coordinates) and BoxCoordSelect ([K, 5] → those columns, [K, 2, 1]): a
// linear pair.
func boxCoordSpecs(k, dir int) (embed, sel ad.OpSpec) {
	mk := func(name string, from, to tensor.Shape, isEmbed bool) ad.OpSpec {
		return ad.OpSpec{
			Name: name, Params: fmt.Sprintf("K=%d, dir=%d", k, dir), InputDims: []int{from.Dims()}, OutputDims: to.Dims(),
			Shape: func(in []tensor.Shape) (tensor.Shape, error) {
				if !in[0].Eq(from) {
					return nil, fmt.Errorf("gops: %s: input %v, want %v", name, in[0], from)
				}
				return to.Clone(), nil
			},
			Kernel: ad.Floats(boxCoordKernel[float32](dir, isEmbed), boxCoordKernel[float64](dir, isEmbed)),
		}
	}
	return ad.LinearPair(withCUDA(mk("BoxCoordEmbed", tensor.Shape{k, 2, 1}, tensor.Shape{k, 5}, true), boxCoordGPU{k, dir, true}),
		withCUDA(mk("BoxCoordSelect", tensor.Shape{k, 5}, tensor.Shape{k, 2, 1}, false), boxCoordGPU{k, dir, false}))
}

// boxCoordGPU is what the CUDA twins of BoxCoordEmbed and BoxCoordSelect
// need (roialignbox_cuda.go).
type boxCoordGPU struct {
	k, dir int
	embed  bool
}

// boxCoordKernel is cpu.BoxCoords: BoxCoordEmbed (embed) or
// BoxCoordSelect.
func boxCoordKernel[T ad.Float](dir int, embed bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		if embed {
			cpu.BoxCoords(dir, true, in[0].Data, out.Data)
		} else {
			cpu.BoxCoords(dir, false, out.Data, in[0].Data)
		}
		return nil
	}
}

// boxKernels is the ad.Kernel of a RoI op's CPU kernel k(g, data, boxes,
// out), for inputs (data, boxes).
func boxKernels[G any](g G, k32 func(G, []float32, []float32, []float32) error, k64 func(G, []float64, []float64, []float64) error) ad.Kernel {
	return ad.Floats(boxKernel(g, k32), boxKernel(g, k64))
}

func boxKernel[G any, T ad.Float](g G, k func(G, []T, []T, []T) error) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error { return k(g, in[0].Data, in[1].Data, out.Data) }
}
