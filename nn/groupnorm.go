package nn

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/vmath"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// groupNormAffine is GroupNorm with a weight or a bias as one op:
// ChannelAffine(RowNorm(x), w, b) computed row by row (a row is one group
// of one sample), each row's affine step done while the row is in cache.
// The numbers are the two ops' to the bit; one result of x's size instead
// of two, and one pass over it less. Its gradients are the two ops':
//
//	∂x = RowNormGrad(x, ChannelAffine(U, w)),
//	∂w = ChannelDot(U, RowNorm(x)), ∂b = ChannelTotal(U),
//
// computed by GroupNormGradX and GroupNormGradW below (without storing
// ChannelAffine(U, w) or RowNorm(x)); all members of closed families, so
// every order is available.
func groupNormAffine(x, weight, bias *gorgonia.Node, rg rowGeom, cg chanGeom, groups int) (*gorgonia.Node, error) {
	in := gorgonia.Nodes{x}
	for _, p := range []*gorgonia.Node{weight, bias} {
		if p != nil {
			in = append(in, p)
		}
	}
	return ad.Apply(groupNormAffineSpec(rg, cg, groups, weight != nil, bias != nil), in...)
}

func groupNormAffineSpec(rg rowGeom, cg chanGeom, groups int, hasW, hasB bool) ad.OpSpec {
	s := rg.s.Clone()
	return withCUDA(ad.OpSpec{
		Name: "GroupNormAffine", Params: fmt.Sprintf("%s groups %d as %v weight %v bias %v", rg.params(), groups, cg, hasW, hasB),
		InputDims: affineDims(s, hasW, hasB), OutputDims: s.Dims(), Shape: affineShape("GroupNorm", s, cg.c),
		Kernel:           ad.Floats(groupNormAffineKernel[float32](rg, cg, hasW, hasB), groupNormAffineKernel[float64](rg, cg, hasW, hasB)),
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			x := in[0]
			var grads gorgonia.Nodes
			if hasW {
				dx, err := ad.Apply(groupNormGradXSpec(rg, cg), x, u, in[1])
				if err != nil {
					return nil, err
				}
				dw, err := ad.Apply(groupNormGradWSpec(rg, cg), u, x)
				if err != nil {
					return nil, err
				}
				grads = append(grads, dx, dw)
			} else {
				dx, err := ad.Apply(rowNormGradSpec(rg), x, u)
				if err != nil {
					return nil, err
				}
				grads = append(grads, dx)
			}
			if hasB {
				total, _ := channelTotalSpecs(s, cg)
				db, err := ad.Apply(total, u)
				if err != nil {
					return nil, err
				}
				grads = append(grads, db)
			}
			return grads, nil
		},
	}, groupNormAffineGPU{rowNormGPU{rg.rows, rg.n, rg.eps, rowNormForward}, channelAffineGPU{cg, hasW, hasB}})
}

// groupNormAffineKernel is rowNormKernel then channelAffineKernel, one row
// (a group: C/groups planes of cg.inner) at a time, with the same
// arithmetic as the two. Where the vector loops split every plane as they
// split the row (vmath.VectorWhole), each row takes three passes, two
// sums and NormAffine, none storing an intermediate; otherwise the
// unfused chain.
func groupNormAffineKernel[T ad.Float](rg rowGeom, cg chanGeom, hasW, hasB bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		w, b := affineParams(cg.c, in, hasW, hasB)
		perRow := rg.n / cg.inner // channels in a row
		fused := cg.inner > 1 && vmath.VectorWhole[T](cg.inner)
		eachRow(rg, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				y, x := out.Data[i*rg.n:][:rg.n], in[0].Data[i*rg.n:][:rg.n]
				c0 := (i * perRow) % cg.c
				if fused {
					mu, r := rowMoments(x, rg.eps)
					for j := 0; j < perRow; j++ {
						at := j * cg.inner
						vmath.NormAffine(y[at:at+cg.inner], x[at:at+cg.inner], mu, T(r), w[c0+j], b[c0+j])
					}
					continue
				}
				r := rowStats(y, x, rg.eps)
				vmath.Axpb(y, y, T(r), 0)
				for j := 0; j < perRow; j++ {
					ci := c0 + j
					p := y[j*cg.inner:][:cg.inner]
					if cg.inner > 1 {
						vmath.Axpb(p, p, w[ci], b[ci]) // as channelAffineKernel's planes
						continue
					}
					p[0] = p[0]*w[ci] + b[ci] // as its rows of C
				}
			}
		})
		return nil
	}
}

