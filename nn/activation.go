package nn

import (
	"fmt"
	"math"
	"slices"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The activations of torch.nn.functional, elementwise on a float32 or
// float64 node of any shape, differentiable to every order. Each returns
// an error for a nil input or another dtype.

// ReLU is torch.nn.functional.relu: max(x, 0), NaN kept, −Inf giving 0.
// Its derivative is 1 for x > 0 and 0 elsewhere (0 at x = 0, as torch),
// and zero beyond.
func ReLU(x *gorgonia.Node) (*gorgonia.Node, error) { return LeakyReLU(x, 0) }

// LeakyReLU is torch.nn.functional.leaky_relu(x, negative_slope): x for
// x > 0, negativeSlope·x elsewhere (torch's default slope is 0.01; pass
// it). Derivative 1 or negativeSlope (negativeSlope at 0, as torch).
func LeakyReLU(x *gorgonia.Node, negativeSlope float64) (*gorgonia.Node, error) {
	return unary("LeakyReLU", x, func(s tensor.Shape) ad.OpSpec { return leakySpec(s, negativeSlope) })
}

// Sigmoid is torch.sigmoid: 1/(1+exp(−x)), computed without saturating
// early (Gorgonia's returns exactly 1 above 19 in float64). Its gradient
// is U·s·(1 − s) from its own output s.
func Sigmoid(x *gorgonia.Node) (*gorgonia.Node, error) {
	return unary("Sigmoid", x, sigmoidSpec)
}

// unary is the elementwise op spec(x's shape) applied to x, after the
// activations' input checks; on an input without elements, its empty
// result.
func unary(name string, x *gorgonia.Node, spec func(tensor.Shape) ad.OpSpec) (*gorgonia.Node, error) {
	if err := checkActivation(name, x); err != nil {
		return nil, err
	}
	if ad.NoElements(x) {
		return ad.EmptyResult(name, x.Shape(), 0, fillTwin, x)
	}
	return ad.Apply(spec(x.Shape()), x)
}

// sigmoidSpec is the stable sigmoid; Backward U ⊙ s ⊙ (1 − s).
func sigmoidSpec(s tensor.Shape) ad.OpSpec {
	return withCUDA(activationSpec("Sigmoid", "", s, nil, ad.Floats(sigmoidKernel[float32], sigmoidKernel[float64]),
		func(_ gorgonia.Nodes, out, u *gorgonia.Node) (gorgonia.Nodes, error) {
			b := ad.NewBuilder(out)
			return b.Nodes(b.HadamardProd(u, b.HadamardProd(out, b.RSub(1, out))))
		}), unaryGPU{kind: unarySigmoid})
}

// sigmoidKernel is cpu.Sigmoid.
func sigmoidKernel[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	cpu.Sigmoid(out.Data, in[0].Data)
	return nil
}

// Tanh is torch.tanh. Its values are bitwise those of Gorgonia's Tanh
// (the same functions, cpu.Tanh), and so are its derivatives of every
// order: its gradient is the expression Gorgonia's Tanh builds,
// (1 − t⊙t)⊙U from its own output t with Gorgonia's HadamardProd and Sub.
// Unlike Gorgonia's, which clones its input and then works in place, it
// writes into its result, which ad.ReuseResults can keep between runs.
func Tanh(x *gorgonia.Node) (*gorgonia.Node, error) {
	return unary("Tanh", x, tanhSpec)
}

// tanhSpec is Tanh; Backward (1 − t⊙t)⊙U, Gorgonia's tanhDiffExpr with
// the constant 1 of t's dtype.
func tanhSpec(s tensor.Shape) ad.OpSpec {
	return withCUDA(activationSpec("Tanh", "", s, nil, ad.Floats(tanhKernel[float32], tanhKernel[float64]),
		func(_ gorgonia.Nodes, out, u *gorgonia.Node) (gorgonia.Nodes, error) {
			b := ad.NewBuilder(out)
			return b.Nodes(b.HadamardProd(b.RSub(1, b.HadamardProd(out, out)), u))
		}), unaryGPU{kind: unaryTanh})
}

// tanhKernel is cpu.Tanh.
func tanhKernel[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	cpu.Tanh(out.Data, in[0].Data)
	return nil
}

// SiLU is torch.nn.functional.silu: x·sigmoid(x).
func SiLU(x *gorgonia.Node) (*gorgonia.Node, error) {
	if err := checkActivation("SiLU", x); err != nil {
		return nil, err
	}
	if ad.NoElements(x) {
		return ad.EmptyResult("SiLU", x.Shape(), 0, fillTwin, x)
	}
	sg, err := ad.Apply(sigmoidSpec(x.Shape()), x)
	if err != nil {
		return nil, err
	}
	return gorgonia.HadamardProd(x, sg)
}

// GELU is torch.nn.functional.gelu(x, approximate): with approximate
// "none" (or "") x·Φ(x) = x·(1 + erf(x/√2))/2, with "tanh"
// x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))/2. Errors: as the others, and an
// unknown approximate.
func GELU(x *gorgonia.Node, approximate string) (*gorgonia.Node, error) {
	if err := checkActivation("GELU", x); err != nil {
		return nil, err
	}
	if ad.NoElements(x) {
		return ad.EmptyResult("GELU", x.Shape(), 0, fillTwin, x)
	}
	b := ad.NewBuilder(x)
	var inner *gorgonia.Node
	switch approximate {
	case "", "none":
		inner = b.Apply(erfSpec(x.Shape()), b.Scale(x, 1/math.Sqrt2))
	case "tanh":
		a := b.Scale(b.Add(x, b.Scale(b.Cube(x), 0.044715)), math.Sqrt(2/math.Pi))
		inner = b.Do(func() (*gorgonia.Node, error) { return gorgonia.Tanh(a) })
	default:
		return nil, fmt.Errorf("nn: GELU: approximate %q, want \"none\" or \"tanh\"", approximate)
	}
	return b.Node(b.HadamardProd(x, b.Scale(b.AddConst(inner, 1), 0.5)))
}

// checkActivation checks an activation's input.
func checkActivation(name string, x *gorgonia.Node) error {
	if x == nil {
		return fmt.Errorf("nn: %s: input is nil", name)
	}
	if d := x.Dtype(); d != tensor.Float32 && d != tensor.Float64 {
		return fmt.Errorf("nn: %s: input dtype %v, want float32 or float64", name, d)
	}
	return nil
}

// leakySpec is LeakyReLU: x where x > 0 (and NaN), slope·x elsewhere (0
// for slope 0, −Inf included); Backward leakyGradSpec(x, U), bitwise
// U ⊙ slopeSpec(x) in one pass.
func leakySpec(s tensor.Shape, slope float64) ad.OpSpec {
	return withCUDA(activationSpec("LeakyReLU", fmt.Sprint(slope), s, nil, ad.Floats(leakyKernel[float32](slope), leakyKernel[float64](slope)),
		func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			d, err := ad.Apply(leakyGradSpec(s, slope), in[0], u)
			return gorgonia.Nodes{d}, err
		}), unaryGPU{kind: unaryLeaky, param: slope})
}

