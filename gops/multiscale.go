package gops

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BoxesToRoIs turns per-image box lists into RoI rows, as torchvision's
// convert_boxes_to_roi_format (torchvision.ops._utils; poolers.py's
// _convert_to_roi_format): boxes[i] is [Li, 4] with rows (x1, y1, x2, y2)
// of image i; the result is [ΣLi, 5] with rows (i, x1, y1, x2, y2), image
// 0's boxes first. RoIAlign, RoIPool, PSRoIAlign and PSRoIPool take the
// result as their boxes.
//
// The result is differentiable w.r.t. every boxes[i] to every order (its
// gradient is the upstream gradient's rows of image i without the index
// column; that one is constant). Images without boxes ([0, 4]) are allowed
// and contribute no rows.
//
// Errors: no box lists, a nil one, one not [L, 4], dtypes that differ or
// are not float32/float64.
func BoxesToRoIs(boxes []*gorgonia.Node) (*gorgonia.Node, error) {
	const name = "BoxesToRoIs"
	if len(boxes) == 0 {
		return nil, fmt.Errorf("gops: %s: no box lists (one per image)", name)
	}
	counts := make([]int, len(boxes))
	for i, b := range boxes {
		arg := fmt.Sprintf("boxes[%d]", i)
		if err := checkFloatNode(name, arg, b, 2); err != nil {
			return nil, err
		}
		if s := b.Shape(); s[1] != 4 {
			return nil, fmt.Errorf("gops: %s: %s must be [L, 4] (x1, y1, x2, y2), got %v", name, arg, s)
		}
		if b.Dtype() != boxes[0].Dtype() {
			return nil, fmt.Errorf("gops: %s: %s dtype %v differs from boxes[0] dtype %v", name, arg, b.Dtype(), boxes[0].Dtype())
		}
		counts[i] = b.Shape()[0]
	}
	return ad.Apply(boxesToRoIsSpec(counts), boxes...)
}

// boxesToRoIsSpec is BoxesToRoIs for images with counts[i] boxes. It is
// affine in the boxes: R(b_0, ..., b_n) = c + Σ E_i(b_i), with c the index
// column and E_i the embedding of image i's boxes into its rows, columns
// 1..4 (roiRowsSpecs); the gradient w.r.t. b_i is E_iᵀ(G).
func boxesToRoIsSpec(counts []int) ad.OpSpec {
	k := 0
	dims := make([]int, len(counts))
	for i, c := range counts {
		k += c
		dims[i] = 2
	}
	return withCUDA(ad.OpSpec{
		Name:       "BoxesToRoIs",
		Params:     fmt.Sprintf("counts=%v", counts),
		InputDims:  dims,
		OutputDims: 2,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			for i, s := range in {
				if !s.Eq(tensor.Shape{counts[i], 4}) {
					return nil, fmt.Errorf("gops: BoxesToRoIs: boxes[%d] shape %v, want (%d, 4)", i, s, counts[i])
				}
			}
			return tensor.Shape{k, 5}, nil
		},
		Kernel:           ad.Floats(boxesToRoIsKernel[float32], boxesToRoIsKernel[float64]),
		KernelOverwrites: true,
		Backward: func(_ gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			gs := make(gorgonia.Nodes, len(counts))
			off := 0
			for i, c := range counts {
				_, rows := roiRowsSpecs(k, off, c)
				var err error
				if gs[i], err = ad.Apply(rows, grad); err != nil {
					return nil, err
				}
				off += c
			}
			return gs, nil
		},
	}, roisGPU{counts})
}

// roisGPU is what BoxesToRoIs' CUDA twin needs (boxops_cuda.go): the
// images' box counts.
type roisGPU struct{ counts []int }

// boxesToRoIsKernel is cpu.BoxesToRoIs.
func boxesToRoIsKernel[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	cpu.BoxesToRoIs(out.Data, tensorData(in))
	return nil
}