// The gradients of GroupNormAffine with a weight, each one op so that a
// first-order pass makes one result of x's size (∂x) besides the forward's:
//
//	GroupNormGradX(x, u, w) = RowNormGrad(x, ChannelAffine(u, w))
//	GroupNormGradW(u, x)    = ChannelDot(u, RowNorm(x))
//
// Their own gradients, for upstream V, are built from the closed families
// (and each other), so every order is available:
//
//	GradX: ∂x = d/dx Σ V·RowNormGrad(x, uw) (rowNormGradX, uw = ChannelAffine(u, w)),
//	       ∂u = ChannelAffine(RowNormGrad(x, V), w), ∂w = ChannelDot(RowNormGrad(x, V), u)
//	GradW: ∂u = ChannelAffine(RowNorm(x), V), ∂x = GroupNormGradX(x, u, V)
func groupNormGradXSpec(rg rowGeom, cg chanGeom) ad.OpSpec {
	s := rg.s.Clone()
	return withCUDA(ad.OpSpec{
		Name: "GroupNormGradX", Params: fmt.Sprintf("%s as %v", rg.params(), cg), InputDims: []int{s.Dims(), s.Dims(), 1}, OutputDims: s.Dims(),
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !shapeIs(in[0], s) || !shapeIs(in[1], s) || !shapeIs(in[2], tensor.Shape{cg.c}) {
				return nil, fmt.Errorf("nn: GroupNormGradX: inputs %v, %v and %v, want %v, %v and (%d)", in[0], in[1], in[2], s, s, cg.c)
			}
			return s.Clone(), nil
		},
		Kernel:           ad.Floats(groupNormGradXKernel[float32](rg, cg), groupNormGradXKernel[float64](rg, cg)),
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			x, u, w := in[0], in[1], in[2]
			return gorgoniaNodes(func(m func(*gorgonia.Node, error) *gorgonia.Node) gorgonia.Nodes {
				uw := m(ad.Apply(channelAffineSpec(s, cg, true, false), u, w))
				dx := m(rowNormGradX(rg, x, uw, v))
				gv := m(ad.Apply(rowNormGradSpec(rg), x, v))
				du := m(ad.Apply(channelAffineSpec(s, cg, true, false), gv, w))
				dw := m(ad.Apply(channelDotSpec(s, cg), gv, u))
				return gorgonia.Nodes{dx, du, dw}
			})
		},
	}, groupNormGradGPU{rg, cg, false})
}

func groupNormGradWSpec(rg rowGeom, cg chanGeom) ad.OpSpec {
	s := rg.s.Clone()
	return withCUDA(ad.OpSpec{
		Name: "GroupNormGradW", Params: fmt.Sprintf("%s as %v", rg.params(), cg), InputDims: []int{s.Dims(), s.Dims()}, OutputDims: 1,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !shapeIs(in[0], s) || !shapeIs(in[1], s) {
				return nil, fmt.Errorf("nn: GroupNormGradW: inputs %v and %v, want %v", in[0], in[1], s)
			}
			return tensor.Shape{cg.c}, nil
		},
		Kernel:           ad.Floats(groupNormGradWKernel[float32](rg, cg), groupNormGradWKernel[float64](rg, cg)),
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			u, x := in[0], in[1]
			return gorgoniaNodes(func(m func(*gorgonia.Node, error) *gorgonia.Node) gorgonia.Nodes {
				y := m(ad.Apply(rowNormSpec(rg), x))
				du := m(ad.Apply(channelAffineSpec(s, cg, true, false), y, v))
				dx := m(ad.Apply(groupNormGradXSpec(rg, cg), x, u, v))
				return gorgonia.Nodes{du, dx}
			})
		},
	}, groupNormGradGPU{rg, cg, true})
}