// leakyKernel is cpu.LeakyReLU.
func leakyKernel[T ad.Float](slope float64) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.LeakyReLU(slope, out.Data, in[0].Data)
		return nil
	}
}

// slopeSpec is LeakyReLU's slope: 1 where x > 0, slope elsewhere (NaN
// included), a piecewise constant with no derivative. LeakyReLU's gradient
// no longer builds it (leakyGradSpec fuses U ⊙ slope); it is the
// reference that leakyGradSpec is tested against, with its twin.
func slopeSpec(s tensor.Shape, slope float64) ad.OpSpec {
	return withCUDA(activationSpec("LeakySlope", fmt.Sprint(slope), s, []bool{false},
		ad.Floats(slopeKernel[float32](slope), slopeKernel[float64](slope)), nil), unaryGPU{kind: unaryLeakySlope, param: slope})
}

// slopeKernel is cpu.LeakySlope.
func slopeKernel[T ad.Float](slope float64) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.LeakySlope(slope, out.Data, in[0].Data)
		return nil
	}
}

// leakyGradSpec is LeakyReLU's gradient LeakyGrad(x, U) = U·slope(x),
// slope(x) as slopeSpec decides it, rounded once: bitwise Gorgonia's
// HadamardProd(U, slopeSpec(x)), which it replaces (one pass, no slope
// array, no clone of U). Linear in U, its Backward w.r.t. U is
// LeakyGrad(x, V); w.r.t. x it has none (DiffWRT false: slope(x) is
// piecewise constant, as slopeSpec).
func leakyGradSpec(s tensor.Shape, slope float64) ad.OpSpec {
	spec := activationSpec("LeakyGrad", fmt.Sprint(slope), s, []bool{false, true},
		ad.Floats(leakyGradKernel[float32](slope), leakyGradKernel[float64](slope)),
		func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			d, err := ad.Apply(leakyGradSpec(s, slope), in[0], v)
			return gorgonia.Nodes{nil, d}, err
		})
	spec.InputDims = []int{s.Dims(), s.Dims()}
	first := spec.Shape
	spec.Shape = func(in []tensor.Shape) (tensor.Shape, error) {
		if !slices.Equal(in[1], in[0]) {
			return nil, fmt.Errorf("nn: LeakyGrad: upstream %v, want %v", in[1], in[0])
		}
		return first(in)
	}
	return withCUDA(spec, unaryGPU{kind: unaryLeakyGrad, param: slope})
}

