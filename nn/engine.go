package nn

import (
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Engine is a tensor.Engine for Gorgonia's CPU machines that makes the
// forward of a loss written the ordinary way, Sum(HadamardProd(y, R)),
// cheaper: it is gorgonia.StandardEngine with three methods of its own.
//
//   - Sum over every axis of a float32 or float64 tensor: vector loops
//     (package vmath's) over fixed blocks of sumBlock elements, run by the
//     worker team, the blocks' float64 sums added in order; tensor's
//     StdEng adds the elements one after the other into one accumulator
//     of the tensor's own type, a chain of dependent adds on one core.
//     The result differs from StdEng's by rounding only (it is the more
//     accurate of the two; in float32, where partial sums pass
//     ±MaxFloat32, one of the two may overflow to ±Inf and the other not)
//     and is bitwise the same for any GOMAXPROCS. NaN and ±Inf elements
//     give StdEng's NaN and ±Inf.
//   - Mul of two float32 or float64 tensors of the same shape, neither a
//     view nor lazily transposed: a·b in one pass by the worker team (StdEng copies a, then
//     multiplies on one core); the reuse, incr and unsafe options keep
//     their meaning and the products are StdEng's, bit for bit.
//   - Add likewise (a gradient's terms summed, a residual connection):
//     StdEng's sums bit for bit, in vector loops on the worker team
//     instead of one core's scalar loop. (Where both operands are NaN the
//     sum is NaN, but which operand's payload it keeps depends on how the
//     compiler built StdEng's loop: -race builds keep the other one.)
//
// Every other call, and these three for other dtypes, shapes, views, lazily
// transposed (Dense.T without Transpose) or masked tensors, is
// StdEng's. Gorgonia's machines give every value they hold the machine's
// engine after each instruction, so a value's engine cannot be chosen by
// the op that made it; Engine takes effect for a whole machine:
//
//	m, err := ad.NewTapeMachine(g, gorgonia.WithEngine(nn.Engine{}))
//
// (gorgonia.NewTapeMachine and NewLispMachine take the same option.) Not for the CUDA
// build's machines, whose engine is the CUDA engine.
type Engine struct {
	gorgonia.StandardEngine
}

// Sum is tensor.Sumer's Sum (torch.sum): a summed over the axes along
// (all of them if along is empty), a's shape without those axes, a 0-d
// scalar of a's dtype when every axis is summed (0 for a tensor without
// elements). Errors are StdEng's (an axis out of range, a dtype it cannot
// add). See Engine for what is its own.
func (e Engine) Sum(a tensor.Tensor, along ...int) (tensor.Tensor, error) {
	d, ok := a.(*tensor.Dense)
	if !ok || !flat(d) || !everyAxis(along, d.Dims()) {
		return e.StandardEngine.Sum(a, along...)
	}
	if d.Shape().TotalSize() == 0 { // Data panics on an empty Dense
		switch d.Dtype() {
		case tensor.Float64:
			return tensor.New(tensor.FromScalar(0.0)), nil
		case tensor.Float32:
			return tensor.New(tensor.FromScalar(float32(0))), nil
		}
		return e.StandardEngine.Sum(a, along...)
	}
	switch x := d.Data().(type) {
	case []float64:
		return tensor.New(tensor.FromScalar(cpu.SumBlocks(x))), nil
	case []float32:
		return tensor.New(tensor.FromScalar(float32(cpu.SumBlocks(x)))), nil
	}
	return e.StandardEngine.Sum(a, along...)
}

// flat reports whether d's elements are its array's, in order: not a
// view, not transposed lazily (Dense.T without Transpose, whose array is
// still in the old order), not masked and row-major, the tensors whose
// logical order tensor's own engine walks without an iterator (a
// column-major tensor's array is in another order than a row-major
// operand's).
func flat(d *tensor.Dense) bool {
	return !d.IsView() && !d.RequiresIterator() && !d.IsMasked() && d.DataOrder().IsRowMajor()
}

// everyAxis reports whether along names every one of dims axes in order,
// or none (tensor's convention for all of them).
func everyAxis(along []int, dims int) bool {
	if len(along) == 0 {
		return true
	}
	if len(along) != dims {
		return false
	}
	for i, ax := range along {
		if ax != i {
			return false
		}
	}
	return true
}

// Mul is tensor.Muler's Mul (torch.mul): the elementwise product a·b of
// a's shape, honouring tensor.WithReuse, tensor.WithIncr and
// tensor.UseUnsafe (the result is then the reuse tensor, reshaped to a's
// shape, the incr tensor or a). Errors are StdEng's (shapes or dtypes
// that differ, a reuse tensor of another size). See Engine for what is
// its own.
func (e Engine) Mul(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	return elementwise(e, a, b, opts, e.StandardEngine.Mul, mulInto)
}

// Add is tensor.Adder's Add (torch.add): the elementwise sum a+b of a's
// shape, with the options of Mul (an incr tensor gets incr + (a+b)).
// Errors are StdEng's. See Engine for what is its own.
func (e Engine) Add(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	return elementwise(e, a, b, opts, e.StandardEngine.Add, addInto)
}

// BitwiseEngine is Engine without its Sum: gorgonia.StandardEngine with
// Engine's Add and Mul, so that every value a machine computes is bitwise
// what it computes on Gorgonia's default engine (a whole-tensor Sum is
// StdEng's chain of adds) and its elementwise sums and products run on
// the worker team in vector loops. detection's Trainer and eval runner use
// it: their losses and outputs equal those of the same graph run by the
// caller on the default engine. A machine option as Engine is:
//
//	m, err := ad.NewTapeMachine(g, gorgonia.WithEngine(nn.BitwiseEngine{}))
type BitwiseEngine struct {
	gorgonia.StandardEngine
}

// Mul is Engine's Mul (torch.mul), its results tensors of BitwiseEngine.
func (e BitwiseEngine) Mul(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	return elementwise(e, a, b, opts, e.StandardEngine.Mul, mulInto)
}

// Add is Engine's Add (torch.add), its results tensors of BitwiseEngine.
func (e BitwiseEngine) Add(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	return elementwise(e, a, b, opts, e.StandardEngine.Add, addInto)
}

// elementwise is Mul or Add of engine e: into's loop on two flat tensors
// of one shape and float dtype (a new result a tensor of e), std (StdEng's
// method) for every other call.
func elementwise(e tensor.Engine, a, b tensor.Tensor, opts []tensor.FuncOpt, std func(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error),
	into func(out, x, y any, incr bool) bool) (tensor.Tensor, error) {
	at, aDense := a.(*tensor.Dense)
	bt, bDense := b.(*tensor.Dense)
	if !aDense || !bDense || !flat(at) || !flat(bt) || !at.Shape().Eq(bt.Shape()) ||
		at.Dtype() != bt.Dtype() || at.Shape().TotalSize() == 0 {
		return std(a, b, opts...)
	}
	fo := tensor.ParseFuncOpts(opts...)
	reuse, incr, unsafe := fo.Reuse(), fo.Incr(), !fo.Safe()
	if fo.As().Type != nil && fo.As() != at.Dtype() {
		return std(a, b, opts...)
	}
	var out *tensor.Dense
	switch {
	case incr != nil:
		out, _ = incr.(*tensor.Dense)
	case reuse != nil:
		out, _ = reuse.(*tensor.Dense)
	case unsafe:
		out = at
	default:
		out = tensor.New(tensor.Of(at.Dtype()), tensor.WithShape(at.Shape().Clone()...), tensor.WithEngine(e))
	}
	if out == nil || !flat(out) || out.Dtype() != at.Dtype() || out.Shape().TotalSize() != at.Shape().TotalSize() ||
		!apartOrSame(out, at) || !apartOrSame(out, bt) {
		return std(a, b, opts...)
	}
	if !into(out.Data(), at.Data(), bt.Data(), incr != nil) {
		return std(a, b, opts...)
	}
	if !out.Shape().Eq(at.Shape()) { // a reuse or incr tensor of a's size, other shape: StdEng's reshape
		if err := out.Reshape(at.Shape().Clone()...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// apartOrSame reports whether out's elements are x's (one array) or share
// no memory with x's: an output that overlaps an operand shifted would be
// overwritten before it is read.
func apartOrSame(out, x *tensor.Dense) bool {
	lo, hi := memRange(out)
	xlo, xhi := memRange(x)
	return lo == xlo && hi == xhi || hi <= xlo || xhi <= lo
}

// mulInto sets (incr false) or adds to (incr true) out the elementwise
// product of x and y, all of one float dtype and one length; false if the
// dtype is not float32 or float64.
func mulInto(out, x, y any, incr bool) bool {
	switch o := out.(type) {
	case []float64:
		cpu.MulInto(o, x.([]float64), y.([]float64), incr)
	case []float32:
		cpu.MulInto(o, x.([]float32), y.([]float32), incr)
	default:
		return false
	}
	return true
}

// addInto is mulInto for the sum.
func addInto(out, x, y any, incr bool) bool {
	switch o := out.(type) {
	case []float64:
		cpu.AddInto(o, x.([]float64), y.([]float64), incr)
	case []float32:
		cpu.AddInto(o, x.([]float32), y.([]float32), incr)
	default:
		return false
	}
	return true
}
