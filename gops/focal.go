package gops

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SigmoidFocalLoss's elementwise loss and its first derivatives are fused
// ops (cpu.FocalLoss, cpu.FocalLossGrad): one pass each over the logits
// instead of some twenty elementwise ops forward and forty backward, which
// were two fifths of a RetinaNet training step's graph time (a 2 × 12 276 ×
// 91 logit tensor at 256 × 256). The derivatives of the derivative ops
// (second order and up) are built from focalComposite, the same formula in
// differentiable elementwise ops, by ad.VJP: exact at every order, and paid
// for only by graphs that differentiate twice. The fused ops have no CUDA
// twins yet: the cuda build uses focalComposite alone (fusedFocal), whose
// ops run on the GPU.

// focalParams names a focal op's parameters in its spec's Params.
func focalParams(alpha, gamma float64, s tensor.Shape) string {
	return fmt.Sprintf("alpha %v gamma %v %v", alpha, gamma, s)
}

// focalNode is the focal loss of logits x and targets t (one shape),
// elementwise.
func focalNode(x, t *gorgonia.Node, alpha, gamma float64) (*gorgonia.Node, error) {
	if !fusedFocal {
		return focalComposite(x, t, alpha, gamma)
	}
	s, d := x.Shape(), x.Dims()
	spec := ad.OpSpec{
		Name: "SigmoidFocalLossElems", Params: focalParams(alpha, gamma, s),
		InputDims: []int{d, d}, OutputDims: d,
		Shape:            sameShapes("SigmoidFocalLossElems", s),
		Kernel:           ad.Floats(focalKernel[float32](alpha, gamma), focalKernel[float64](alpha, gamma)),
		KernelOverwrites: true,
		BackwardFor: func(in gorgonia.Nodes, _, u *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
			gs := make(gorgonia.Nodes, 2)
			for i, w := range want {
				if w {
					var err error
					if gs[i], err = focalGradNode(in[0], in[1], u, alpha, gamma, i == 1); err != nil {
						return nil, err
					}
				}
			}
			return gs, nil
		},
	}
	return ad.Apply(spec, x, t)
}

// focalGradNode is u ⊙ ∂l/∂x (or ∂l/∂t when wrtT) for the focal loss l
// of x and t, elementwise.
func focalGradNode(x, t, u *gorgonia.Node, alpha, gamma float64, wrtT bool) (*gorgonia.Node, error) {
	s, d := x.Shape(), x.Dims()
	name, wrt := "SigmoidFocalLossGradX", 0
	if wrtT {
		name, wrt = "SigmoidFocalLossGradT", 1
	}
	spec := ad.OpSpec{
		Name: name, Params: focalParams(alpha, gamma, s),
		InputDims: []int{d, d, d}, OutputDims: d,
		Shape:            sameShapes(name, s),
		Kernel:           ad.Floats(focalGradKernel[float32](alpha, gamma, wrtT), focalGradKernel[float64](alpha, gamma, wrtT)),
		KernelOverwrites: true,
		BackwardFor: func(in gorgonia.Nodes, _, v *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
			l, err := focalComposite(in[0], in[1], alpha, gamma)
			if err != nil {
				return nil, err
			}
			g, err := ad.VJP(l, in[2], in[wrt]) // u ⊙ ∂l/∂w, in differentiable ops
			if err != nil {
				return nil, err
			}
			var wrtNodes gorgonia.Nodes
			for i, w := range want {
				if w {
					wrtNodes = append(wrtNodes, in[i])
				}
			}
			if len(wrtNodes) == 0 {
				return make(gorgonia.Nodes, 3), nil
			}
			got, err := ad.VJP(g[0], v, wrtNodes...)
			if err != nil {
				return nil, err
			}
			gs := make(gorgonia.Nodes, 3)
			for i, w := range want {
				if w {
					gs[i], got = got[0], got[1:]
				}
			}
			return gs, nil
		},
	}
	return ad.Apply(spec, x, t, u)
}

// focalKernel is cpu.FocalLoss.
func focalKernel[T ad.Float](alpha, gamma float64) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.FocalLoss(out.Data, in[0].Data, in[1].Data, alpha, gamma)
		return nil
	}
}

// focalGradKernel is cpu.FocalLossGrad.
func focalGradKernel[T ad.Float](alpha, gamma float64, wrtT bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.FocalLossGrad(out.Data, in[0].Data, in[1].Data, in[2].Data, alpha, gamma, wrtT)
		return nil
	}
}

// focalComposite is the focal loss of x and t elementwise, built from
// differentiable elementwise ops as cpu.FocalLoss computes it:
// ce = (1 − t)·softplus(x) + t·softplus(−x), which is softplus(x) − x·t
// without its cancellation (for t = 1 and x = 12 that difference of two
// numbers near 12 left the 6e-6 loss a few bits, 5 % off in float32;
// nn.BinaryCrossEntropyWithLogits arranges it the same way), and
// q = 1 − p_t = s·(1 − t) + sigmoid(−x)·t, which does not cancel either.
func focalComposite(x, t *gorgonia.Node, alpha, gamma float64) (*gorgonia.Node, error) {
	b := newBuild(x)
	negX := b.Do(func() (*gorgonia.Node, error) { return gorgonia.Neg(x) })
	spPos := b.Do(func() (*gorgonia.Node, error) { return softplusNode(x) })
	spNeg := b.Do(func() (*gorgonia.Node, error) { return softplusNode(negX) })
	oneMinusT := b.RSub(1, t)
	ce := b.Add(b.HadamardProd(oneMinusT, spPos), b.HadamardProd(t, spNeg))
	loss := ce
	if gamma != 0 { // (1 − p_t)⁰ = 1; no unused nodes, which the LispMachine refuses
		p := b.Do(func() (*gorgonia.Node, error) { return sigmoidNode(x) })
		pc := b.Do(func() (*gorgonia.Node, error) { return sigmoidNode(negX) })
		q := b.Add(b.HadamardProd(p, oneMinusT), b.HadamardProd(pc, t))
		switch gamma {
		case 1:
			loss = b.HadamardProd(ce, q)
		case 2:
			loss = b.HadamardProd(ce, b.Square(q))
		default:
			loss = b.HadamardProd(ce, b.Do(func() (*gorgonia.Node, error) { return powNode(q, gamma) }))
		}
	}
	if alpha >= 0 {
		at := b.Add(b.Scale(t, alpha), b.Scale(oneMinusT, 1-alpha))
		loss = b.HadamardProd(at, loss)
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return loss, nil
}
