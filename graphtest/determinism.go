package graphtest

import (
	"fmt"
	"math"
	"runtime"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/dense"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Float32 converts float64 tensors (empty ones included) to float32, for
// running a check's inputs in float32.
func Float32(in []*tensor.Dense) []*tensor.Dense {
	out := make([]*tensor.Dense, len(in))
	for i, x := range in {
		if x.Shape().TotalSize() == 0 {
			out[i] = tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(x.Shape()...))
			continue
		}
		if x.Dtype() == tensor.Float32 {
			out[i] = rowMajorCopy(x)
			continue
		}
		src := rowMajorCopy(x).Data().([]float64)
		d := make([]float32, len(src))
		for j, v := range src {
			d[j] = float32(v)
		}
		out[i] = tensor.New(tensor.WithShape(x.Shape()...), tensor.WithBacking(d))
	}
	return out
}

// Inputs puts copies of the values in into a new graph as input nodes
// named in0, in1, ..., the nodes a Func receives in the checks. The values
// must not be nil.
func Inputs(in []*tensor.Dense) (*gorgonia.ExprGraph, gorgonia.Nodes) {
	g := gorgonia.NewGraph()
	nodes := make(gorgonia.Nodes, len(in))
	for i, v := range in {
		v = v.Clone().(*tensor.Dense)
		nodes[i] = gorgonia.NewTensor(g, v.Dtype(), v.Dims(), gorgonia.WithShape(v.Shape()...), gorgonia.WithValue(v), gorgonia.WithName(names(i)))
	}
	return g, nodes
}

// smooth is a tensor of f's output shape and dtype with smooth, distinct
// values (sin of the index), the fixed R of <R, f>.
func smooth(dt tensor.Dtype, s tensor.Shape) gorgonia.Value {
	d := make([]float64, s.TotalSize())
	for i := range d {
		d[i] = math.Sin(0.37*float64(i)+0.1) + 0.05*float64(i%7)
	}
	return dense.Of(dt, s, d)
}

// valueAndGrads evaluates f on in and the gradients of <R, f(in)> w.r.t.
// the inputs wrt on a TapeMachine: the output's values, then each
// gradient's.
func valueAndGrads(f Func, in []*tensor.Dense, wrt []int) ([][]float64, error) {
	g, nodes := Inputs(in)
	y, err := f(nodes)
	if err != nil {
		return nil, err
	}
	r, err := ad.Constant(g, smooth(y.Dtype(), y.Shape()))
	if err != nil {
		return nil, err
	}
	b := ad.NewBuilder(y)
	cost, err := b.Node(b.Sum(b.HadamardProd(y, r)))
	if err != nil {
		return nil, err
	}
	var ws gorgonia.Nodes
	for _, i := range wrt {
		ws = append(ws, nodes[i])
	}
	grads, err := ad.Grad(cost, ws...)
	if err != nil {
		return nil, err
	}
	return Eval(g, append(gorgonia.Nodes{y}, grads...)...)
}

// CheckDeterministic requires f's value on inputs, and the gradients of
// <R, f> (R fixed) w.r.t. the inputs wrt, to be bitwise the same when run
// with each GOMAXPROCS of procs (at least two; restored afterwards). The
// error names the first differing element, or a nil input or wrt index
// out of range.
func CheckDeterministic(f Func, inputs []*tensor.Dense, wrt []int, procs ...int) (err error) {
	if len(procs) < 2 {
		return fmt.Errorf("graphtest: CheckDeterministic needs at least two GOMAXPROCS values, got %v", procs)
	}
	if err := checkArgs(inputs, wrt); err != nil {
		return err
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var ref [][]float64
	for i, p := range procs {
		runtime.GOMAXPROCS(p)
		got, err := valueAndGrads(f, inputs, wrt)
		if err != nil {
			return err
		}
		if i == 0 {
			ref = got
			continue
		}
		for j := range got {
			for e := range got[j] {
				if math.Float64bits(got[j][e]) != math.Float64bits(ref[j][e]) {
					what := "output"
					if j > 0 {
						what = fmt.Sprint("gradient w.r.t. input ", wrt[j-1])
					}
					return fmt.Errorf("graphtest: GOMAXPROCS=%d: %s element %d is %v, %v with GOMAXPROCS=%d", p, what, e, got[j][e], ref[j][e], procs[0])
				}
			}
		}
	}
	return nil
}

// CheckEmpty requires f on inputs with an empty dimension (no boxes, batch
// 0) to give an empty result and zero gradients of Sum(result) w.r.t. the
// inputs wrt, each of its input's size.
func CheckEmpty(f Func, inputs []*tensor.Dense, wrt []int) error {
	if err := checkArgs(inputs, wrt); err != nil {
		return err
	}
	g, nodes := Inputs(inputs)
	y, err := f(nodes)
	if err != nil {
		return err
	}
	if n := y.Shape().TotalSize(); n != 0 {
		return fmt.Errorf("graphtest: result %v has %d elements, want 0", y.Shape(), n)
	}
	var ws gorgonia.Nodes
	for _, i := range wrt {
		ws = append(ws, nodes[i])
	}
	b := ad.NewBuilder(y)
	sum, err := b.Node(b.Sum(y))
	if err != nil {
		return err
	}
	grads, err := ad.Grad(sum, ws...)
	if err != nil {
		return err
	}
	got, err := Eval(g, append(gorgonia.Nodes{y}, grads...)...)
	if err != nil {
		return err
	}
	for j, i := range wrt {
		if n := inputs[i].Shape().TotalSize(); len(got[j+1]) != n {
			return fmt.Errorf("graphtest: gradient w.r.t. input %d has %d values, want %d", i, len(got[j+1]), n)
		}
		for e, v := range got[j+1] {
			if v != 0 {
				return fmt.Errorf("graphtest: gradient w.r.t. input %d element %d = %v, want 0", i, e, v)
			}
		}
	}
	return nil
}

// checkArgs is an error for a nil input or a wrt index out of range.
func checkArgs(inputs []*tensor.Dense, wrt []int) error {
	for i, x := range inputs {
		if x == nil {
			return fmt.Errorf("graphtest: input %d is nil", i)
		}
	}
	for _, i := range wrt {
		if i < 0 || i >= len(inputs) {
			return fmt.Errorf("graphtest: wrt index %d out of range for %d inputs", i, len(inputs))
		}
	}
	return nil
}