// roiRowsSpecs are E (an image's [n, 4] boxes into rows off..off+n,
// columns 1..4, of a zero [k, 5]) and Eᵀ (those rows and columns of a
// [k, 5]), a linear pair.
func roiRowsSpecs(k, off, n int) (embed, rows ad.OpSpec) {
	mk := func(name string, from, to tensor.Shape, fwd bool) ad.OpSpec {
		return withCUDA(ad.OpSpec{
			Name: name, Params: fmt.Sprintf("k=%d, rows [%d, %d)", k, off, off+n), InputDims: []int{2}, OutputDims: 2,
			Shape: func(in []tensor.Shape) (tensor.Shape, error) {
				if !in[0].Eq(from) {
					return nil, fmt.Errorf("gops: %s: input %v, want %v", name, in[0], from)
				}
				return to.Clone(), nil
			},
			Kernel: ad.Floats(roiRowsKernel[float32](off, n, fwd), roiRowsKernel[float64](off, n, fwd)),
		}, roiRowsGPU{k, off, n, fwd})
	}
	return ad.LinearPair(mk("RoIRowsEmbed", tensor.Shape{n, 4}, tensor.Shape{k, 5}, true),
		mk("RoIRows", tensor.Shape{k, 5}, tensor.Shape{n, 4}, false))
}

// roiRowsGPU is what the CUDA twins of RoIRowsEmbed (embed) and RoIRows
// need (boxops_cuda.go).
type roiRowsGPU struct {
	k, off, n int
	embed     bool
}

// roiRowsKernel is cpu.RoIRows: RoIRowsEmbed (embed) or RoIRows.
func roiRowsKernel[T ad.Float](off, n int, embed bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		if embed {
			cpu.RoIRows(off, n, true, in[0].Data, out.Data)
		} else {
			cpu.RoIRows(off, n, false, out.Data, in[0].Data)
		}
		return nil
	}
}

// MultiScaleRoIAlignOpts are the parameters of MultiScaleRoIAlign, named as
// in torchvision.ops.MultiScaleRoIAlign.
type MultiScaleRoIAlignOpts struct {
	// OutputSize is the (height, width) of each pooled output, in bins.
	OutputSize [2]int
	// SamplingRatio is RoIAlign's: sample points per bin side; <= 0 means
	// adaptive (ceil(roi size / output size) per box and side).
	SamplingRatio int
	// CanonicalScale and CanonicalLevel are the FPN paper's s0 and k0: a
	// box of w·h = s0² pools from level k0. 0 means 224 and 4.
	CanonicalScale, CanonicalLevel int
	// Scales, if not nil, are the feature maps' spatial scales (feature-map
	// pixels per image pixel, 1/4 for a stride-4 map), one per map.
	// nil: inferred from the sizes, as torchvision does.
	Scales []float64
}

