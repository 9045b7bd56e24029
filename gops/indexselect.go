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
// IndexScatterAdd (back), a linear pair in their first input.
func indexSelectSpecs(xs tensor.Shape, p int) (f, ft ad.OpSpec) {
	xs = xs.Clone()
	ys := xs.Clone()
	ys[0] = p
	k, n := xs[0], tensor.Shape(xs[1:]).TotalSize()
	mk := func(name string, from, to tensor.Shape, fwd bool) ad.OpSpec {
		return ad.OpSpec{
			Name: name, Params: fmt.Sprintf("%v→%v", from, to), InputDims: []int{from.Dims(), 1}, OutputDims: to.Dims(),
			InputDtypes: []tensor.Dtype{{}, tensor.Int}, DiffWRT: []bool{true, false},
			Shape: func(in []tensor.Shape) (tensor.Shape, error) {
				if !sameShape(in[0], from) || !sameShape(in[1], tensor.Shape{p}) {
					return nil, fmt.Errorf("gops: %s: inputs %v and idx %v, want %v and (%d)", name, in[0], in[1], from, p)
				}
				return to.Clone(), nil
			},
			Kernel: ad.Floats(func(out ad.Tensor[float32], in []ad.Tensor[float32]) error {
				return indexRows(out.Data, in[0].Data, in[1].Ints, k, n, fwd)
			}, func(out ad.Tensor[float64], in []ad.Tensor[float64]) error {
				return indexRows(out.Data, in[0].Data, in[1].Ints, k, n, fwd)
			}),
			KernelOverwrites: fwd,
		}
	}
	return ad.LinearPair(mk("IndexSelect", xs, ys, true), mk("IndexScatterAdd", ys, xs, false))
}

// indexRows gathers (fwd) or scatter-adds rows of n elements after
// checking every index against k rows.
func indexRows[T ad.Float](out, in []T, idx []int, k, n int, fwd bool) error {
	for r, i := range idx {
		if i < 0 || i >= k {
			return fmt.Errorf("gops: IndexSelect: idx[%d] = %d is outside [0, %d)", r, i, k)
		}
	}
	rowKernel(out, in, idx, n, fwd)
	return nil
}