// leakyGradKernel is cpu.LeakyGrad.
func leakyGradKernel[T ad.Float](slope float64) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.LeakyGrad(slope, out.Data, in[0].Data, in[1].Data)
		return nil
	}
}

// erfSpec is erf, whose gradient U·(2/√π)·exp(−x²) is built from ops that
// are right at every order.
func erfSpec(s tensor.Shape) ad.OpSpec {
	return withCUDA(activationSpec("Erf", "", s, nil, ad.Floats(erfKernel[float32], erfKernel[float64]),
		func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			b := ad.NewBuilder(in[0])
			e := b.Exp(b.Neg(b.Square(in[0])))
			return b.Nodes(b.Scale(b.HadamardProd(u, e), 2/math.SqrtPi))
		}), unaryGPU{kind: unaryErf})
}

// erfKernel is cpu.Erf.
func erfKernel[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	cpu.Erf(out.Data, in[0].Data)
	return nil
}

// activationSpec is elementwiseSpec for the kernels of cpu's activations,
// which write every element of their result (KernelOverwrites).
func activationSpec(name, params string, s tensor.Shape, diff []bool, k ad.Kernel, backward func(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error)) ad.OpSpec {
	spec := elementwiseSpec(name, params, s, diff, k, backward)
	spec.KernelOverwrites = true
	return spec
}

// elementwiseSpec is a one-input op of shape s.
func elementwiseSpec(name, params string, s tensor.Shape, diff []bool, k ad.Kernel, backward func(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error)) ad.OpSpec {
	s = s.Clone()
	return ad.OpSpec{
		Name: name, Params: params + fmt.Sprint(s), InputDims: []int{s.Dims()}, OutputDims: s.Dims(), DiffWRT: diff,
		Shape:    ad.FixedShape("nn: "+name, s, s),
		Kernel:   k,
		Backward: backward,
	}
}

// The CUDA twin's descriptor (launch code in the *_cuda.go files; withCUDA
// ignores it in the CPU build).

// unaryKind picks one of the elementwise ops with a twin.
type unaryKind int

const (
	unarySigmoid    unaryKind = iota // the stable Sigmoid
	unaryTanh                        // tanh
	unaryLeaky                       // LeakyReLU with slope param
	unaryLeakySlope                  // its slope: 1 or param
	unaryLeakyGrad                   // its gradient: U·(1 or param), two inputs
	unaryErf                         // erf
	unarySoftplus                    // the stable Softplus
	unarySmoothL1                    // SmoothL1d<order> with beta param
)

// unaryGPU is an elementwise op of one input (activation_cuda.go): kind,
// its float parameter (a slope or beta) and SmoothL1's derivative order.
type unaryGPU struct {
	kind  unaryKind
	param float64
	order int
}