// MultiScaleRoIAlign pools each box from one level of a feature pyramid with
// RoIAlign, choosing the level from the box's size, as
// torchvision.ops.MultiScaleRoIAlign (Faster and Mask R-CNN with an FPN).
//
// features are the L levels [N, C, Hl, Wl], finest first, all of one dtype
// (float32 or float64), batch size N and channel count C. boxes holds one
// [Li, 4] list per image (Li may be 0), rows (x1, y1, x2, y2) in image
// pixels, in the features' dtype. imageSizes are the N images' (height,
// width) before the network. The result is [ΣLi, C, OutputSize[0],
// OutputSize[1]], the boxes in order (image 0's first), each pooled by
// RoIAlign (Aligned false, the given SamplingRatio) from its level l with
// spatial scale Scales[l].
//
// Levels are torchvision's LevelMapper (FPN paper, eq. 1): with s =
// sqrt((x2−x1)·(y2−y1)) computed in the features' dtype, k =
// floor(k0 + log2(s/s0) + 1e-6), clamped to [kmin, kmax], where kmin =
// −log2(Scales[0]) and kmax = −log2(Scales[L−1]) (truncated to integers)
// and kmax − kmin + 1 must be L; the box pools from map k − kmin. A box of
// negative area (one side inverted) has no level (its s is NaN) and pools
// to zeros, as in torchvision on x86. With one feature map every box pools
// from it (torchvision calls roi_align directly then).
//
// Scales, when not given, are inferred per map as torchvision's
// _infer_scale: 2^round(log2(Hl/H)), with H the largest image height (and
// likewise W the largest width). torchvision uses the height's power of two
// only; where the width's differs (very oblong images or maps), it pools
// with the wrong scale, and MultiScaleRoIAlign returns an error instead
// that says so and suggests Scales. Nothing is cached between calls
// (torchvision's module keeps the first call's scales).
//
// How the data-dependent level choice fits a graph whose shapes are fixed
// when it is built: one op takes every feature map and the RoIs
// (BoxesToRoIs(boxes)) and computes the levels in its kernel when it runs,
// then, per level, gathers that level's RoIs, runs RoIAlign's kernel on
// them and scatters the pooled rows into the result in box order: each box
// is pooled once, as in torchvision (which also gathers and scatters per
// level), rather than once per level and masked. Each level's RoIAlign
// call copies its whole map channels-last (RoIAlign's CPU kernel), a cost
// that grows with the finest map however few boxes it pools. The op's
// gradient w.r.t. map l is M_lᵀ(G, rois), the transpose of M_l(X, rois)
// (RoIAlign of level l's boxes from X, the other rows zero; the levels
// computed again from the RoIs), and M_l and M_lᵀ are a linear pair,
// so the result is differentiable w.r.t. every feature map to every order.
//
// The result is differentiable w.r.t. the boxes too, to every order (mixed
// feature×box terms included): the level choice is piecewise constant in
// the boxes (derivative 0 where it changes level), and within its level a
// box's gradients are RoIAlign's (its doc gives the conventions at the
// kinks). They come from RoIAlign's box family run on each level's boxes,
// gathered and scattered as the forward does (members M_l,ab, linear pairs
// in X), built only when ad.Grad needs a box gradient (with CUDA twins:
// multiscale_cuda.go). BoxesToRoIs passes them on to the per-image box lists.
//
// Run-time errors name the box (boxes[i] row r, and its index in the
// concatenated list): a non-finite coordinate, or an adaptive sampling grid beyond 2²⁴ points
// (with one feature map, RoIAlign reports them).
//
// Errors when the node is built, naming the argument: no feature maps, a
// feature map that is nil, not 4-D, without pixels, or whose batch size,
// channel count or dtype differs from features[0]'s; len(boxes) or
// len(imageSizes) not N; a box list not [L, 4] or of another dtype; an
// image size not positive; OutputSize or SamplingRatio as RoIAlign
// refuses them; CanonicalScale or CanonicalLevel negative; Scales of the
// wrong length, not positive and finite in float32 (the levels' dtype) and
// the features' dtype, or not one level per map (each map half the scale
// of the one before: −log2 of the scale, truncated, is the map's FPN
// level), given or inferred; inferred scales that disagree between height
// and width.
func MultiScaleRoIAlign(features, boxes []*gorgonia.Node, imageSizes [][2]int, opts MultiScaleRoIAlignOpts) (*gorgonia.Node, error) {
	const name = "MultiScaleRoIAlign"
	if len(features) == 0 {
		return nil, fmt.Errorf("gops: %s: features is empty: no feature maps", name)
	}
	shapes := make([]tensor.Shape, len(features))
	for l, f := range features {
		arg := fmt.Sprintf("features[%d]", l)
		if err := checkFloatNode(name, arg, f, 4); err != nil {
			return nil, err
		}
		s := f.Shape()
		shapes[l] = s.Clone()
		switch {
		case f.Dtype() != features[0].Dtype():
			return nil, fmt.Errorf("gops: %s: %s dtype %v differs from features[0] dtype %v", name, arg, f.Dtype(), features[0].Dtype())
		case s[0] != shapes[0][0]:
			return nil, fmt.Errorf("gops: %s: %s %v has batch size %d, features[0] %v has %d", name, arg, s, s[0], shapes[0], shapes[0][0])
		case s[1] != shapes[0][1]:
			return nil, fmt.Errorf("gops: %s: %s %v has %d channels, features[0] %v has %d", name, arg, s, s[1], shapes[0], shapes[0][1])
		case s[2] == 0 || s[3] == 0:
			return nil, fmt.Errorf("gops: %s: %s %v has no pixels (H or W is 0)", name, arg, s)
		}
	}
	n := shapes[0][0]
	if len(boxes) != n {
		return nil, fmt.Errorf("gops: %s: boxes has %d lists, want one per image: features have batch size %d", name, len(boxes), n)
	}
	if len(imageSizes) != n {
		return nil, fmt.Errorf("gops: %s: imageSizes has %d entries, want one per image: features have batch size %d", name, len(imageSizes), n)
	}
	for i, s := range imageSizes {
		if s[0] <= 0 || s[1] <= 0 {
			return nil, fmt.Errorf("gops: %s: imageSizes[%d] = %v must be positive (height, width)", name, i, s)
		}
	}
	if err := checkOutputSize(name, opts.OutputSize); err != nil {
		return nil, err
	}
	if err := checkSamplingRatio(name, opts.SamplingRatio, opts.OutputSize); err != nil {
		return nil, err
	}
	dt := features[0].Dtype()
	scales, err := pyramidScales(name, shapes, imageSizes, opts.Scales, dt)
	if err != nil {
		return nil, err
	}
	mapper, err := newLevelMapper(name, scales, opts.CanonicalScale, opts.CanonicalLevel)
	if err != nil {
		return nil, err
	}
	for i, b := range boxes {
		if b != nil && (b.Dtype() == tensor.Float32 || b.Dtype() == tensor.Float64) && b.Dtype() != dt {
			return nil, fmt.Errorf("gops: %s: boxes[%d] dtype %v differs from the features' dtype %v", name, i, b.Dtype(), dt)
		}
	}
	rois, err := BoxesToRoIs(boxes)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, name)
	}
	if len(features) == 1 {
		return RoIAlign(features[0], rois, RoIAlignOpts{OutputSize: opts.OutputSize, SpatialScale: scales[0], SamplingRatio: opts.SamplingRatio})
	}
	g := &pyramidGeom{Pyramid: cpu.Pyramid{Mapper: mapper}}
	for _, b := range boxes {
		g.counts = append(g.counts, b.Shape()[0])
	}
	for l, s := range shapes {
		g.Levels = append(g.Levels, &cpu.RoIAlignGeom{
			N: s[0], C: s[1], H: s[2], W: s[3], PH: opts.OutputSize[0], PW: opts.OutputSize[1],
			Scale: scales[l], SamplingRatio: opts.SamplingRatio,
		})
	}
	return ad.Apply(multiScaleSpec(g), append(append(gorgonia.Nodes{}, features...), rois)...)
}

