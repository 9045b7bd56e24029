package ad

import (
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Spread and its transpose, the sum along axes: the ops that Grad's rules
// for Gorgonia's Sum build (rules.go). spread(r) of a reduced tensor r
// (full with the axes removed, a scalar when they are all of full's) is
// the tensor of shape full that repeats r along those axes; sumAlong is
// Gorgonia's Sum along the same axes. They are a linear pair, so both are
// differentiable to every order, and each is one pass over the full
// tensor, where Gorgonia's rule for Sum reshapes its gradient and Repeats
// it once per axis.

// spread returns r spread to shape full along axes (sorted, distinct).
func spread(r *gorgonia.Node, full tensor.Shape, axes []int) (*gorgonia.Node, error) {
	there, _ := LinearPair(spreadSpec(full, axes), sumAlongSpec(full, axes))
	return Apply(there, r)
}

// reducedShape is full without axes; the scalar shape when none is left.
func reducedShape(full tensor.Shape, axes []int) tensor.Shape {
	out := tensor.Shape{}
	for d, n := range full {
		if !slices.Contains(axes, d) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return tensor.ScalarShape()
	}
	return out
}

// spreadSpec is the op r ↦ r repeated along axes to shape full.
func spreadSpec(full tensor.Shape, axes []int) OpSpec { return walkSpec("Spread", full, axes, false) }

// sumAlongSpec is the op x ↦ Σ x along axes, x of shape full.
func sumAlongSpec(full tensor.Shape, axes []int) OpSpec {
	return walkSpec("SumAlong", full, axes, true)
}

// walkSpec is spreadSpec, or sumAlongSpec with sum set.
func walkSpec(name string, full tensor.Shape, axes []int, sum bool) OpSpec {
	full, axes = full.Clone(), slices.Clone(axes)
	in, out := reducedShape(full, axes), full
	if sum {
		in, out = out, in
	}
	return OpSpec{
		Name:             name,
		Params:           fmt.Sprintf("%v along %v", full, axes),
		InputDims:        []int{in.Dims()},
		OutputDims:       out.Dims(),
		Shape:            reducedFits(name, in, out),
		Kernel:           Floats(walkKernel[float32](full, axes, sum), walkKernel[float64](full, axes, sum)),
		KernelOverwrites: !sum, // Spread sets every element; SumAlong adds into zeros
	}
}

// reducedFits is the Shape of Spread and SumAlong: the input must be in,
// up to axes of size 1; the result is out.
func reducedFits(name string, in, out tensor.Shape) func([]tensor.Shape) (tensor.Shape, error) {
	return func(s []tensor.Shape) (tensor.Shape, error) {
		if !slices.Equal(squeeze(s[0]), squeeze(in)) {
			return nil, fmt.Errorf("ad: %s: input %v, want %v", name, s[0], in)
		}
		return out.Clone(), nil
	}
}

// walkKernel is walkSpec's kernel: walkReduced between the full tensor
// and the reduced one.
func walkKernel[T Float](full tensor.Shape, axes []int, sum bool) func(Tensor[T], []Tensor[T]) error {
	st := reducedStrides(full, axes)
	return func(out Tensor[T], in []Tensor[T]) error {
		if sum {
			walkReduced(in[0].Data, out.Data, full, st, true)
		} else {
			walkReduced(out.Data, in[0].Data, full, st, false)
		}
		return nil
	}
}

// reducedStrides gives, for each axis of full, the stride of the reduced
// tensor along it: 0 for an axis in axes.
func reducedStrides(full tensor.Shape, axes []int) []int {
	st := make([]int, len(full))
	acc := 1
	for d := len(full) - 1; d >= 0; d-- {
		if !slices.Contains(axes, d) {
			st[d] = acc
			acc *= full[d]
		}
	}
	return st
}

// walkReduced visits the elements of f, a row-major tensor of shape full,
// with their elements in the reduced tensor r (strides st): sum adds each
// into r (r = sumAlong(f)), otherwise each is set from r (f = spread(r)).
func walkReduced[T Float](f, r []T, full tensor.Shape, st []int, sum bool) {
	if len(f) == 0 {
		return
	}
	last := len(full) - 1
	n, s := full[last], st[last]
	idx := make([]int, last)
	off := 0 // r's element for the start of the current row of f
	for base := 0; base < len(f); base += n {
		row := f[base : base+n]
		switch {
		case sum && s == 0:
			var acc T
			for _, v := range row {
				acc += v
			}
			r[off] += acc
		case sum:
			rr := r[off : off+n]
			for k, v := range row {
				rr[k] += v
			}
		case s == 0:
			v := r[off]
			for k := range row {
				row[k] = v
			}
		default:
			copy(row, r[off:off+n])
		}
		for d := last - 1; d >= 0; d-- {
			idx[d]++
			off += st[d]
			if idx[d] < full[d] {
				break
			}
			off -= st[d] * full[d]
			idx[d] = 0
		}
	}
}
