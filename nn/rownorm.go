package nn

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/vmath"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The row normalisation of GroupNorm and LayerNorm and its family, on a
// tensor of shape s seen as rows of n contiguous elements, with per row
// μ = mean x, σ² = mean (x − μ)² (biased, as torch), r = (σ² + eps)^(-1/2)
// and y = (x − μ)·r:
//
//	RowNorm(x)        = y
//	RowNormGrad(x, u) = Jᵀu = r·(u − mean u − y·mean(u·y)), y recomputed
//	RowInvStd(x)      = r, one per row
//
// J = ∂y/∂x = r·(I − 11ᵀ/n − y·yᵀ/n) is symmetric, so RowNormGrad is
// linear in u with gradient RowNormGrad(x, V) for upstream V, and
// ∂r/∂x = −(r²/n)·y. Differentiating Σ V·RowNormGrad(x, u) =
// r·(V·u − ΣV·Σu/n) − (r/n)·P·Q, P = V·y, Q = u·y, w.r.t. x (with
// ∂P = RowNormGrad(x, V), ∂Q = RowNormGrad(x, u)) gives
//
//	−(r²/n)·[y·(A − 3PQ/n) + Q·(V − mean V) + P·(u − mean u)],
//	A = V·u − ΣV·Σu/n,
//
// built from RowNorm, RowInvStd, row sums and their broadcast (the
// channel family of normaffine.go with one channel per row) and Gorgonia's
// elementwise ops, all differentiable again: every order is available.

// rowGeom is shape s seen as rows of n elements, normalised with eps.
type rowGeom struct {
	s       tensor.Shape
	rows, n int
	eps     float64
}

func (g rowGeom) params() string { return fmt.Sprintf("%v rows %d eps %v", g.s, g.rows, g.eps) }

// chans is g as channels: one per row.
func (g rowGeom) chans() chanGeom { return chanGeom{1, g.rows, g.n} }

// normalizeRows is RowNorm(x): each of the rows of x (of any shape, its
// elements taken in order, rows of equal length) normalised by its mean
// and biased variance.
func normalizeRows(x *gorgonia.Node, rows int, eps float64) (*gorgonia.Node, error) {
	s := x.Shape()
	return ad.Apply(rowNormSpec(rowGeom{s.Clone(), rows, s.TotalSize() / max(rows, 1), eps}), x)
}

// rowSpec is an op of the family on g: inputs of shape s, a result of
// shape out.
func rowSpec(name string, g rowGeom, inputs int, out tensor.Shape, k ad.Kernel, kind rowNormKind,
	backward func(in gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error)) ad.OpSpec {
	dims := make([]int, inputs)
	for i := range dims {
		dims[i] = g.s.Dims()
	}
	return withCUDA(ad.OpSpec{
		Name: name, Params: g.params(), InputDims: dims, OutputDims: out.Dims(),
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			for _, t := range in {
				if !shapeIs(t, g.s) {
					return nil, fmt.Errorf("nn: %s: input %v, want %v", name, t, g.s)
				}
			}
			return out.Clone(), nil
		},
		Kernel:   k,
		Backward: backward,
	}, rowNormGPU{g.rows, g.n, g.eps, kind})
}

// rowNormSpec is RowNorm on g.
func rowNormSpec(g rowGeom) ad.OpSpec {
	return rowSpec("RowNorm", g, 1, g.s, ad.Floats(rowNormKernel[float32](g), rowNormKernel[float64](g)), rowNormForward,
		func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			d, err := ad.Apply(rowNormGradSpec(g), in[0], u)
			return gorgonia.Nodes{d}, err
		})
}

// rowNormGradSpec is RowNormGrad(x, u) on g.
func rowNormGradSpec(g rowGeom) ad.OpSpec {
	return rowSpec("RowNormGrad", g, 2, g.s, ad.Floats(rowNormGradKernel[float32](g), rowNormGradKernel[float64](g)), rowNormGrad,
		func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			du, err := ad.Apply(rowNormGradSpec(g), in[0], v)
			if err != nil {
				return nil, err
			}
			dx, err := rowNormGradX(g, in[0], in[1], v)
			return gorgonia.Nodes{dx, du}, err
		})
}

