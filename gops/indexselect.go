package gops

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// IndexSelect is torch.index_select(x, 0, idx), x[idx] in torch's
// notation: rows idx of x [K, rest...], as [P, rest...] for idx a tensor.Int
// node [P] (indices in [0, K), repeats allowed), so that boxes[keep] can be
// written in a graph with NMS's result. Linear in x, with the scatter-add
// of rows as its transpose (each other's gradient): differentiable to every
// order w.r.t. x; idx gets no gradient. The scatter-add visits rows in
// order, so results do not depend on GOMAXPROCS. Errors: when the node is
// built, a nil, scalar or non-float x, an idx that is not a tensor.Int
// vector; when it runs, an index outside [0, K) (named with its position).
func IndexSelect(x, idx *gorgonia.Node) (*gorgonia.Node, error) {
	const name = "IndexSelect"
	if x == nil || idx == nil {
		return nil, fmt.Errorf("gops: %s: x or idx is nil", name)
	}
	if err := checkFloatNode(name, "x", x, max(x.Dims(), 1)); err != nil {
		return nil, err
	}
	if idx.Dtype() != tensor.Int || idx.IsScalar() || idx.Dims() != 1 {
		return nil, fmt.Errorf("gops: %s: idx must be a tensor.Int vector [P], got %v %v", name, idx.Dtype(), idx.Shape())
	}
	f, _ := indexSelectSpecs(x.Shape(), idx.Shape()[0])
	y, err := ad.Apply(f, x, idx)
	return y, wrapErr(name, err)
}

// indexSelectSpecs are IndexSelect (x of shape xs → [p, xs[1:]...]) and
// IndexScatterAdd (back), a linear pair in their first input: the row
// gathers of boxprims.go with idx an input.
func indexSelectSpecs(xs tensor.Shape, p int) (f, ft ad.OpSpec) {
	return rowSelectSpecs([2]string{"IndexSelect", "IndexScatterAdd"}, xs, p, nil, "")
}
