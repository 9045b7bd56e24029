package nn

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
)

// FrozenBatchNorm2d is torchvision.ops.misc.FrozenBatchNorm2d's forward:
// batch normalisation with fixed statistics and affine parameters, for
// input [N, C, H, W] and weight, bias, runningMean, runningVar [C] (all
// four required, as torchvision's buffers), per channel c:
//
//	scale = weight·(runningVar + eps)^(−1/2)
//	shift = bias − runningMean·scale
//	y     = x·scale + shift
//
// eps is used as given, 0 included: torchvision's default is 1e-5, but
// its builders of the COCO_V1 Faster R-CNN and RetinaNet v1 weights pass
// 0.0 (unlike BatchNorm's Eps, 0 does not mean 1e-5 here). scale and
// shift are [C] graph ops (AddConst, Sqrt, Inverse, HadamardProd, Sub),
// the normalisation one per-channel affine pass (ChannelAffine, as
// BatchNorm's eval mode), so the result is differentiable to every order
// w.r.t. the input and the four [C] tensors.
//
// Errors when the node is built: input not a float rank-4 node; any of the
// four [C] nodes nil, not of rank 1 and shape [C], or of another dtype or
// graph; eps negative, NaN or infinite. An input with no elements (N = 0)
// gives an empty result.
func FrozenBatchNorm2d(input, weight, bias, runningMean, runningVar *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	const name = "FrozenBatchNorm2d"
	if err := checkNodes(name, []namedNode{
		{input, "input", 4, false}, {weight, "weight", 1, false}, {bias, "bias", 1, false},
		{runningMean, "runningMean", 1, false}, {runningVar, "runningVar", 1, false},
	}); err != nil {
		return nil, err
	}
	s := input.Shape()
	c := s[1]
	for _, p := range []struct {
		n    *gorgonia.Node
		what string
	}{{weight, "weight"}, {bias, "bias"}, {runningMean, "runningMean"}, {runningVar, "runningVar"}} {
		if p.n.Shape()[0] != c {
			return nil, fmt.Errorf("nn: %s: %s shape %v, want (%d) for input %v", name, p.what, p.n.Shape(), c, s)
		}
	}
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return nil, fmt.Errorf("nn: %s: eps %v must be non-negative and finite", name, eps)
	}
	if ad.NoElements(input) {
		return ad.EmptyResult(name, s, 0, fillTwin, input, weight, bias, runningMean, runningVar)
	}
	b := ad.NewBuilder(input)
	v := runningVar
	if eps != 0 {
		v = b.AddConst(v, eps)
	}
	scale := b.HadamardProd(weight, b.Inverse(b.Sqrt(v)))
	shift := b.Sub(bias, b.HadamardProd(runningMean, scale))
	if err := b.Err(); err != nil {
		return nil, err
	}
	return channelAffine(s, chanGeom{s[0], c, s[2] * s[3]}, input, scale, shift)
}
