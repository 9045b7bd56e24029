package nn

import (
	"fmt"
	"slices"
	"sync"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BatchNormOpts are BatchNorm's options, named as in
// torch.nn.functional.batch_norm. The zero value is torch's defaults in
// eval mode.
type BatchNormOpts struct {
	// Training normalises with the batch's statistics and updates the
	// running ones; false (eval) normalises with the running ones.
	Training bool
	// Momentum of the running statistics' update; 0 means torch's 0.1
	// (so torch's momentum 0, statistics frozen, is not expressible: pass
	// nil running statistics instead).
	Momentum float64
	// Eps added to the variance; 0 means torch's 1e-5.
	Eps float64
	// Mask, if not nil, is a [N] node of the input's dtype holding 0s and
	// 1s, in training: the batch statistics and the running update are
	// those of the samples with 1, as torch's batch_norm of those samples
	// alone (the others are normalised with the same statistics). It is
	// for batches padded to a fixed size, as the sampled RoIs of
	// detection's Faster R-CNN v2 box head. With a mask all 0 the
	// statistics are 0 and the running ones stay; with one value in all,
	// the running ones stay (torch refuses that batch). The mask is a
	// constant of the derivative; an entry other than 0 or 1 fails the
	// run. Eval mode ignores its values (its shape, dtype and graph are
	// still checked). torch has no such argument.
	Mask *gorgonia.Node
}

// BatchNorm is torch.nn.functional.batch_norm for input [N, C, *]: each
// channel normalised, (x − μ)/√(σ² + eps), then times weight and plus bias
// ([C] each, nil for none).
//
// In training, μ and σ² are the channel's mean and biased variance over
// the batch and the other axes, and each run of the graph updates
// runningMean and runningVar ([C], the input's dtype, may be nil for
// none) in place once, as torch: running = (1 − Momentum)·running +
// Momentum·batch, with the unbiased variance. In eval mode μ and σ² are
// the running ones, read when the graph runs (nodes holding the same
// tensors), and required.
//
// Training runs as one fused op (statistics and normalisation per channel
// in cache) whose first-order gradients are torch's batch_norm_backward
// as fused ops (batchnormfused.go); eval as one per-channel affine op. In
// the cuda build training is a graph of per-channel sums, their broadcast
// and Gorgonia's elementwise ops; with a Mask, the CPU build's fused ops
// take it as an input, the cuda build's graph multiplies by it and adds
// two small host ops (batchnormmask.go). Differentiable
// to every order w.r.t. input, weight and bias, the batch statistics
// included in training.
//
// Errors when the node is built: input not float of rank ≥ 2, weight or
// bias not [C] of its dtype, running statistics not contiguous [C]
// tensors of its dtype (or nil in eval mode), Momentum outside [0, 1], Eps
// negative, a Mask not a [N] node of the input's dtype and graph, a
// training batch with one value per channel and no Mask (torch refuses it
// too). An input with no elements gives an empty result.
func BatchNorm(input, weight, bias *gorgonia.Node, runningMean, runningVar *tensor.Dense, opts BatchNormOpts) (*gorgonia.Node, error) {
	const name = "BatchNorm"
	s, err := normArgs(name, input, weight, bias, 2, 1)
	if err != nil {
		return nil, err
	}
	n, c := s[0], s[1]
	l := s.TotalSize() / max(n*c, 1)
	if err := paramShapes(name, tensor.Shape{c}, weight, bias); err != nil {
		for _, p := range []*gorgonia.Node{weight, bias} {
			if p != nil {
				return nil, fmt.Errorf("%w%s", err, nhwcHint(input, p.Shape()[0]))
			}
		}
		return nil, err
	}
	for _, r := range []struct {
		t    *tensor.Dense
		what string
	}{{runningMean, "runningMean"}, {runningVar, "runningVar"}} {
		switch {
		case r.t == nil && !opts.Training:
			return nil, fmt.Errorf("nn: %s: %s is nil in eval mode", name, r.what)
		case r.t != nil && (!slices.Equal(r.t.Shape(), tensor.Shape{c}) || r.t.Dtype() != input.Dtype()):
			hint := ""
			if r.t.Dims() == 1 {
				hint = nhwcHint(input, r.t.Shape()[0])
			}
			return nil, fmt.Errorf("nn: %s: %s %v %v, want (%d) %v%s", name, r.what, r.t.Dtype(), r.t.Shape(), c, input.Dtype(), hint)
		case r.t != nil && (r.t.IsView() || r.t.IsMaterializable() || !r.t.DataOrder().IsRowMajor()):
			return nil, fmt.Errorf("nn: %s: %s must be a contiguous tensor, not a view (it is updated in place)", name, r.what)
		}
	}
	momentum := opts.Momentum
	if momentum == 0 {
		momentum = 0.1
	}
	if !(momentum >= 0 && momentum <= 1) {
		return nil, fmt.Errorf("nn: %s: Momentum %v must be in [0, 1]", name, opts.Momentum)
	}
	eps, err := normEps(name, opts.Eps)
	if err != nil {
		return nil, err
	}
	if opts.Mask != nil {
		if err := checkMask(name, input, opts.Mask, s); err != nil {
			return nil, err
		}
	}
	if ad.NoElements(input) { // (statistics of nothing: the running ones stay)
		return ad.EmptyResult(name, s, 0, fillTwin, input, weight, bias)
	}
	if opts.Training && n*l <= 1 && opts.Mask == nil {
		return nil, fmt.Errorf("nn: %s: training needs more than one value per channel, got input %v", name, s)
	}
	g := bnGeom{s: s.Clone(), n: n, c: c, l: l, eps: eps}
	if !opts.Training {
		return batchNormEval(input, weight, bias, runningMean, runningVar, g)
	}
	stats := &runningStats{mean: runningMean, variance: runningVar, momentum: momentum}
	if opts.Mask != nil && fusedBatchNorm {
		g.masked = true
		return batchNormTrain(input, weight, bias, opts.Mask, g, stats)
	}
	if opts.Mask != nil {
		x3, err := ad.Reshape(input, n, c, l)
		if err != nil {
			return nil, err
		}
		y, err := batchNormMasked(x3, weight, bias, opts.Mask, g, stats)
		if err != nil {
			return nil, err
		}
		return ad.Reshape(y, s...)
	}
	if fusedBatchNorm {
		return batchNormTrain(input, weight, bias, nil, g, stats)
	}
	x3, err := ad.Reshape(input, n, c, l)
	if err != nil {
		return nil, err
	}
	y, err := batchNormComposed(x3, weight, bias, g, stats)
	if err != nil {
		return nil, err
	}
	return ad.Reshape(y, s...)
}

// batchNormComposed is training BatchNorm of x3 (the input as [N, C, L])
// from graph ops: ChannelMean, its broadcast, Gorgonia's elementwise ops
// and addBias, each a pass with its own result, differentiable to every
// order by their own derivatives. With stats, the mean's kernel updates
// the running statistics. The cuda build's training BatchNorm (the fused
// ops have no CUDA twins), and the source of BatchNormGradX's gradient
// w.r.t. x (batchnormfused.go).
func batchNormComposed(x3, weight, bias *gorgonia.Node, g bnGeom, stats *runningStats) (*gorgonia.Node, error) {
	s3 := tensor.Shape{g.n, g.c, g.l}
	_, bcast := channelSpecs(s3)
	mean, err := ad.Apply(channelMeanSpec(s3, stats), x3)
	if err != nil {
		return nil, err
	}
	b := ad.NewBuilder(x3)
	d := b.Sub(x3, b.Apply(bcast, mean))
	variance := b.Apply(channelMeanSpec(s3, nil), b.Square(d))
	inv := b.Inverse(b.Sqrt(b.AddConst(variance, g.eps))) // 1/√(variance + eps)
	if weight != nil {
		inv = b.HadamardProd(inv, weight)
	}
	y := b.HadamardProd(d, b.Apply(bcast, inv))
	if bias != nil {
		y = b.Do(func() (*gorgonia.Node, error) { return addBias(y, bias) })
	}
	return b.Node(y)
}

// batchNormEval is eval BatchNorm, a per-channel affine step:
// ChannelAffine(x, a, c) with a = w/√(σ² + eps) and c = b − μ·a computed
// by graph ops on [C] from the running statistics (nodes holding those
// tensors, read when the graph runs); in the CPU build as BatchNormEval,
// whose gradients share a pass (batchnormfused.go). Differentiable to
// every order (normaffine.go's family and Gorgonia's elementwise ops).
func batchNormEval(input, weight, bias *gorgonia.Node, runningMean, runningVar *tensor.Dense, g bnGeom) (*gorgonia.Node, error) {
	gr := input.Graph()
	mean := gorgonia.NewTensor(gr, input.Dtype(), 1, gorgonia.WithShape(g.c), gorgonia.WithValue(runningMean), gorgonia.WithName(fmt.Sprintf("runningMean%p", runningMean)))
	variance := gorgonia.NewTensor(gr, input.Dtype(), 1, gorgonia.WithShape(g.c), gorgonia.WithValue(runningVar), gorgonia.WithName(fmt.Sprintf("runningVar%p", runningVar)))
	b := ad.NewBuilder(input)
	scale := b.Inverse(b.Sqrt(b.AddConst(variance, g.eps)))
	if weight != nil {
		scale = b.HadamardProd(scale, weight)
	}
	shift := b.Neg(b.HadamardProd(mean, scale))
	if bias != nil {
		shift = b.Add(bias, shift)
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	if !fusedBatchNorm {
		return channelAffine(g.s, g.chans(), input, scale, shift)
	}
	return ad.Apply(batchNormEvalSpec(g), input, scale, shift)
}

// runningStats are the running mean and variance a training BatchNorm
// updates once per run.
type runningStats struct {
	mu             sync.Mutex
	mean, variance *tensor.Dense
	momentum       float64
}

// channelMeanSpec is the per-channel mean of [N, C, L] (ChannelSum / N·L,
// its gradient ChannelBroadcast / N·L). With stats, its kernel also
// updates the running statistics from the values it averages.
func channelMeanSpec(s tensor.Shape, stats *runningStats) ad.OpSpec {
	n, c, l := s[0], s[1], s[2]
	k := 1 / float64(n*l)
	return withCUDA(ad.OpSpec{
		Name: "ChannelMean", Params: fmt.Sprintf("%v %p", s, stats), InputDims: []int{3}, OutputDims: 1,
		Shape:  ad.FixedShape("nn: ChannelMean", s, tensor.Shape{c}),
		Kernel: ad.Floats(channelMeanKernel[float32](n, c, l, stats), channelMeanKernel[float64](n, c, l, stats)),
		Backward: func(_ gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			_, bc := channelSpecs(s)
			b := ad.NewBuilder(u)
			return b.Nodes(b.Scale(b.Apply(bc, u), k))
		},
	}, channelMeanGPU{n, c, l, stats})
}

// channelMeanKernel is cpu.ChannelMean, updating stats when not nil.
func channelMeanKernel[T ad.Float](n, c, l int, stats *runningStats) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		var update func(ci int, mean, unbiased float64)
		if stats != nil {
			update = stats.update
		}
		cpu.ChannelMean(n, c, l, out.Data, in[0].Data, update)
		return nil
	}
}

// update moves channel ci's running statistics towards a batch's mean and
// unbiased variance.
func (r *runningStats) update(ci int, mean, unbiased float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range []struct {
		d *tensor.Dense
		v float64
	}{{r.mean, mean}, {r.variance, unbiased}} {
		if t.d == nil {
			continue
		}
		switch d := t.d.Data().(type) {
		case []float32:
			d[ci] = float32((1-r.momentum)*float64(d[ci]) + r.momentum*t.v)
		case []float64:
			d[ci] = (1-r.momentum)*d[ci] + r.momentum*t.v
		}
	}
}

// The CUDA twin's descriptor (launch code in the *_cuda.go files; withCUDA
// ignores it in the CPU build).

// channelMeanGPU is BatchNorm's ChannelMean on [n, c, l], updating stats
// (if not nil) on the host from the device's statistics (norm_cuda.go).
type channelMeanGPU struct {
	n, c, l int
	stats   *runningStats
}
