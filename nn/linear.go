package nn

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/gemm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Linear is torch.nn.functional.linear: y = x·weightᵀ + bias, the layer
// of torch.nn.Linear.
//
// Shapes: x [..., in] (a vector [in], a batch [N, in], or more leading
// axes), weight [out, in] (torch's layout), bias [out] or nil (no bias);
// y [..., out], x's leading axes kept. All float32 or all float64. Sizes
// may be 0 (N = 0 gives an empty result, in = 0 gives the bias, or zeros).
// Initialise weight and bias as torch.nn.Linear does with LinearInit.
//
// The product reads weight transposed in place (no copy of it per run) on
// the same product as MatMul (gops' own, or OpenBLAS when the program
// installed it), and a bias is added by the product itself (its rows start
// at the bias), so results are bitwise the same for any GOMAXPROCS. It is
// differentiable to every order w.r.t. x, weight and bias: the gradients
// are MatMuls (G·weight, Gᵀ·x) and a column sum of G, each again
// differentiable, and only the gradients that ad.Grad needs are built (the
// first layer's x, the data, gets none). An x of rank other than 2 is
// reshaped (ad.Reshape, a copy) to [N, in] and the result back. In the
// cuda build it runs on cuBLAS and BiasAdd's kernel.
//
// Errors when the node is built: x or weight nil, a dtype other than
// float32 or float64 or differing between the inputs, x a scalar, weight
// not of rank 2, x's last axis not weight's in, bias not [out].
func Linear(x, weight, bias *gorgonia.Node) (*gorgonia.Node, error) {
	const name = "nn: Linear"
	if x == nil {
		return nil, fmt.Errorf("%s: x is nil", name)
	}
	if weight == nil {
		return nil, fmt.Errorf("%s: weight is nil", name)
	}
	args := []struct {
		n    *gorgonia.Node
		name string
	}{{x, "x"}, {weight, "weight"}, {bias, "bias"}}
	for _, a := range args {
		if a.n == nil {
			continue
		}
		if dt := a.n.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
			return nil, linearErr(x, weight, bias, "%s dtype %v, want float32 or float64", a.name, dt)
		}
		if a.n.Dtype() != x.Dtype() {
			return nil, linearErr(x, weight, bias, "%s dtype %v differs from x dtype %v", a.name, a.n.Dtype(), x.Dtype())
		}
	}
	ws := weight.Shape()
	if weight.IsScalar() || ws.Dims() != 2 {
		return nil, linearErr(x, weight, bias, "weight must be [out, in], got shape %v", ws)
	}
	xs := x.Shape()
	if x.IsScalar() || xs.Dims() < 1 {
		return nil, linearErr(x, weight, bias, "x must be [..., in] with in = %d (weight %v), got a scalar", ws[1], ws)
	}
	if in := xs[xs.Dims()-1]; in != ws[1] {
		return nil, linearErr(x, weight, bias, "x %v has %d input features in its last axis, weight %v [out, in] wants %d", xs, in, ws, ws[1])
	}
	in := []*gorgonia.Node{x, weight}
	if bias != nil {
		if bs := bias.Shape(); bias.IsScalar() || bs.Dims() != 1 || bs[0] != ws[0] {
			return nil, linearErr(x, weight, bias, "bias must be [out] = [%d] (weight %v), got shape %v", ws[0], ws, bs)
		}
		in = append(in, bias)
	}
	if xs.Dims() == 2 {
		return ad.Apply(linearSpec(bias != nil), in...)
	}
	// [..., in] → [N, in], and the result back to [..., out].
	outShape := append(xs.Clone()[:xs.Dims()-1], ws[0])
	b := ad.NewBuilder(x)
	in[0] = b.Do(func() (*gorgonia.Node, error) { return ad.Reshape(x, leading(xs), ws[1]) })
	y := b.Apply(linearSpec(bias != nil), in...)
	return b.Node(b.Do(func() (*gorgonia.Node, error) { return ad.Reshape(y, outShape...) }))
}

// leading is the product of s's axes but the last.
func leading(s tensor.Shape) int {
	n := 1
	for _, d := range s[:len(s)-1] {
		n *= d
	}
	return n
}

// linearSpec is Linear on x [N, in], weight [out, in] (and bias [out]).
// Backward, for the upstream gradient G [N, out], each built only when
// wanted:
//
//	d x      = G·weight   MatMul(G, weight, F, F)
//	d weight = Gᵀ·x       MatMul(G, x, T, F)
//	d bias   = Σ_n G[n]   ChannelSum of [N, out]
//
// MatMul's family and the ChannelSum/ChannelBroadcast pair are closed
// under differentiation, so Linear is differentiable to every order.
func linearSpec(bias bool) ad.OpSpec {
	dims := []int{2, 2}
	if bias {
		dims = append(dims, 1)
	}
	return withCUDA(ad.OpSpec{
		Name:       "Linear",
		Params:     fmt.Sprintf("bias=%v", bias),
		InputDims:  dims,
		OutputDims: 2,
		Shape: func(s []tensor.Shape) (tensor.Shape, error) {
			if s[0][1] != s[1][1] || bias && s[2][0] != s[1][0] {
				return nil, fmt.Errorf("nn: Linear: x %v, weight %v and bias %v: want [N, in], [out, in] and [out]", s[0], s[1], s[2:])
			}
			return tensor.Shape{s[0][0], s[1][0]}, nil
		},
		Kernel: ad.Floats(linearFwdKernel[float32], linearFwdKernel[float64]),
		// The bias rows, or the product's beta 0, set every element.
		KernelOverwrites: true,
		BackwardFor: func(in gorgonia.Nodes, _, grad *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
			b := ad.NewBuilder(grad)
			d := make(gorgonia.Nodes, len(in))
			if want[0] {
				d[0] = b.Apply(matMulSpec(2, false, false), grad, in[1])
			}
			if want[1] {
				d[1] = b.Apply(matMulSpec(2, true, false), grad, in[0])
			}
			if bias && want[2] {
				sum, _ := channelSpecs(grad.Shape())
				d[2] = b.Apply(sum, grad)
			}
			return b.Nodes(d...)
		},
	}, linearGPU{bias})
}

// linearFwdKernel is cpu.Linear on the product that product (product.go)
// picks (cpuProduct, asking for the installed BLAS once per run).
func linearFwdKernel[T gemm.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	n, o, k := in[0].Shape[0], in[1].Shape[0], in[1].Shape[1]
	if err := cpu.Linear(n, o, k, cpuProduct[T](), out.Data, in[0].Data, in[1].Data, ad.Optional(in, 2)); err != nil {
		return fmt.Errorf("nn: Linear: %w", err)
	}
	return nil
}

// linearGPU is what Linear's CUDA twin needs (linear_cuda.go).
type linearGPU struct{ bias bool }

// linearErr is Linear's error for format and args, with the nodes named
// after it (x "feat", weight "fc.weight", ...), the argument roles first.
func linearErr(x, weight, bias *gorgonia.Node, format string, args ...any) error {
	names := fmt.Sprintf("x %q, weight %q", nodeName(x), nodeName(weight))
	if bias != nil {
		names += fmt.Sprintf(", bias %q", nodeName(bias))
	}
	return fmt.Errorf("nn: Linear: "+format+" (nodes: %s)", append(args, names)...)
}