// gorgoniaNodes is buildNode for several nodes.
func gorgoniaNodes(build func(m func(*gorgonia.Node, error) *gorgonia.Node) gorgonia.Nodes) (ns gorgonia.Nodes, err error) {
	_, err = buildNode(func(m func(*gorgonia.Node, error) *gorgonia.Node) *gorgonia.Node {
		ns = build(m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ns, nil
}

// groupNormGradXKernel writes r·(uw − mean uw − y·mean(uw·y)) per row,
// uw = u·w[c] never stored: its means come from per-plane sums, and the
// row is −r·(y·mean(uw·y) + mean uw) + (r·w[c])·u, plane by plane. Where
// vmath.VectorWhole allows, a row takes four passes (two sums for the
// statistics, one for the per-plane sums, vmath.NormGrad) and y is never
// stored; otherwise the unfused chain, with the same arithmetic.
func groupNormGradXKernel[T ad.Float](rg rowGeom, cg chanGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		perRow, n, w := rg.n/cg.inner, float64(rg.n), in[2].Data
		fused := vmath.VectorWhole[T](cg.inner)
		eachRow(rg, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				gr, u, x := out.Data[i*rg.n:][:rg.n], in[1].Data[i*rg.n:][:rg.n], in[0].Data[i*rg.n:][:rg.n]
				c0 := (i * perRow) % cg.c
				var su, suy float64
				if fused {
					mu, r := rowMoments(x, rg.eps)
					for j := 0; j < perRow; j++ {
						at := j * cg.inner
						s, sy := vmath.SumDotNorm(u[at:at+cg.inner], x[at:at+cg.inner], mu, T(r))
						su += float64(w[c0+j]) * s
						suy += float64(w[c0+j]) * sy
					}
					for j := 0; j < perRow; j++ {
						at := j * cg.inner
						vmath.NormGrad(gr[at:at+cg.inner], u[at:at+cg.inner], x[at:at+cg.inner], mu, T(r),
							T(suy/n), T(su/n), T(-r), T(-r*float64(w[c0+j])))
					}
					continue
				}
				r := rowStats(gr, x, rg.eps)
				vmath.Axpb(gr, gr, T(r), 0) // y
				for j := 0; j < perRow; j++ {
					up, yp := u[j*cg.inner:][:cg.inner], gr[j*cg.inner:][:cg.inner]
					su += float64(w[c0+j]) * vmath.Sum(up)
					suy += float64(w[c0+j]) * vmath.Dot(up, yp)
				}
				vmath.Axpb(gr, gr, T(suy/n), T(su/n)) // y·mean(uw·y) + mean uw
				for j := 0; j < perRow; j++ {
					p := gr[j*cg.inner:][:cg.inner]
					vmath.Axpb(p, p, T(-r), 0)
					vmath.SubMul(p, p, u[j*cg.inner:][:cg.inner], T(-r*float64(w[c0+j])))
				}
			}
		})
		return nil
	}
}

// groupNormGradWKernel writes Σ over samples (in order) of
// r·Σ u·(x − μ) for each channel's plane, (μ, r) as RowNorm computes
// them. Row by row (each row's planes read while it is in cache), the
// terms kept per sample and channel, then added in sample order.
func groupNormGradWKernel[T ad.Float](rg rowGeom, cg chanGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		u, x := in[0].Data, in[1].Data
		perRow := rg.n / cg.inner
		terms := make([]float64, cg.outer*cg.c) // [outer, C]: r·Σ u·(x − μ)
		eachRow(rg, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				mu, r := rowMoments(x[i*rg.n:][:rg.n], rg.eps)
				for j := 0; j < perRow; j++ {
					at := i*rg.n + j*cg.inner
					terms[i*perRow+j] = r * vmath.SubDot(u[at:at+cg.inner], x[at:at+cg.inner], mu)
				}
			}
		})
		for ci := range cg.c {
			var acc float64
			for o := 0; o < cg.outer; o++ {
				acc += terms[o*cg.c+ci]
			}
			out.Data[ci] = T(acc)
		}
		return nil
	}
}
