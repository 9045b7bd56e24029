package nn

import (
	"sync/atomic"

	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/tensor"
)

// The CUDA twins' descriptors: what each op's twin needs to know besides
// its inputs, given to withCUDA where the op's spec is built. In the cuda
// build each has a launch method (the *_cuda.go files) that runs its
// kernels (internal/cuda/kernels/nn/*.cu); elsewhere withCUDA ignores them (nocuda.go).

// convGPU is a member of Conv2d's family: im2col / col2im kernels and
// cuBLAS products (conv_cuda.go).
type convGPU struct {
	g    cpu.ConvGeom
	mode convMode
	bias bool // convForward with a third input, the bias, added in place
}

// channelKind picks one of the per-channel ops on [N, C, L].
type channelKind int

const (
	channelBiasAdd   channelKind = iota // BiasAdd: x + b[c]
	channelSum                          // ChannelSum: [N, C, L] → [C]
	channelBroadcast                    // ChannelBroadcast: [C] → [N, C, L]
)

// channelGPU is BiasAdd, ChannelSum or ChannelBroadcast on [n, c, l]
// (norm_cuda.go).
type channelGPU struct {
	n, c, l int
	kind    channelKind
}

// channelMeanGPU is BatchNorm's ChannelMean on [n, c, l], updating stats
// (if not nil) on the host from the device's statistics (norm_cuda.go).
type channelMeanGPU struct {
	n, c, l int
	stats   *runningStats
}

// rowNormKind picks one of the row normalisation's ops (rownorm.go).
type rowNormKind int

const (
	rowNormForward rowNormKind = iota // RowNorm: (x − μ)·r
	rowNormGrad                       // RowNormGrad(x, u)
	rowNormInvStd                     // RowInvStd: r per row
)

// rowNormGPU is RowNorm, RowNormGrad or RowInvStd on rows of n elements
// (norm_cuda.go).
type rowNormGPU struct {
	rows, n int
	eps     float64
	kind    rowNormKind
}

// channelAffineGPU is ChannelAffine on g, with a weight and a bias input
// as hasW and hasB say (norm_cuda.go).
type channelAffineGPU struct {
	g          chanGeom
	hasW, hasB bool
}

// groupNormAffineGPU is GroupNorm's fused op: RowNorm's kernel, then
// ChannelAffine's in place on its result (norm_cuda.go).
type groupNormAffineGPU struct {
	row rowNormGPU
	aff channelAffineGPU
}

// groupNormGradKind picks one of GroupNorm's gradient ops (groupnorm.go).
type groupNormGradKind int

const (
	groupNormGradXKind groupNormGradKind = iota // GroupNormGradX
	groupNormGradWKind                          // GroupNormGradW
	groupNormGradBKind                          // GroupNormGradB (always with stats)
	groupNormStatsKind                          // GroupNormStats
)

// groupNormGradGPU is one of GroupNorm's gradient ops: with stats (the
// last input GroupNormStats) their kernels on the statistics, without the
// unfused kernels through a temporary (norm_cuda.go).
type groupNormGradGPU struct {
	rg    rowGeom
	cg    chanGeom
	kind  groupNormGradKind
	stats bool
}

// channelReduceGPU is ChannelDot (dot) or ChannelTotal on g (norm_cuda.go).
type channelReduceGPU struct {
	g   chanGeom
	dot bool
}

// poolKind picks one of max pooling's ops.
type poolKind int

const (
	poolArgmax     poolKind = iota // the argmax index
	poolGather                     // the gather by argmax
	poolScatterAdd                 // its transpose
	poolEmptyFill                  // −Inf where a window is empty
)

// maxPoolGPU is one of MaxPool2d's (and AdaptiveMaxPool2d's) ops on
// geometry g (pool_cuda.go).
type maxPoolGPU struct {
	g    *cpu.Pool2dGeom
	kind poolKind
}

// avgPoolGPU is AvgPool2d (or AdaptiveAvgPool2d) on geometry g, or with
// !forward its transpose (pool_cuda.go).
type avgPoolGPU struct {
	g       *cpu.Pool2dGeom
	div     cpu.AvgDivisor
	forward bool
}