// pyramidScales returns the feature maps' spatial scales: given (checked),
// or inferred as torchvision's _infer_scale from the largest image height
// and width, with an error where height and width disagree.
func pyramidScales(name string, shapes []tensor.Shape, imageSizes [][2]int, given []float64, dt tensor.Dtype) ([]float64, error) {
	if given != nil {
		if len(given) != len(shapes) {
			return nil, fmt.Errorf("gops: %s: Scales has %d entries for %d feature maps", name, len(given), len(shapes))
		}
		for l, s := range given {
			// The levels are −log2 of the scales rounded to float32 (as
			// torchvision's _setup_scales), so a scale must survive that
			// rounding as well as the features' dtype: 1e-300 would be 0
			// there, and its level −log2(0) = +Inf no integer.
			if f := float64(float32(s)); !(s > 0) || math.IsInf(s, 0) || !(f > 0) || math.IsInf(f, 0) {
				where := "float32, the features' dtype"
				if dt != tensor.Float32 {
					where = fmt.Sprintf("%v, the features' dtype, and in float32, in which the FPN levels are computed (as torchvision's)", dt)
				}
				return nil, fmt.Errorf("gops: %s: Scales[%d] = %v must be positive and finite in %s", name, l, s, where)
			}
		}
		return append([]float64(nil), given...), nil
	}
	var maxH, maxW int
	for _, s := range imageSizes {
		maxH, maxW = max(maxH, s[0]), max(maxW, s[1])
	}
	scales := make([]float64, len(shapes))
	for l, s := range shapes {
		eh, ew := scaleExponent(s[2], maxH), scaleExponent(s[3], maxW)
		if eh != ew {
			return nil, fmt.Errorf("gops: %s: features[%d] %v on images of up to %dx%d (height x width): the height gives scale 2^%d, the width 2^%d (torchvision would use the height's); give MultiScaleRoIAlignOpts.Scales", name, l, s, maxH, maxW, eh, ew)
		}
		scales[l] = math.Ldexp(1, eh)
	}
	return scales, nil
}

