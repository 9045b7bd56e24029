package nn

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// checkMask checks BatchNormOpts.Mask against the input's shape s.
func checkMask(name string, input, mask *gorgonia.Node, s tensor.Shape) error {
	switch {
	case mask.Graph() != input.Graph():
		return fmt.Errorf("nn: %s: Mask is not in the input's graph", name)
	case mask.Dtype() != input.Dtype():
		return fmt.Errorf("nn: %s: Mask is %v, want the input's %v", name, mask.Dtype(), input.Dtype())
	case mask.IsScalar() || mask.Shape().Dims() != 1 || mask.Shape()[0] != s[0]:
		return fmt.Errorf("nn: %s: Mask %v, want (%d), one entry per sample of input %v", name, mask.Shape(), s[0], s)
	}
	return nil
}

// batchNormMasked is training BatchNorm of x3 ([N, C, L]) whose batch
// statistics are those of the samples with mask 1 (mask [N] of 0s and
// 1s), composed as batchNormComposed: the mask broadcast to x3's shape
// (MaskBroadcast: ChannelBroadcast of [1, N, C·L] without a derivative
// w.r.t. the mask), the masked sums (ChannelSum) times
// 1/count (MaskCount, a constant of the derivative), and the running
// update of MaskedStats, an identity on the variance. Differentiable to
// every order w.r.t. x3, weight and bias; the mask is a constant. The
// cuda build's masked BatchNorm, and the source of the fused masked
// GradX's gradient w.r.t. x (batchnormfused.go).
func batchNormMasked(x3, weight, bias, mask *gorgonia.Node, g bnGeom, stats *runningStats) (*gorgonia.Node, error) {
	s3 := tensor.Shape{g.n, g.c, g.l}
	sum, bcast := channelSpecs(s3)
	_, rows := channelSpecs(tensor.Shape{1, g.n, g.c * g.l})
	// (the mask a constant of the derivative here too, as of MaskCount and
	// MaskedStats)
	rows.Name, rows.DiffWRT = "MaskBroadcast", []bool{false}
	b := ad.NewBuilder(x3)
	m := b.Do(func() (*gorgonia.Node, error) {
		r, err := ad.Apply(rows, mask)
		if err != nil {
			return nil, err
		}
		return ad.Reshape(r, g.n, g.c, g.l)
	})
	inv := b.Apply(maskCountSpec(g), mask)
	mean := b.HadamardProd(b.Apply(sum, b.HadamardProd(x3, m)), inv)
	d := b.Sub(x3, b.Apply(bcast, mean))
	variance := b.HadamardProd(b.Apply(sum, b.HadamardProd(b.Square(d), m)), inv)
	variance = b.Apply(maskedStatsSpec(g, stats), mean, variance, mask)
	scale := b.Inverse(b.Sqrt(b.AddConst(variance, g.eps))) // 1/√(variance + eps)
	if weight != nil {
		scale = b.HadamardProd(scale, weight)
	}
	y := b.HadamardProd(d, b.Apply(bcast, scale))
	if bias != nil {
		y = b.Do(func() (*gorgonia.Node, error) { return addBias(y, bias) })
	}
	return b.Node(y)
}

// maskCountSpec is MaskCount: the mask [N] (0s and 1s) to [C] entries
// 1/(L·Σ mask), or 0 when the mask is all 0; no derivative. Its kernel
// fails on another mask value.
func maskCountSpec(g bnGeom) ad.OpSpec {
	return ad.OpSpec{
		Name: "MaskCount", Params: fmt.Sprintf("%d %d %d", g.n, g.c, g.l), InputDims: []int{1}, OutputDims: 1,
		DiffWRT: []bool{false},
		Shape:   ad.FixedShape("nn: MaskCount", tensor.Shape{g.n}, tensor.Shape{g.c}),
		Kernel:  ad.Floats(maskCountKernel[float32](g), maskCountKernel[float64](g)),
		Backward: func(in gorgonia.Nodes, _, _ *gorgonia.Node) (gorgonia.Nodes, error) {
			return make(gorgonia.Nodes, len(in)), nil
		},
		KernelOverwrites: true,
	}
}

func maskCountKernel[T ad.Float](g bnGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		_, n, err := maskKeep(in[0].Data)
		if err != nil {
			return err
		}
		var v T
		if n > 0 {
			v = T(1 / float64(n*g.l))
		}
		for i := range out.Data {
			out.Data[i] = v
		}
		return nil
	}
}

// maskKeep reads a mask: which samples it keeps and how many; an entry
// other than 0 or 1 is an error.
func maskKeep[T ad.Float](mask []T) ([]bool, int, error) {
	keep, n := make([]bool, len(mask)), 0
	for i, v := range mask {
		switch v {
		case 0:
		case 1:
			keep[i] = true
			n++
		default:
			return nil, 0, fmt.Errorf("nn: BatchNorm: Mask[%d] = %v, want 0 or 1", i, v)
		}
	}
	return keep, n, nil
}

// maskedStatsSpec is MaskedStats(mean, variance, mask): the variance
// [C], unchanged (its gradient passes through; mean and mask are
// constants of it), its kernel moving stats (if not nil) towards mean and
// the unbiased variance of the count L·Σ mask, when that count is above 1.
func maskedStatsSpec(g bnGeom, stats *runningStats) ad.OpSpec {
	return ad.OpSpec{
		Name: "MaskedStats", Params: fmt.Sprintf("%d %d %d %p", g.n, g.c, g.l, stats), InputDims: []int{1, 1, 1}, OutputDims: 1,
		DiffWRT: []bool{false, true, false},
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			c, n := tensor.Shape{g.c}, tensor.Shape{g.n}
			if !in[0].Eq(c) || !in[1].Eq(c) || !in[2].Eq(n) {
				return nil, fmt.Errorf("nn: MaskedStats: inputs %v, %v, %v, want %v, %v, %v", in[0], in[1], in[2], c, c, n)
			}
			return c.Clone(), nil
		},
		Kernel: ad.Floats(maskedStatsKernel[float32](g, stats), maskedStatsKernel[float64](g, stats)),
		Backward: func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			return gorgonia.Nodes{nil, u, nil}, nil
		},
		KernelOverwrites: true,
	}
}

func maskedStatsKernel[T ad.Float](g bnGeom, stats *runningStats) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		copy(out.Data, in[1].Data)
		_, n, err := maskKeep(in[2].Data)
		if err != nil || stats == nil || n*g.l < 2 {
			return err
		}
		cnt := float64(n * g.l)
		for ci := range out.Data {
			stats.update(ci, float64(in[0].Data[ci]), float64(in[1].Data[ci])*cnt/(cnt-1))
		}
		return nil
	}
}
