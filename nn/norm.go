package nn

import (
	"fmt"

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
// none). eps = 0 means torch's 1e-5. Differentiable to every order w.r.t.
// input, weight and bias (sums along an axis and its broadcast, and
// Gorgonia's elementwise ops that are right at every order).
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
	if err := paramShapes(name, tensor.Shape{c}, weight, bias); err != nil {
		return nil, err
	}
	eps, err = normEps(name, eps)
	if err != nil {
		return nil, err
	}
	if y, ok, err := whenEmpty(name, input, s, 0, weight, bias); ok {
		return y, err
	}
	l := s.TotalSize() / max(n*c, 1)
	x2, err := ad.Reshape(input, n*numGroups, c/numGroups*l)
	if err != nil {
		return nil, err
	}
	y, err := normalizeRows(x2, eps)
	if err != nil {
		return nil, err
	}
	if y, err = ad.Reshape(y, n, c, l); err != nil {
		return nil, err
	}
	if weight != nil {
		_, bc := channelSpecs(tensor.Shape{n, c, l})
		wb, err := ad.Apply(bc, weight)
		if err != nil {
			return nil, err
		}
		if y, err = gorgonia.HadamardProd(y, wb); err != nil {
			return nil, err
		}
	}
	if bias != nil {
		if y, err = addBias(y, bias); err != nil {
			return nil, err
		}
	}
	return ad.Reshape(y, s...)
}

// LayerNorm is torch.nn.functional.layer_norm: each input's last
// len(normalizedShape) axes (which must be normalizedShape) normalised by
// their mean and biased variance, then times weight and plus bias (of
// normalizedShape each, nil for none). eps = 0 means 1e-5.
// Differentiable to every order w.r.t. input, weight and bias. Errors: an
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
	if k == 0 || k > s.Dims() || !shapeIs(tensor.Shape(s[s.Dims()-k:]), ns) {
		return nil, fmt.Errorf("nn: %s: normalizedShape %v must be the trailing axes of input %v", name, normalizedShape, s)
	}
	if err := paramShapes(name, ns, weight, bias); err != nil {
		return nil, err
	}
	eps, err = normEps(name, eps)
	if err != nil {
		return nil, err
	}
	if y, ok, err := whenEmpty(name, input, s, 0, weight, bias); ok {
		return y, err
	}
	b := ns.TotalSize()
	a := s.TotalSize() / max(b, 1)
	x2, err := ad.Reshape(input, a, b)
	if err != nil {
		return nil, err
	}
	y, err := normalizeRows(x2, eps)
	if err != nil {
		return nil, err
	}
	_, bc := axisSpecs(tensor.Shape{a, b}, 0)
	for i, p := range []*gorgonia.Node{weight, bias} {
		if p == nil {
			continue
		}
		flat, err := ad.Reshape(p, b)
		if err != nil {
			return nil, err
		}
		pb, err := ad.Apply(bc, flat)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			y, err = gorgonia.HadamardProd(y, pb)
		} else {
			y, err = gorgonia.Add(y, pb)
		}
		if err != nil {
			return nil, err
		}
	}
	return ad.Reshape(y, s...)
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
		if p.n != nil && !shapeIs(p.n.Shape(), want) {
			return fmt.Errorf("nn: %s: %s shape %v, want %v", name, p.what, p.n.Shape(), want)
		}
	}
	return nil
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

// normalizeRows is (x − μ)/√(σ² + eps) for each row of x [A, B], μ and σ²
// the row's mean and biased variance.
func normalizeRows(x *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	s := x.Shape()
	sum, bc := axisSpecs(s, 1)
	mean := func(v *gorgonia.Node) (*gorgonia.Node, error) {
		t, err := ad.Apply(sum, v)
		if err != nil {
			return nil, err
		}
		return scale(t, 1/float64(max(s[1], 1)))
	}
	mu, err := mean(x)
	if err != nil {
		return nil, err
	}
	mub, err := ad.Apply(bc, mu)
	if err != nil {
		return nil, err
	}
	d, err := gorgonia.Sub(x, mub)
	if err != nil {
		return nil, err
	}
	v, err := mean(gorgonia.Must(gorgonia.Square(d)))
	if err != nil {
		return nil, err
	}
	inv, err := invStd(v, eps)
	if err != nil {
		return nil, err
	}
	ib, err := ad.Apply(bc, inv)
	if err != nil {
		return nil, err
	}
	return gorgonia.HadamardProd(d, ib)
}

// invStd is 1/√(variance + eps).
func invStd(variance *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	e, err := scalarConstant(variance, eps)
	if err != nil {
		return nil, err
	}
	return gorgonia.Inverse(gorgonia.Must(gorgonia.Sqrt(gorgonia.Must(gorgonia.Add(variance, e)))))
}