// InferScale is torchvision's MultiScaleRoIAlign._infer_scale along one
// side: 2^round(log2(feature/image)), computed as torchvision computes it
// in float32 (torch.tensor(approx_scale).log2().round(), half to even),
// for a feature map of feature pixels on that side and the largest image
// of image pixels (both > 0). MultiScaleRoIAlign infers its Scales so when
// they are not given; a caller that builds a graph per set of scales
// (torchvision's are inferred from each batch's largest image) computes
// them with it.
func InferScale(feature, image int) float64 { return math.Ldexp(1, scaleExponent(feature, image)) }

// scaleExponent is torchvision's round(log2(feature / image)), computed as
// there in float32 (torch.tensor(approx_scale).log2().round(), half to
// even).
func scaleExponent(feature, image int) int {
	r := float32(float64(feature) / float64(image))
	return int(math.RoundToEven(float64(float32(math.Log2(float64(r))))))
}

// newLevelMapper makes the mapper of scales as torchvision's _setup_scales:
// kMin and kMax are −log2 of the first and last scales (in float32),
// truncated.
func newLevelMapper(name string, scales []float64, s0, k0 int) (cpu.LevelMapper, error) {
	if k0 < 0 {
		return cpu.LevelMapper{}, fmt.Errorf("gops: %s: CanonicalLevel %d must be >= 0 (0 means 4)", name, k0)
	}
	if s0 < 0 {
		return cpu.LevelMapper{}, fmt.Errorf("gops: %s: CanonicalScale %d must be >= 0 (0 means 224)", name, s0)
	}
	if s0 == 0 {
		s0 = 224
	}
	if k0 == 0 {
		k0 = 4
	}
	m := cpu.LevelMapper{KMin: cpu.ScaleLevel(scales[0]), KMax: cpu.ScaleLevel(scales[len(scales)-1]), K0: k0, S0: s0}
	for l, sc := range scales {
		if got := cpu.ScaleLevel(sc); got != m.KMin+l && m.KMax-m.KMin+1 == len(scales) {
			return cpu.LevelMapper{}, fmt.Errorf("gops: %s: scales %v put features[%d] (scale %v) at FPN level %d, want %d: each map must have half the scale of the one before", name, scales, l, sc, got, m.KMin+l)
		}
	}
	if len(scales) > 1 && m.KMax-m.KMin+1 != len(scales) {
		return cpu.LevelMapper{}, fmt.Errorf("gops: %s: scales %v give FPN levels %d to %d, not one level per each of the %d feature maps (each map must have half the scale of the one before)", name, scales, m.KMin, m.KMax, len(scales))
	}
	return m, nil
}

// pyramidGeom is what MultiScaleRoIAlign's kernels need: the levels'
// RoIAlign geometries and the level mapper (cpu.Pyramid), and the boxes
// per image, to name a box in errors.
type pyramidGeom struct {
	cpu.Pyramid
	counts []int
}

// boxName names RoI k as the user gave it, "boxes[i] row r", with what
// (if not empty) after it, then "(box k of the concatenated list)".
func (g *pyramidGeom) boxName(k int, what string) string {
	r := k
	for i, c := range g.counts {
		if r < c {
			return fmt.Sprintf("boxes[%d] row %d%s (box %d of the concatenated list)", i, r, what, k)
		}
		r -= c
	}
	return fmt.Sprintf("box %d%s", k, what)
}

