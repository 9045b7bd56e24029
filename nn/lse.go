package nn

import (
	"fmt"
	"slices"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// CrossEntropy's row ops on logits x [rows, n] (n classes), which never
// write a log-softmax [rows, n]:
//
//   - LogSumExp: lse[r] = m + log Σ_k exp(x[r, k] − m), m the row's
//     maximum, as torch.logsumexp(x, 1);
//   - NLL: M[r]·((m − x[r, t[r]]) + log s) = −M[r]·log_softmax(x)[r,
//     t[r]] for a target t, m the row's maximum and s = Σ_k exp(x[r, k] −
//     m), M[r] = 0 where t[r] is the ignored value, else 1: rounded as
//     torch's log_softmax, not through lse (lse − x[t] carries lse's
//     rounding, about |m|·2⁻²⁴ in float32: 1 % of the loss of [50, 40,
//     30] with target 0);
//   - LogSumExpGrad(x, lse, U) = U[r]·exp(x[r, k] − lse[r]) (LogSumExp's
//     gradient: one pass over x, no max), and NLLGrad(x, U, t) =
//     M[r]·U[r]·(exp(x[r, k] − m)/s − [k = t[r]]) (NLL's).
//
// exp(x − lse) is softmax(x); LogSumExpGrad divides it by its row sum,
// which is 1 but for lse's rounding (cpu.LogSumExpGrad). It takes lse,
// LogSumExp's result, as an input that it treats as the function of x it
// is: it is not differentiated w.r.t. it (DiffWRT false), its derivative
// w.r.t. x is the total one, through lse, built from Softmax and
// SoftmaxGrad. It must be given lse = LogSumExp(x) of the same x. NLL and
// NLLGrad find m and s themselves, so CrossEntropy needs no LogSumExp
// (label smoothing takes a LogSoftmax: lse·Σw − Σ w·x carried lse's
// rounding), and NLL's gradient w.r.t. x is one node, not a scatter added
// to LogSumExp's. LogSumExp and LogSumExpGrad remain for tests.

// lseTarget is NLL's target handling: the ignored value.
type lseTarget struct{ ignore int }

// lseSpec is LogSumExp along the rows of [rows, n] → [rows].
func lseSpec(rows, n int) ad.OpSpec {
	s := tensor.Shape{rows, n}
	return withCUDA(ad.OpSpec{
		Name: "LogSumExp", Params: fmt.Sprint(s), InputDims: []int{2}, OutputDims: 1,
		Shape:            ad.FixedShape("nn: LogSumExp", s, tensor.Shape{rows}),
		Kernel:           ad.Floats(lseKernel[float32](rows, n), lseKernel[float64](rows, n)),
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, out, u *gorgonia.Node) (gorgonia.Nodes, error) {
			d, err := ad.Apply(lseGradSpec(rows, n, nil), in[0], out, u)
			return gorgonia.Nodes{d}, err
		},
	}, lseGPU{rows: rows, n: n, kind: lseForward})
}

// nllSpec is NLL(x [rows, n], t [rows]) → [rows]. A target outside
// [0, n) that is not ignore is an error when the op runs (pickKernel's).
func nllSpec(rows, n, ignore int) ad.OpSpec {
	return withCUDA(ad.OpSpec{
		Name: "NLL", Params: fmt.Sprintf("[%d %d] ignore %d", rows, n, ignore), InputDims: []int{2, 1}, OutputDims: 1,
		InputDtypes: []tensor.Dtype{{}, tensor.Int}, DiffWRT: []bool{true, false},
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], tensor.Shape{rows, n}) || !slices.Equal(in[1], tensor.Shape{rows}) {
				return nil, fmt.Errorf("nn: NLL: inputs %v and %v, want (%d, %d) and (%d)", in[0], in[1], rows, n, rows)
			}
			return tensor.Shape{rows}, nil
		},
		Kernel:           ad.Floats(nllKernel[float32](n, ignore), nllKernel[float64](n, ignore)),
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			d, err := ad.Apply(lseGradSpec(rows, n, &lseTarget{ignore}), in[0], u, in[1])
			return gorgonia.Nodes{d, nil}, err
		},
	}, lseGPU{rows: rows, n: n, kind: lseNLL, ignore: ignore})
}