// rowInvStdSpec is RowInvStd on g: r [rows]; for upstream w,
// ∂x = −(1/n)·y·(w·r²) (w·r² broadcast along the rows).
func rowInvStdSpec(g rowGeom) ad.OpSpec {
	return rowSpec("RowInvStd", g, 1, tensor.Shape{g.rows}, ad.Floats(rowInvStdKernel[float32](g), rowInvStdKernel[float64](g)), rowNormInvStd,
		func(in gorgonia.Nodes, r, w *gorgonia.Node) (gorgonia.Nodes, error) {
			y, err := ad.Apply(rowNormSpec(g), in[0])
			if err != nil {
				return nil, err
			}
			rr, err := gorgonia.HadamardProd(r, r)
			if err != nil {
				return nil, err
			}
			c, err := gorgonia.HadamardProd(w, rr)
			if err != nil {
				return nil, err
			}
			if c, err = scale(c, -1/float64(g.n)); err != nil {
				return nil, err
			}
			_, spread := channelTotalSpecs(g.s, g.chans())
			cb, err := ad.Apply(spread, c)
			if err != nil {
				return nil, err
			}
			dx, err := gorgonia.HadamardProd(y, cb)
			return gorgonia.Nodes{dx}, err
		})
}

// rowNormGradX is the gradient of Σ V·RowNormGrad(x, u) w.r.t. x (the
// family's comment): α·y + β·V + γ·u + δ with, per row,
// α = −(r²/n)·(A − 3PQ/n), β = −(r²/n)·Q, γ = −(r²/n)·P and
// δ = (r²/n²)·(Q·ΣV + P·Σu).
func rowNormGradX(g rowGeom, x, u, v *gorgonia.Node) (*gorgonia.Node, error) {
	return buildNode(func(m func(*gorgonia.Node, error) *gorgonia.Node) *gorgonia.Node {
		y, r := m(ad.Apply(rowNormSpec(g), x)), m(ad.Apply(rowInvStdSpec(g), x))
		total, spread := channelTotalSpecs(g.s, g.chans())
		dot := channelDotSpec(g.s, g.chans())
		k := 1 / float64(g.n)
		sv, su := m(ad.Apply(total, v)), m(ad.Apply(total, u))
		p, q := m(ad.Apply(dot, v, y)), m(ad.Apply(dot, u, y))
		a := m(gorgonia.Sub(m(ad.Apply(dot, v, u)), m(scale(m(gorgonia.HadamardProd(sv, su)), k))))
		r2 := m(scale(m(gorgonia.HadamardProd(r, r)), -k)) // −r²/n
		alpha := m(gorgonia.HadamardProd(r2, m(gorgonia.Sub(a, m(scale(m(gorgonia.HadamardProd(p, q)), 3*k))))))
		beta := m(gorgonia.HadamardProd(r2, q))
		gamma := m(gorgonia.HadamardProd(r2, p))
		delta := m(scale(m(gorgonia.HadamardProd(r2, m(gorgonia.Add(m(gorgonia.HadamardProd(q, sv)), m(gorgonia.HadamardProd(p, su)))))), -k))
		term := func(c, t *gorgonia.Node) *gorgonia.Node { return m(gorgonia.HadamardProd(m(ad.Apply(spread, c)), t)) }
		dx := m(gorgonia.Add(term(alpha, y), term(beta, v)))
		dx = m(gorgonia.Add(dx, term(gamma, u)))
		return m(gorgonia.Add(dx, m(ad.Apply(spread, delta))))
	})
}