// interpGPU is Interpolate on geometry g, or with !forward its transpose
// (interpolate_cuda.go).
type interpGPU struct {
	g       *cpu.InterpGeom
	forward bool
}

// softmaxGPU is Softmax (or LogSoftmax with log) along lines of a shape
// split outer × n × inner (softmax_cuda.go).
type softmaxGPU struct {
	outer, n, inner int
	log             bool
}

// softmaxGradGPU is SoftmaxGrad (or LogSoftmaxGrad with log) along lines
// of a shape split outer × n × inner (softmax_cuda.go).
type softmaxGradGPU struct {
	outer, n, inner int
	log             bool
}

// axisGPU is AxisSum (sum) or AxisBroadcast on outer × n × inner
// (softmax_cuda.go).
type axisGPU struct {
	outer, n, inner int
	sum             bool
}

// pickGPU is CrossEntropy's Pick, Scatter, PickVec or ScatterVec
// (loss_cuda.go): vec and forward as pickKernel's, c classes, ignore the
// ignored target.
type pickGPU struct {
	vec, forward bool
	c, ignore    int
}

// lseKind picks one of CrossEntropy's row ops (lse.go).
type lseKind int

const (
	lseForward lseKind = iota // LogSumExp: [rows, n] → [rows]
	lseNLL                    // NLL(x, lse, t)
	lseGrad                   // LogSumExpGrad(x, lse, U)
	lseNLLGrad                // NLLGrad(x, lse, U, t)
	lseMask                   // Mask(v, t): v, 0 where t is ignored
)

// lseGPU is LogSumExp, NLL or their gradients on rows of n elements
// (loss_cuda.go); ignore is the ignored target of NLL, NLLGrad and Mask.
type lseGPU struct {
	rows, n int
	kind    lseKind
	ignore  int
}

// unaryKind picks one of the elementwise ops with a twin.
type unaryKind int

const (
	unarySigmoid    unaryKind = iota // the stable Sigmoid
	unaryLeaky                       // LeakyReLU with slope param
	unaryLeakySlope                  // its slope: 1 or param
	unaryErf                         // erf
	unarySoftplus                    // the stable Softplus
	unarySmoothL1                    // SmoothL1d<order> with beta param
)

// unaryGPU is an elementwise op of one input (activation_cuda.go): kind,
// its float parameter (a slope or beta) and SmoothL1's derivative order.
type unaryGPU struct {
	kind  unaryKind
	param float64
	order int
}

// concatGPU is Concat into shape out along axis (layout_cuda.go).
type concatGPU struct {
	out  tensor.Shape
	axis int
}

// narrowGPU is Narrow (fwd) or NarrowEmbed on outer blocks of size·inner
// elements, [start, start+length) along the axis (layout_cuda.go).
type narrowGPU struct {
	outer, inner, size, start, length int
	fwd                               bool
}

// dropoutGPU is Dropout's mask, drawn on the host from the stream that
// dropoutKernel uses (seed and the shared run counter) (dropout_cuda.go).
type dropoutGPU struct {
	p    float64
	seed int64
	runs *atomic.Uint64
}

// fillGPU is a result filled with v (the *Empty ops of empty.go)
// (layout_cuda.go).
type fillGPU struct{ v float64 }

// gridGPU is member kind (a, b) of GridSample's family with n inputs
// (gridsample_cuda.go; its launches are gridGPUPlan's, gridsample_gpu.go).
type gridGPU struct {
	g       cpu.GridSampleGeom
	kind    gridKind
	a, b, n int
}

// gridLayoutGPU is GridSplit (split) or GridEmbed of half which
// (gridsample_cuda.go).
type gridLayoutGPU struct {
	which int
	split bool
}

// affineGridGPU is AffineGrid (forward) or its transpose for a grid
// [n, h, w, 2] (gridsample_cuda.go).
type affineGridGPU struct {
	n, h, w      int
	alignCorners bool
	forward      bool
}