// nameBox is err with the box of a *cpu.PyramidBoxError named as the
// user gave it (boxName); other errors (and nil) as they are.
func (g *pyramidGeom) nameBox(err error) error {
	var e *cpu.PyramidBoxError
	if !errors.As(err, &e) {
		return err
	}
	if e.Level < 0 {
		return fmt.Errorf("gops: MultiScaleRoIAlign: %s", g.boxName(e.Box, ": "+e.What))
	}
	return fmt.Errorf("gops: MultiScaleRoIAlign: %s, level %d: %s", g.boxName(e.Box, ""), e.Level, e.What)
}

func (g *pyramidGeom) params() string {
	var b strings.Builder
	fmt.Fprintf(&b, "k0=%d, s0=%d, levels %d..%d", g.Mapper.K0, g.Mapper.S0, g.Mapper.KMin, g.Mapper.KMax)
	for _, l := range g.Levels {
		fmt.Fprintf(&b, "; input=(%d,%d,%d,%d), spatial_scale=%v", l.N, l.C, l.H, l.W, l.Scale)
	}
	l := g.Levels[0]
	fmt.Fprintf(&b, "; output_size=(%d,%d), sampling_ratio=%d", l.PH, l.PW, l.SamplingRatio)
	return b.String()
}

func (g *pyramidGeom) pooled(k int) tensor.Shape {
	l := g.Levels[0]
	return tensor.Shape{k, l.C, l.PH, l.PW}
}

// assignFPNLevels is cpu.PyramidLevels, naming a bad box as the user gave
// it (MultiScaleRoIAlign's CUDA twin assigns its levels with it).
func assignFPNLevels[T cpu.Float](g *pyramidGeom, rois []T) ([][]int, error) {
	byLevel, err := cpu.PyramidLevels(&g.Pyramid, rois)
	return byLevel, g.nameBox(err)
}

// levelError is cpu.PyramidLevelError, naming the box as the user gave it.
func levelError[T cpu.Float](g *pyramidGeom, l int, rois []T, idx []int, err error) error {
	return g.nameBox(cpu.PyramidLevelError(&g.Pyramid, l, rois, idx, err))
}

// multiScaleSpec is MultiScaleRoIAlign's op: (maps..., rois) → [K, C, PH,
// PW], linear in every map. Its gradient w.r.t. map l is M_lᵀ(G, rois)
// (levelSpecs); w.r.t. the RoIs, the sum over the levels of the box
// gradient of <G, M_l(X_l, rois)> (boxFamilyGrad of level l's members). Each is built only
// when ad.Grad wants it.
func multiScaleSpec(g *pyramidGeom) ad.OpSpec {
	nl := len(g.Levels)
	dims := make([]int, nl+1)
	for l := range g.Levels {
		dims[l] = 4
	}
	dims[nl] = 2
	return withCUDA(ad.OpSpec{
		Name:       "MultiScaleRoIAlign",
		Params:     g.params(),
		InputDims:  dims,
		OutputDims: 4,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			for l, lg := range g.Levels {
				if want := (tensor.Shape{lg.N, lg.C, lg.H, lg.W}); !in[l].Eq(want) {
					return nil, fmt.Errorf("gops: MultiScaleRoIAlign: features[%d] shape %v, want %v", l, in[l], want)
				}
			}
			if err := checkBoxesShape("MultiScaleRoIAlign", in[nl]); err != nil {
				return nil, err
			}
			return g.pooled(in[nl][0]), nil
		},
		Kernel: ad.Floats(multiScaleKernel[float32](g), multiScaleKernel[float64](g)),
		BackwardFor: func(in gorgonia.Nodes, _, grad *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
			gs := make(gorgonia.Nodes, nl+1)
			for l := range g.Levels {
				if want[l] {
					_, ft := levelSpecs(g, l)
					var err error
					if gs[l], err = ad.Apply(ft, grad, in[nl]); err != nil {
						return nil, err
					}
				}
				if !want[nl] {
					continue
				}
				d, err := boxFamilyGrad(levelFamily{g, l}, 0, 0, in[l], in[nl], grad)
				if err != nil {
					return nil, err
				}
				if gs[nl] == nil {
					gs[nl] = d
				} else if gs[nl], err = gorgonia.Add(gs[nl], d); err != nil {
					return nil, fmt.Errorf("gops: MultiScaleRoIAlign box gradient: %w", err)
				}
			}
			return gs, nil
		},
	}, boxDerivGPU{pyr: g, level: -1})
}