// lseGradSpec is LogSumExpGrad(x, lse, U) or, with a target, NLLGrad(x,
// U, t): [rows, n]. Their derivatives, for upstream V and S =
// softmax(x) (the Softmax op), M·U written u: w.r.t. x,
// SoftmaxGrad(S, V ⊙ u) (S ⊙ (W − Σ_k W ⊙ S), W = V ⊙ u: the total
// derivative through lse); w.r.t. U, Σ_k V ⊙ S (with a target:
// Mask(Σ_k V ⊙ S) − Pick(V, t), and u = Mask(U): a select, so that a NaN
// upstream on an ignored row, as "mean" of all-ignored rows gives, stays
// out). Softmax, SoftmaxGrad, the picks, Mask and the axis sums
// differentiate again, so every order is available.
func lseGradSpec(rows, n int, tg *lseTarget) ad.OpSpec {
	s := tensor.Shape{rows, n}
	name, params := "LogSumExpGrad", fmt.Sprint(s)
	dims, dts, diff := []int{2, 1, 1}, []tensor.Dtype(nil), []bool{true, false, true}
	ui := 2 // U's input
	gpu := lseGPU{rows: rows, n: n, kind: lseGrad}
	if tg != nil {
		name, params = "NLLGrad", fmt.Sprintf("%v ignore %d", s, tg.ignore)
		dts, diff, ui = []tensor.Dtype{{}, {}, tensor.Int}, []bool{true, true, false}, 1
		gpu = lseGPU{rows: rows, n: n, kind: lseNLLGrad, ignore: tg.ignore}
	}
	return withCUDA(ad.OpSpec{
		Name: name, Params: params, InputDims: dims, OutputDims: 2, InputDtypes: dts, DiffWRT: diff,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			ok := slices.Equal(in[0], s)
			for _, v := range in[1:] {
				ok = ok && slices.Equal(v, tensor.Shape{rows})
			}
			if !ok {
				return nil, fmt.Errorf("nn: %s: inputs %v, want %v and then (%d)", name, in, s, rows)
			}
			return s.Clone(), nil
		},
		Kernel:           ad.Floats(lseGradKernel[float32](n, tg), lseGradKernel[float64](n, tg)),
		KernelOverwrites: true,
		BackwardFor: func(in gorgonia.Nodes, _, v *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
			x, u := in[0], in[ui]
			sum, bcast := axisSpecs(s, 1)
			b := ad.NewBuilder(v)
			// mask is Mask(a, t) with a target, a itself without.
			mask := func(a *gorgonia.Node) *gorgonia.Node {
				if tg == nil {
					return a
				}
				return b.Apply(maskSpec(rows, tg.ignore), a, in[2])
			}
			sm := b.Apply(softmaxSpec(s, 1, false), x)
			grads := make(gorgonia.Nodes, len(in))
			if want[0] {
				w := b.HadamardProd(v, b.Apply(bcast, mask(u)))
				grads[0] = b.Apply(softmaxGradSpec(s, 1, false), sm, w)
			}
			if want[ui] {
				du := mask(b.Apply(sum, b.HadamardProd(v, sm)))
				if tg != nil {
					pick, _ := pickSpecs(rows, n, tg.ignore, false)
					du = b.Sub(du, b.Apply(pick, v, in[2]))
				}
				grads[ui] = du
			}
			return b.Nodes(grads...)
		},
	}, gpu)
}

// maskSpec is Mask(v [rows], t [rows]): v[r], or 0 where t[r] is ignore
// (a select, not a product: 0 also for a NaN or infinite v[r]). Linear in
// v and its own transpose.
func maskSpec(rows, ignore int) ad.OpSpec {
	var spec ad.OpSpec
	spec = withCUDA(ad.OpSpec{
		Name: "Mask", Params: fmt.Sprintf("(%d) ignore %d", rows, ignore), InputDims: []int{1, 1}, OutputDims: 1,
		InputDtypes: []tensor.Dtype{{}, tensor.Int}, DiffWRT: []bool{true, false},
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], tensor.Shape{rows}) || !slices.Equal(in[1], tensor.Shape{rows}) {
				return nil, fmt.Errorf("nn: Mask: inputs %v and %v, want (%d)", in[0], in[1], rows)
			}
			return tensor.Shape{rows}, nil
		},
		Kernel: ad.Floats(maskKernel[float32](ignore), maskKernel[float64](ignore)),
		Backward: func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
			d, err := ad.Apply(spec, g, in[1])
			return gorgonia.Nodes{d, nil}, err
		},
	}, lseGPU{rows: rows, kind: lseMask, ignore: ignore})
	return spec
}

func maskKernel[T ad.Float](ignore int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.Mask(ignore, out.Data, in[0].Data, in[1].Ints) // out arrives zeroed
		return nil
	}
}

// lseKernel computes LogSumExp row by row (cpu.LogSumExp).
func lseKernel[T ad.Float](rows, n int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.LogSumExp(rows, n, out.Data, in[0].Data)
		return nil
	}
}

// checkTargets is pickKernel's error for a target outside [0, n) that is
// not ignore.
func checkTargets(t []int, n, ignore int) error {
	for i, ti := range t {
		if ti != ignore && (ti < 0 || ti >= n) {
			return fmt.Errorf("nn: CrossEntropy: target %d at row %d is outside [0, %d) and not IgnoreIndex %d", ti, i, n, ignore)
		}
	}
	return nil
}

// nllKernel computes NLL row by row (cpu.NLL), after checking the
// targets.
func nllKernel[T ad.Float](n, ignore int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		x, t := in[0].Data, in[1].Ints
		if err := checkTargets(t, n, ignore); err != nil {
			return err
		}
		cpu.NLL(n, ignore, out.Data, x, t)
		return nil
	}
}

// lseGradKernel computes LogSumExpGrad or, with tg, NLLGrad, row by row
// (cpu.LogSumExpGrad, cpu.NLLGrad), after checking NLLGrad's targets.
func lseGradKernel[T ad.Float](n int, tg *lseTarget) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		if tg == nil {
			cpu.LogSumExpGrad(n, out.Data, in[0].Data, in[1].Data, in[2].Data)
			return nil
		}
		t := in[2].Ints
		if err := checkTargets(t, n, tg.ignore); err != nil {
			return err
		}
		cpu.NLLGrad(n, tg.ignore, out.Data, in[0].Data, in[1].Data, t)
		return nil
	}
}

// The CUDA twin's descriptor (launch code in the *_cuda.go files; withCUDA
// ignores it in the CPU build).

// lseKind picks one of CrossEntropy's row ops (lse.go).
type lseKind int

const (
	lseForward lseKind = iota // LogSumExp: [rows, n] → [rows]
	lseNLL                    // NLL(x, lse, t)
	lseGrad                   // LogSumExpGrad(x, lse, U)
	lseNLLGrad                // NLLGrad(x, lse, U, t)
	lseMask                   // Mask(v, t): v, 0 where t is ignored
)

// lseGPU is LogSumExp, NLL or their gradients on rows of n elements
// (loss_cuda.go); ignore is the ignored target of NLL, NLLGrad and Mask.
type lseGPU struct {
	rows, n int
	kind    lseKind
	ignore  int
}