// buildNode returns the node that build makes, or the first error that
// one of its steps, each wrapped in m, returned.
func buildNode(build func(m func(*gorgonia.Node, error) *gorgonia.Node) *gorgonia.Node) (n *gorgonia.Node, err error) {
	type failed struct{ err error }
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(failed)
			if !ok {
				panic(r)
			}
			n, err = nil, f.err
		}
	}()
	return build(func(n *gorgonia.Node, err error) *gorgonia.Node {
		if err != nil {
			panic(failed{err})
		}
		return n
	}), nil
}

// rowStats sets d = x − μ (in T, μ rounded to T) and returns
// r = (σ² + eps)^(-1/2), σ² = mean d²: two vector sums (vmath, float64
// across lanes), the same for every caller, so RowNorm, RowNormGrad and
// RowInvStd agree on a row's statistics.
func rowStats[T ad.Float](d, x []T, eps float64) (r float64) {
	n := float64(len(x))
	vmath.Axpb(d, x, 1, -T(vmath.Sum(x)/n))
	return 1 / math.Sqrt(vmath.Dot(d, d)/n+eps)
}

// rowMoments returns rowStats's μ (rounded to T) and r without storing
// x − μ: the same sums (vmath.SubSqSum is Dot of vmath.Axpb's x − μ).
func rowMoments[T ad.Float](x []T, eps float64) (mu T, r float64) {
	n := float64(len(x))
	mu = T(vmath.Sum(x) / n)
	return mu, 1 / math.Sqrt(vmath.SubSqSum(x, mu)/n+eps)
}

// eachRow runs f on rows [lo, hi) of g, spread over goroutines when the
// tensor is large, in grains of about chanGrain elements handed out as
// workers finish (a descheduled worker does not hold the others up); a
// row's arithmetic does not depend on the split.
func eachRow(g rowGeom, f func(lo, hi int)) {
	if g.rows*g.n < chanGrain {
		f(0, g.rows)
		return
	}
	cpu.ParallelForGrains(g.rows, (chanGrain+g.n-1)/g.n, f)
}

func rowNormKernel[T ad.Float](g rowGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		eachRow(g, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				// fma(1, y, 0) is y: y = fma(r, x − μ, 0) is never −0.
				x := in[0].Data[i*g.n:][:g.n]
				mu, r := rowMoments(x, g.eps)
				vmath.NormAffine(out.Data[i*g.n:][:g.n], x, mu, T(r), 1, 0)
			}
		})
		return nil
	}
}

// rowNormGradKernel writes r·(u − mean u − y·mean(u·y)) for each row, y
// recomputed as RowNorm's kernel does.
func rowNormGradKernel[T ad.Float](g rowGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		n := float64(g.n)
		eachRow(g, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				gr, u := out.Data[i*g.n:][:g.n], in[1].Data[i*g.n:][:g.n]
				r := rowStats(gr, in[0].Data[i*g.n:][:g.n], g.eps)
				vmath.Axpb(gr, gr, T(r), 0) // y
				mu, muy := vmath.Sum(u)/n, vmath.Dot(u, gr)/n
				vmath.Axpb(gr, gr, T(muy), T(mu)) // mean u + y·mean(u·y)
				vmath.SubMul(gr, u, gr, 1)        // u − that
				vmath.Axpb(gr, gr, T(r), 0)
			}
		})
		return nil
	}
}

func rowInvStdKernel[T ad.Float](g rowGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		eachRow(g, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				_, r := rowMoments(in[0].Data[i*g.n:][:g.n], g.eps)
				out.Data[i] = T(r)
			}
		})
		return nil
	}
}

// The CUDA twin's descriptor (launch code in the *_cuda.go files; withCUDA
// ignores it in the CPU build).

// rowNormKind picks one of the row normalisation's ops (rownorm.go).
type rowNormKind int

const (
	rowNormForward rowNormKind = iota // RowNorm: (x − μ)·r
	rowNormGrad                       // RowNormGrad(x, u)
	rowNormInvStd                     // RowInvStd: r per row
)

// rowNormGPU is RowNorm, RowNormGrad or RowInvStd on rows of n elements
// (norm_cuda.go).
type rowNormGPU struct {
	rows, n int
	eps     float64
	kind    rowNormKind
}
