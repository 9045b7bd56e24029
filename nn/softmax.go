package nn

import (
	"fmt"
	"slices"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Softmax is torch.nn.functional.softmax(input, dim=axis): exp(x) / Σ exp(x)
// along axis (negative counts from the end), computed stably (the maximum
// subtracted first). Any rank ≥ 1, float32 or float64; the result has the
// input's shape. Differentiable to every order: the gradient for upstream
// U is s ⊙ (U − Σ_axis U ⊙ s), built from Softmax's own output and
// further differentiable ops.
//
// Errors when the node is built: input nil, not float, a scalar, axis out
// of range.
func Softmax(input *gorgonia.Node, axis int) (*gorgonia.Node, error) {
	return softmax("Softmax", input, axis, false)
}

// LogSoftmax is torch.nn.functional.log_softmax(input, dim=axis):
// x − max − log Σ exp(x − max) along axis, stable for any magnitude.
// Shapes, errors and orders as Softmax; the gradient is U − softmax(x) ⊙
// Σ_axis U.
func LogSoftmax(input *gorgonia.Node, axis int) (*gorgonia.Node, error) {
	return softmax("LogSoftmax", input, axis, true)
}

// softmax is Softmax (log false) or LogSoftmax, called name.
func softmax(name string, input *gorgonia.Node, axis int, log bool) (*gorgonia.Node, error) {
	a, err := checkAxis(name, input, axis)
	if err != nil {
		return nil, err
	}
	if ad.NoElements(input) {
		return ad.EmptyResult(name, input.Shape(), 0, fillTwin, input)
	}
	return ad.Apply(softmaxSpec(input.Shape(), a, log), input)
}

// checkAxis checks a float input of rank ≥ 1 and returns axis made
// non-negative.
func checkAxis(name string, input *gorgonia.Node, axis int) (int, error) {
	if input == nil {
		return 0, fmt.Errorf("nn: %s: input is nil", name)
	}
	if d := input.Dtype(); d != tensor.Float32 && d != tensor.Float64 {
		return 0, fmt.Errorf("nn: %s: input dtype %v, want float32 or float64", name, d)
	}
	r := input.Shape().Dims()
	if input.IsScalar() || r == 0 {
		return 0, fmt.Errorf("nn: %s: input must have rank at least 1, got shape %v", name, input.Shape())
	}
	if axis < -r || axis >= r {
		return 0, fmt.Errorf("nn: %s: axis %d out of range for input shape %v", name, axis, input.Shape())
	}
	if axis < 0 {
		axis += r
	}
	return axis, nil
}

// lines splits shape s at axis into outer × n × inner.
func lines(s tensor.Shape, axis int) (outer, n, inner int) {
	outer, inner = 1, 1
	for i, d := range s {
		switch {
		case i < axis:
			outer *= d
		case i > axis:
			inner *= d
		}
	}
	return outer, s[axis], inner
}

// softmaxSpec is Softmax, or LogSoftmax with log, along axis of shape s.
func softmaxSpec(s tensor.Shape, axis int, log bool) ad.OpSpec {
	s = s.Clone()
	name := logName("Softmax", log)
	outer, n, inner := lines(s, axis)
	return withCUDA(ad.OpSpec{
		Name: name, Params: fmt.Sprintf("%v axis %d", s, axis), InputDims: []int{s.Dims()}, OutputDims: s.Dims(),
		Shape:            ad.FixedShape("nn: "+name, s, s),
		Kernel:           ad.Floats(softmaxKernel[float32](outer, n, inner, log), softmaxKernel[float64](outer, n, inner, log)),
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, out, u *gorgonia.Node) (gorgonia.Nodes, error) {
			d, err := ad.Apply(softmaxGradSpec(s, axis, log), out, u)
			return gorgonia.Nodes{d}, err
		},
	}, softmaxGPU{outer, n, inner, log})
}

// logName is base, or its log-softmax twin "Log"+base with log.
func logName(base string, log bool) string {
	if log {
		return "Log" + base
	}
	return base
}