// multiScaleKernel is cpu.PyramidForward of RoIAlign on every level.
func multiScaleKernel[T cpu.Float](g *pyramidGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		maps := tensorData(in[:len(g.Levels)])
		return g.nameBox(cpu.PyramidForward(&g.Pyramid, maps, in[len(g.Levels)].Data, out.Data, -1, cpu.RoIAlignForward[T]))
	}
}

// levelSpecs are M_l(X, rois) → [K, C, PH, PW] (RoIAlign of the boxes of
// level l from X, the other rows zero) and its transpose M_lᵀ(G, rois) →
// map l's shape, a linear pair.
func levelSpecs(g *pyramidGeom, l int) (f, ft ad.OpSpec) {
	return levelMemberSpecs(g, l, 0, 0, false)
}

// levelMemberSpecs are member M_l,ab(X, rois) → [K, J·C, PH, PW] of level
// l's box family, RoIAlign's member F_ab (roiAlignFamily) on the boxes of
// level l, the other rows zero, and its transpose, a linear pair; M_l,00
// is M_l. The levels are piecewise constant in the boxes, so the box
// gradients are F_ab's on each box's own level: the family closes as
// RoIAlign's does (boxFamilyGrad).
func levelMemberSpecs(g *pyramidGeom, l, a, b int, xMajor bool) (f, ft ad.OpSpec) {
	lg := g.Levels[l]
	J := 1 << (a + b)
	name, params := "MultiScaleRoIAlignLevel", fmt.Sprintf("level %d of %s", l, g.params())
	if a+b > 0 {
		name = fmt.Sprintf("MultiScaleRoIAlignLevelBoxDeriv%d%d", a, b)
		params = fmt.Sprintf("x_major=%t, %s", xMajor, params)
	}
	fwd := ad.Floats(levelKernel(g, l, cpu.RoIAlignMember[float32](a, b, xMajor)), levelKernel(g, l, cpu.RoIAlignMember[float64](a, b, xMajor)))
	adj := ad.Floats(levelTransposeKernel(g, l, cpu.RoIAlignMemberTranspose[float32](a, b, xMajor)),
		levelTransposeKernel(g, l, cpu.RoIAlignMemberTranspose[float64](a, b, xMajor)))
	return boxMemberSpecs(name, params, tensor.Shape{lg.N, lg.C, lg.H, lg.W},
		func(k int) tensor.Shape { return tensor.Shape{k, J * lg.C, lg.PH, lg.PW} }, a, b, fwd, adj, levelFamily{g, l},
		&boxDerivGPU{ra: lg, a: a, b: b, xMajor: xMajor, pyr: g, level: l})
}

// levelFamily is level l's box family (levelMemberSpecs).
type levelFamily struct {
	g *pyramidGeom
	l int
}

func (f levelFamily) specs(a, b int, xMajor bool) (fwd, adj ad.OpSpec) {
	return levelMemberSpecs(f.g, f.l, a, b, xMajor)
}

// levelKernel is cpu.PyramidForward of k on level l only (M_l,ab).
func levelKernel[T cpu.Float](g *pyramidGeom, l int, k cpu.RoIKernel[T]) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		maps := make([][]T, len(g.Levels))
		maps[l] = in[0].Data
		return g.nameBox(cpu.PyramidForward(&g.Pyramid, maps, in[1].Data, out.Data, l, k))
	}
}

// levelTransposeKernel is cpu.PyramidTranspose of k on level l (M_l,abᵀ).
func levelTransposeKernel[T cpu.Float](g *pyramidGeom, l int, k cpu.RoIKernel[T]) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		return g.nameBox(cpu.PyramidTranspose(&g.Pyramid, l, in[0].Data, in[1].Data, out.Data, k))
	}
}
