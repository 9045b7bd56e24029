package nn

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/vmath"
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
// which is 1 but for lse's rounding (lseGradRow). It takes lse,
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
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !shapeIs(in[0], s) {
				return nil, fmt.Errorf("nn: LogSumExp: input %v, want %v", in[0], s)
			}
			return tensor.Shape{rows}, nil
		},
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
			if !shapeIs(in[0], tensor.Shape{rows, n}) || !shapeIs(in[1], tensor.Shape{rows}) {
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
			ok := shapeIs(in[0], s)
			for _, v := range in[1:] {
				ok = ok && shapeIs(v, tensor.Shape{rows})
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
			sm, err := ad.Apply(softmaxSpec(s, 1, false), x)
			if err != nil {
				return nil, err
			}
			grads := make(gorgonia.Nodes, len(in))
			if want[0] {
				um := u
				if tg != nil {
					if um, err = ad.Apply(maskSpec(rows, tg.ignore), u, in[2]); err != nil {
						return nil, err
					}
				}
				ub, err := ad.Apply(bcast, um)
				if err != nil {
					return nil, err
				}
				w, err := gorgonia.HadamardProd(v, ub)
				if err != nil {
					return nil, err
				}
				if grads[0], err = ad.Apply(softmaxGradSpec(s, 1, false), sm, w); err != nil {
					return nil, err
				}
			}
			if want[ui] {
				vs, err := gorgonia.HadamardProd(v, sm)
				if err != nil {
					return nil, err
				}
				du, err := ad.Apply(sum, vs)
				if err != nil {
					return nil, err
				}
				if tg != nil {
					if du, err = ad.Apply(maskSpec(rows, tg.ignore), du, in[2]); err != nil {
						return nil, err
					}
					pick, _ := pickSpecs(rows, n, tg.ignore, false)
					vt, err := ad.Apply(pick, v, in[2])
					if err != nil {
						return nil, err
					}
					if du, err = gorgonia.Sub(du, vt); err != nil {
						return nil, err
					}
				}
				grads[ui] = du
			}
			return grads, nil
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
			if !shapeIs(in[0], tensor.Shape{rows}) || !shapeIs(in[1], tensor.Shape{rows}) {
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
		for r, t := range in[1].Ints {
			if t != ignore {
				out.Data[r] = in[0].Data[r] // out arrives zeroed
			}
		}
		return nil
	}
}

// lseKernel computes LogSumExp row by row (lseRow).
func lseKernel[T ad.Float](rows, n int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		x := in[0].Data
		eachRow(rowGeom{rows: rows, n: n}, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				out.Data[r] = lseRow(x[r*n : (r+1)*n])
			}
		})
		return nil
	}
}

// lseChunk is the length of lseRow's scratch, on the stack: the
// exponentials of a row are summed lseChunk at a time (a multiple of the
// vector width, so only a row's last chunk has a tail).
const lseChunk = 512

// lseRow is log Σ exp(x) as torch.logsumexp: m + log Σ exp(x − m) (see
// maxLogSum). A row holding NaN gives NaN, one holding +Inf gives +Inf,
// one of only −Inf (or empty) −Inf.
func lseRow[T ad.Float](x []T) T {
	m, ls, ok := maxLogSum(x)
	if !ok {
		return m
	}
	return T(float64(m) + ls)
}

// maxLogSum returns m = max x and log Σ exp(x − m), the sum in float64
// over vmath.ExpSum's chunks; ok false, and no sum, when m is NaN or ±Inf.
func maxLogSum[T ad.Float](x []T) (m T, logSum float64, ok bool) {
	m = vmath.Max(x)
	if f := float64(m); math.IsNaN(f) || math.IsInf(f, 0) {
		return m, 0, false
	}
	var buf [lseChunk]T
	var s float64
	for lo := 0; lo < len(x); lo += lseChunk {
		s += vmath.ExpSum(buf[:], x[lo:min(lo+lseChunk, len(x))], m)
	}
	return m, math.Log(s), true
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

// nllKernel computes NLL row by row: (m − x[r, t[r]]) + log s in
// float64, rounded once to T (maxLogSum), 0 where t[r] is ignore; NaN for
// a row whose maximum is NaN or ±Inf, as torch's log_softmax there.
func nllKernel[T ad.Float](n, ignore int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		x, t := in[0].Data, in[1].Ints
		if err := checkTargets(t, n, ignore); err != nil {
			return err
		}
		eachRow(rowGeom{rows: len(t), n: n}, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				var v T
				if ti := t[r]; ti != ignore {
					m, ls, ok := maxLogSum(x[r*n : (r+1)*n])
					if ok {
						v = T(float64(m) - float64(x[r*n+ti]) + ls)
					} else {
						v = T(math.NaN())
					}
				}
				out.Data[r] = v
			}
		})
		return nil
	}
}

// lseGradKernel computes LogSumExpGrad or, with tg, NLLGrad, row by row.
// LogSumExpGrad: U[r]·exp(x − lse[r]) (vmath.ExpSum shifted by lse[r],
// then scaled by U[r] over its sum: see lseGradRow); a row whose lse is
// NaN or ±Inf takes math.Exp element by element: NaN where x is NaN or
// equals an infinite lse, as torch. NLLGrad: U[r]·exp(x − m)/s (ExpSum
// shifted by the row's maximum m), less U[r] at the target; a zero row
// where the target is ignored, a NaN row where m is NaN or ±Inf (torch's
// log_softmax is NaN there).
func lseGradKernel[T ad.Float](n int, tg *lseTarget) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		x := in[0].Data
		var lse, u []T
		var t []int
		if tg == nil {
			lse, u = in[1].Data, in[2].Data
		} else {
			u, t = in[1].Data, in[2].Ints
			if err := checkTargets(t, n, tg.ignore); err != nil {
				return err
			}
		}
		eachRow(rowGeom{rows: len(u), n: n}, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				g, xr := out.Data[r*n:(r+1)*n], x[r*n:(r+1)*n]
				if t == nil {
					lseGradRow(g, xr, lse[r], u[r])
					continue
				}
				if t[r] == tg.ignore {
					clear(g)
					continue
				}
				m := vmath.Max(xr)
				if f := float64(m); math.IsNaN(f) || math.IsInf(f, 0) {
					for i := range g {
						g[i] = T(math.NaN())
					}
					continue
				}
				s := vmath.ExpSum(g, xr, m)
				vmath.Axpb(g, g, T(float64(u[r])/s), 0)
				g[t[r]] -= u[r]
			}
		})
		return nil
	}
}

// lseGradRow sets g = u·exp(x − lse)/Σ exp(x − lse), u·softmax(x) for any
// finite lse ≥ max x: lse = m + log s is rounded to T, and once |m| is
// large the rounding takes all of log s (1e30 + log 2 is 1e30 in float64,
// 1e8 + log 2 is 1e8 in float32), so exp(x − lse) alone would sum to s,
// not 1; for logits of 1e4 in float32 it is off by 1e-4 relative. The sum
// is the one ExpSum returns, so this is still one pass of exponentials.
func lseGradRow[T ad.Float](g, x []T, lse, u T) {
	if f := float64(lse); math.IsNaN(f) || math.IsInf(f, 0) {
		for i, v := range x {
			g[i] = u * T(math.Exp(float64(v-lse)))
		}
		return
	}
	s := vmath.ExpSum(g, x, lse)
	vmath.Axpb(g, g, T(float64(u)/s), 0)
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
