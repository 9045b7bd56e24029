package nn

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/ad"
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
	a, err := checkAxis("Softmax", input, axis)
	if err != nil {
		return nil, err
	}
	if y, ok, err := whenEmpty("Softmax", input, input.Shape(), 0); ok {
		return y, err
	}
	return ad.Apply(softmaxSpec(input.Shape(), a, false), input)
}

// LogSoftmax is torch.nn.functional.log_softmax(input, dim=axis):
// x − max − log Σ exp(x − max) along axis, stable for any magnitude.
// Shapes, errors and orders as Softmax; the gradient is U − softmax(x) ⊙
// Σ_axis U.
func LogSoftmax(input *gorgonia.Node, axis int) (*gorgonia.Node, error) {
	a, err := checkAxis("LogSoftmax", input, axis)
	if err != nil {
		return nil, err
	}
	if y, ok, err := whenEmpty("LogSoftmax", input, input.Shape(), 0); ok {
		return y, err
	}
	return ad.Apply(softmaxSpec(input.Shape(), a, true), input)
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
	name := "Softmax"
	if log {
		name = "LogSoftmax"
	}
	outer, n, inner := lines(s, axis)
	return ad.OpSpec{
		Name: name, Params: fmt.Sprintf("%v axis %d", s, axis), InputDims: []int{s.Dims()}, OutputDims: s.Dims(),
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !shapeIs(in[0], s) {
				return nil, fmt.Errorf("nn: %s: input %v, want %v", name, in[0], s)
			}
			return s.Clone(), nil
		},
		Kernel: ad.Floats(softmaxKernel[float32](outer, n, inner, log), softmaxKernel[float64](outer, n, inner, log)),
		Backward: func(in gorgonia.Nodes, out, u *gorgonia.Node) (gorgonia.Nodes, error) {
			sum, bcast := axisSpecs(s, axis)
			if log {
				// U − softmax(x) ⊙ Σ U
				sm, err := ad.Apply(softmaxSpec(s, axis, false), in[0])
				if err != nil {
					return nil, err
				}
				su, err := ad.Apply(sum, u)
				if err != nil {
					return nil, err
				}
				b, err := ad.Apply(bcast, su)
				if err != nil {
					return nil, err
				}
				d, err := gorgonia.Sub(u, gorgonia.Must(gorgonia.HadamardProd(sm, b)))
				return gorgonia.Nodes{d}, err
			}
			// s ⊙ (U − Σ U ⊙ s)
			us, err := gorgonia.HadamardProd(u, out)
			if err != nil {
				return nil, err
			}
			su, err := ad.Apply(sum, us)
			if err != nil {
				return nil, err
			}
			b, err := ad.Apply(bcast, su)
			if err != nil {
				return nil, err
			}
			d, err := gorgonia.HadamardProd(out, gorgonia.Must(gorgonia.Sub(u, b)))
			return gorgonia.Nodes{d}, err
		},
	}
}

func softmaxKernel[T ad.Float](outer, n, inner int, log bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		x, y := in[0].Data, out.Data
		for o := 0; o < outer; o++ {
			for i := 0; i < inner; i++ {
				base := o*n*inner + i
				m := math.Inf(-1)
				for k := 0; k < n; k++ {
					if v := float64(x[base+k*inner]); v > m || v != v {
						m = v
					}
				}
				if math.IsInf(m, -1) {
					m = 0 // a line of −Inf: exp(x − 0) = 0, as torch (NaN after 0/0)
				}
				var s float64
				for k := 0; k < n; k++ {
					s += math.Exp(float64(x[base+k*inner]) - m)
				}
				ls := math.Log(s)
				for k := 0; k < n; k++ {
					v := float64(x[base+k*inner]) - m
					if log {
						y[base+k*inner] = T(v - ls)
					} else {
						y[base+k*inner] = T(math.Exp(v) / s)
					}
				}
			}
		}
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
			Shape: func(in []tensor.Shape) (tensor.Shape, error) {
				if !shapeIs(in[0], from) {
					return nil, fmt.Errorf("nn: %s: input %v, want %v", name, in[0], from)
				}
				return to.Clone(), nil
			},
			Kernel: k,
		}
	}
	return ad.LinearPair(
		mk("AxisSum", s, r, ad.Floats(axisSumKernel[float32](outer, n, inner), axisSumKernel[float64](outer, n, inner))),
		mk("AxisBroadcast", r, s, ad.Floats(axisBroadcastKernel[float32](outer, n, inner), axisBroadcastKernel[float64](outer, n, inner))))
}

func axisSumKernel[T ad.Float](outer, n, inner int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		for o := 0; o < outer; o++ {
			for i := 0; i < inner; i++ {
				var acc T
				for k := 0; k < n; k++ {
					acc += in[0].Data[(o*n+k)*inner+i]
				}
				out.Data[o*inner+i] = acc
			}
		}
		return nil
	}
}

func axisBroadcastKernel[T ad.Float](outer, n, inner int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		for o := 0; o < outer; o++ {
			for k := 0; k < n; k++ {
				copy(out.Data[(o*n+k)*inner:(o*n+k+1)*inner], in[0].Data[o*inner:(o+1)*inner])
			}
		}
		return nil
	}
}