// softmaxGradSpec is the gradient of Softmax (log false) or LogSoftmax for
// upstream U, from the op's output y: y ⊙ (U − Σ_axis U ⊙ y), or
// U − exp(y) ⊙ Σ_axis U. One fused kernel; its own derivatives are built
// from differentiable nodes (and itself), so every order is available.
func softmaxGradSpec(s tensor.Shape, axis int, log bool) ad.OpSpec {
	s = s.Clone()
	name := logName("SoftmaxGrad", log)
	outer, n, inner := lines(s, axis)
	return withCUDA(ad.OpSpec{
		Name: name, Params: fmt.Sprintf("%v axis %d", s, axis), InputDims: []int{s.Dims(), s.Dims()}, OutputDims: s.Dims(),
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			for i, what := range []string{"output", "gradient"} {
				if !slices.Equal(in[i], s) {
					return nil, fmt.Errorf("nn: %s: %s %v, want %v", name, what, in[i], s)
				}
			}
			return s.Clone(), nil
		},
		Kernel:           ad.Floats(softmaxGradKernel[float32](outer, n, inner, log), softmaxGradKernel[float64](outer, n, inner, log)),
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			y, u := in[0], in[1]
			sum, bcast := axisSpecs(s, axis)
			b := ad.NewBuilder(v)
			// sumB is bcast(Σ_axis p).
			sumB := func(p *gorgonia.Node) *gorgonia.Node { return b.Apply(bcast, b.Apply(sum, p)) }
			if log {
				// g = U − e ⊙ ΣU, e = exp(y): ∂/∂U = V − Σ(e ⊙ V), ∂/∂y = −V ⊙ e ⊙ ΣU.
				e := b.Exp(y)
				du := b.Sub(v, sumB(b.HadamardProd(e, v)))
				su := sumB(u)
				dy := b.Neg(b.HadamardProd(b.HadamardProd(v, e), su))
				return b.Nodes(dy, du)
			}
			// g = y ⊙ (U − Σ U ⊙ y): ∂/∂U = y ⊙ (V − Σ V ⊙ y) (this op again),
			// ∂/∂y = V ⊙ (U − Σ U ⊙ y) − U ⊙ Σ V ⊙ y.
			du := b.Apply(softmaxGradSpec(s, axis, false), y, v)
			suy, svy := sumB(b.HadamardProd(u, y)), sumB(b.HadamardProd(v, y))
			dy := b.Sub(b.HadamardProd(v, b.Sub(u, suy)), b.HadamardProd(u, svy))
			return b.Nodes(dy, du)
		},
	}, softmaxGradGPU{outer, n, inner, log})
}

// softmaxKernel computes softmax or log-softmax along the axis
// (cpu.Softmax).
func softmaxKernel[T ad.Float](outer, n, inner int, log bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.Softmax(outer, n, inner, log, out.Data, in[0].Data)
		return nil
	}
}

// softmaxGradKernel computes softmaxGradSpec's result from the output y
// and upstream U (cpu.SoftmaxGrad).
func softmaxGradKernel[T ad.Float](outer, n, inner int, log bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.SoftmaxGrad(outer, n, inner, log, out.Data, in[0].Data, in[1].Data)
		return nil
	}
}

// axisSpecs are AxisSum (shape s → s without axis) and AxisBroadcast
// back, a linear pair.
func axisSpecs(s tensor.Shape, axis int) (sum, bcast ad.OpSpec) {
	s = s.Clone()
	outer, n, inner := lines(s, axis)
	r := append(append(tensor.Shape{}, s[:axis]...), s[axis+1:]...)
	if len(r) == 0 {
		r = tensor.Shape{1}
	}
	mk := func(name string, from, to tensor.Shape, k ad.Kernel) ad.OpSpec {
		return ad.OpSpec{
			Name: name, Params: fmt.Sprintf("%v axis %d", s, axis), InputDims: []int{from.Dims()}, OutputDims: to.Dims(),
			Shape:  ad.FixedShape("nn: "+name, from, to),
			Kernel: k,
		}
	}
	return ad.LinearPair(
		withCUDA(mk("AxisSum", s, r, ad.Floats(axisSumKernel[float32](outer, n, inner), axisSumKernel[float64](outer, n, inner))), axisGPU{outer, n, inner, true}),
		withCUDA(mk("AxisBroadcast", r, s, ad.Floats(axisBroadcastKernel[float32](outer, n, inner), axisBroadcastKernel[float64](outer, n, inner))), axisGPU{outer, n, inner, false}))
}

func axisSumKernel[T ad.Float](outer, n, inner int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.AxisSum(outer, n, inner, out.Data, in[0].Data)
		return nil
	}
}

func axisBroadcastKernel[T ad.Float](outer, n, inner int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.AxisBroadcast(outer, n, inner, out.Data, in[0].Data)
		return nil
	}
}

// The CUDA twin's descriptors (launch code in the *_cuda.go files; withCUDA
// ignores them in the CPU build).

// softmaxGPU is Softmax (or LogSoftmax with log) along lines of a shape
// split outer × n × inner (softmax_cuda.go).
type softmaxGPU struct {
	outer, n, inner int
	log             bool
}

// softmaxGradGPU is SoftmaxGrad (or LogSoftmaxGrad with log) along lines
// of a shape split outer × n × inner (softmax_cuda.go).
type softmaxGradGPU struct {
	outer, n, inner int
	log             bool
}

// axisGPU is AxisSum (sum) or AxisBroadcast on outer × n × inner
// (softmax_cuda.go).
type axisGPU struct {
	outer, n, inner int
	sum             bool
}
