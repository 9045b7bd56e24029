package nn

import (
	"fmt"
	"slices"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
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

// kern is g as the kernels' geometry.
func (g rowGeom) kern() cpu.RowGeom { return cpu.RowGeom{Rows: g.rows, N: g.n, Eps: g.eps} }

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
				if !slices.Equal(t, g.s) {
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
			b := ad.NewBuilder(r)
			y := b.Apply(rowNormSpec(g), in[0])
			c := b.Scale(b.HadamardProd(w, b.HadamardProd(r, r)), -1/float64(g.n))
			_, spread := channelTotalSpecs(g.s, g.chans())
			return b.Nodes(b.HadamardProd(y, b.Apply(spread, c)))
		})
}

// rowNormGradX is the gradient of Σ V·RowNormGrad(x, u) w.r.t. x (the
// family's comment): α·y + β·V + γ·u + δ with, per row,
// α = −(r²/n)·(A − 3PQ/n), β = −(r²/n)·Q, γ = −(r²/n)·P and
// δ = (r²/n²)·(Q·ΣV + P·Σu).
func rowNormGradX(g rowGeom, x, u, v *gorgonia.Node) (*gorgonia.Node, error) {
	b := ad.NewBuilder(x)
	y, r := b.Apply(rowNormSpec(g), x), b.Apply(rowInvStdSpec(g), x)
	total, spread := channelTotalSpecs(g.s, g.chans())
	dot := channelDotSpec(g.s, g.chans())
	k := 1 / float64(g.n)
	sv, su := b.Apply(total, v), b.Apply(total, u)
	p, q := b.Apply(dot, v, y), b.Apply(dot, u, y)
	a := b.Sub(b.Apply(dot, v, u), b.Scale(b.HadamardProd(sv, su), k))
	r2 := b.Scale(b.HadamardProd(r, r), -k) // −r²/n
	alpha := b.HadamardProd(r2, b.Sub(a, b.Scale(b.HadamardProd(p, q), 3*k)))
	beta := b.HadamardProd(r2, q)
	gamma := b.HadamardProd(r2, p)
	delta := b.Scale(b.HadamardProd(r2, b.Add(b.HadamardProd(q, sv), b.HadamardProd(p, su))), -k)
	term := func(c, t *gorgonia.Node) *gorgonia.Node { return b.HadamardProd(b.Apply(spread, c), t) }
	dx := b.Add(term(alpha, y), term(beta, v))
	dx = b.Add(dx, term(gamma, u))
	return b.Node(b.Add(dx, b.Apply(spread, delta)))
}

func rowNormKernel[T ad.Float](g rowGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.RowNorm(g.kern(), out.Data, in[0].Data)
		return nil
	}
}

// rowNormGradKernel writes r·(u − mean u − y·mean(u·y)) for each row
// (cpu.RowNormGrad).
func rowNormGradKernel[T ad.Float](g rowGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.RowNormGrad(g.kern(), out.Data, in[0].Data, in[1].Data)
		return nil
	}
}

func rowInvStdKernel[T ad.Float](g rowGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.RowInvStd(g.kern(), out.Data, in[0].Data)
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
