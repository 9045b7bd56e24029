package nn

import (
	"fmt"
	"slices"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// defaultEps is torch's eps for the normalisations, used for an eps of 0.
const defaultEps = 1e-5

// GroupNorm is torch.nn.functional.group_norm: input [N, C, *] split into
// numGroups groups of C/numGroups channels; each group of each sample is
// normalised by its mean and biased variance, (x − μ)/√(σ² + eps), then
// scaled and shifted per channel by weight and bias ([C] each, nil for
// none). eps = 0 means torch's 1e-5. RowNorm on the N·numGroups
// contiguous groups (rownorm.go), and with a weight or bias
// GroupNormAffine (groupnorm.go): RowNorm then ChannelAffine
// (normaffine.go) to the bit, each group's affine step done while it is in
// cache, one result. Differentiable to every order w.r.t. input, weight
// and bias: the gradients belong to families closed under
// differentiation.
//
// Errors when the node is built: input not float of rank ≥ 2, C not
// divisible by numGroups (or numGroups < 1), weight or bias not [C] of the
// input's dtype, eps negative or NaN.
func GroupNorm(input *gorgonia.Node, numGroups int, weight, bias *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	const name = "GroupNorm"
	s, err := normArgs(name, input, weight, bias, 2, 1)
	if err != nil {
		return nil, err
	}
	n, c := s[0], s[1]
	if numGroups < 1 || c%numGroups != 0 {
		return nil, fmt.Errorf("nn: %s: %d channels not divisible into numGroups %d", name, c, numGroups)
	}
	if eps, err = normParams(name, tensor.Shape{c}, weight, bias, eps); err != nil {
		return nil, err
	}
	if ad.NoElements(input) {
		return ad.EmptyResult(name, s, 0, fillTwin, input, weight, bias)
	}
	l := s.TotalSize() / max(n*c, 1)
	if weight == nil && bias == nil {
		return normalizeRows(input, n*numGroups, eps)
	}
	rows := n * numGroups
	return groupNormAffine(input, weight, bias, rowGeom{s.Clone(), rows, s.TotalSize() / rows, eps}, chanGeom{n, c, l}, numGroups)
}

// LayerNorm is torch.nn.functional.layer_norm: each input's last
// len(normalizedShape) axes (which must be normalizedShape) normalised by
// their mean and biased variance, then times weight and plus bias (of
// normalizedShape each, nil for none). eps = 0 means 1e-5. RowNorm on the
// rows of normalizedShape's size, then ChannelAffine with one channel per
// normalised element, as GroupNorm. Differentiable to every order w.r.t.
// input, weight and bias. Errors: an
// empty normalizedShape or one that is not the input's trailing axes,
// weight or bias of another shape or dtype, eps negative or NaN.
func LayerNorm(input *gorgonia.Node, normalizedShape []int, weight, bias *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	const name = "LayerNorm"
	ns := tensor.Shape(normalizedShape)
	k := len(ns)
	s, err := normArgs(name, input, weight, bias, 1, k)
	if err != nil {
		return nil, err
	}
	if k == 0 || k > s.Dims() || !slices.Equal(tensor.Shape(s[s.Dims()-k:]), ns) {
		return nil, fmt.Errorf("nn: %s: normalizedShape %v must be the trailing axes of input %v", name, normalizedShape, s)
	}
	if eps, err = normParams(name, ns, weight, bias, eps); err != nil {
		return nil, err
	}
	if ad.NoElements(input) {
		return ad.EmptyResult(name, s, 0, fillTwin, input, weight, bias)
	}
	b := ns.TotalSize()
	y, err := normalizeRows(input, s.TotalSize()/max(b, 1), eps)
	if err != nil || weight == nil && bias == nil {
		return y, err
	}
	// weight and bias flat, [b]: one channel per normalised element.
	for _, p := range []**gorgonia.Node{&weight, &bias} {
		if *p != nil && k > 1 {
			if *p, err = ad.Reshape(*p, b); err != nil {
				return nil, err
			}
		}
	}
	return channelAffine(s, chanGeom{s.TotalSize() / max(b, 1), b, 1}, y, weight, bias)
}

// normArgs checks a normalisation's input (float, rank at least minRank)
// and its optional weight and bias (rank paramRank, the input's dtype),
// and returns the input's shape.
func normArgs(name string, input, weight, bias *gorgonia.Node, minRank, paramRank int) (tensor.Shape, error) {
	if input == nil {
		return nil, fmt.Errorf("nn: %s: input is nil", name)
	}
	s := input.Shape()
	if err := checkNodes(name, []namedNode{{input, "input", s.Dims(), false}, {weight, "weight", paramRank, true}, {bias, "bias", paramRank, true}}); err != nil {
		return nil, err
	}
	if input.IsScalar() || s.Dims() < minRank {
		return nil, fmt.Errorf("nn: %s: input must have rank at least %d, got %v", name, minRank, s)
	}
	return s, nil
}

// paramShapes is an error unless weight and bias (when not nil) have shape
// want.
func paramShapes(name string, want tensor.Shape, weight, bias *gorgonia.Node) error {
	for _, p := range []struct {
		n    *gorgonia.Node
		what string
	}{{weight, "weight"}, {bias, "bias"}} {
		if p.n != nil && !slices.Equal(p.n.Shape(), want) {
			return fmt.Errorf("nn: %s: %s shape %v, want %v", name, p.what, p.n.Shape(), want)
		}
	}
	return nil
}

// normParams checks weight and bias (paramShapes against want), then eps
// (normEps), and returns eps.
func normParams(name string, want tensor.Shape, weight, bias *gorgonia.Node, eps float64) (float64, error) {
	if err := paramShapes(name, want, weight, bias); err != nil {
		return 0, err
	}
	return normEps(name, eps)
}

// normEps checks eps and returns it, 0 meaning torch's default.
func normEps(name string, eps float64) (float64, error) {
	if !(eps >= 0) {
		return 0, fmt.Errorf("nn: %s: eps %v must be non-negative", name, eps)
	}
	if eps == 0 {
		return defaultEps, nil
	}
	return eps, nil
}
