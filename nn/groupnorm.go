package nn

import (
	"fmt"
	"math"

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
		BackwardFor: func(in gorgonia.Nodes, _, u *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
			return groupNormAffineBackward(rg, cg, hasW, hasB, in, u, want)
		},
	}, groupNormAffineGPU{rowNormGPU{rg.rows, rg.n, rg.eps, rowNormForward}, channelAffineGPU{cg, hasW, hasB}})
}

// groupNormAffineBackward builds the gradients that want asks for. When
// ∂w is wanted, one GroupNormStats pass over (u, x) gives every row's
// (μ, r) and every plane's Σu and Σu·y, which ∂x, ∂w and ∂b then share:
// ∂w and ∂b become sums over samples of [N, C] numbers, and ∂x one pass
// over (u, x) without recomputing the statistics: u and x are read twice
// each, where GroupNormGradX, GroupNormGradW and ChannelTotal read u three
// times and x twice, with the row's moments computed twice. Without ∂w,
// GroupNormGradX (or RowNormGrad) and ChannelTotal.
func groupNormAffineBackward(rg rowGeom, cg chanGeom, hasW, hasB bool, in gorgonia.Nodes, u *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
	x := in[0]
	grads := make(gorgonia.Nodes, len(in))
	bi := len(in) - 1 // the bias's input, when hasB
	build := func() error {
		if hasW && want[1] {
			stats, err := ad.Apply(groupNormStatsSpec(rg, cg), u, x)
			if err != nil {
				return err
			}
			if want[0] {
				if grads[0], err = ad.Apply(groupNormGradXSpec(rg, cg, true), x, u, in[1], stats); err != nil {
					return err
				}
			}
			if grads[1], err = ad.Apply(groupNormGradWSpec(rg, cg, true), u, x, stats); err != nil {
				return err
			}
			if hasB && want[bi] {
				grads[bi], err = ad.Apply(groupNormGradBSpec(rg, cg), u, stats)
			}
			return err
		}
		var err error
		if want[0] {
			if hasW {
				grads[0], err = ad.Apply(groupNormGradXSpec(rg, cg, false), x, u, in[1])
			} else {
				grads[0], err = ad.Apply(rowNormGradSpec(rg), x, u)
			}
			if err != nil {
				return err
			}
		}
		if hasB && want[bi] {
			total, _ := channelTotalSpecs(rg.s, cg)
			grads[bi], err = ad.Apply(total, u)
		}
		return err
	}
	if err := build(); err != nil {
		return nil, err
	}
	return grads, nil
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
//	GroupNormGradB(u)       = ChannelTotal(u)
//
// Their own gradients, for upstream V, are built from the closed families
// (and each other), so every order is available:
//
//	GradX: ∂x = d/dx Σ V·RowNormGrad(x, uw) (rowNormGradX, uw = ChannelAffine(u, w)),
//	       ∂u = ChannelAffine(RowNormGrad(x, V), w), ∂w = ChannelDot(RowNormGrad(x, V), u)
//	GradW: ∂u = ChannelAffine(RowNorm(x), V), ∂x = GroupNormGradX(x, u, V)
//	GradB: ∂u = ChannelSpread(V)
//
// With stats, GradX and GradW take a last input, GroupNormStats(u, x)
// (groupNormStatsSpec), and GroupNormGradB exists only so: the same
// functions of (x, u, w), computed from the shared statistics. That input
// is a function of the others, so it is declared without a gradient
// (DiffWRT false) and the gradients above, w.r.t. x, u and w, are the
// whole derivative.
func groupNormGradXSpec(rg rowGeom, cg chanGeom, stats bool) ad.OpSpec {
	s := rg.s.Clone()
	dims, diff, kernel := []int{s.Dims(), s.Dims(), 1}, []bool{true, true, true}, ad.Floats(groupNormGradXKernel[float32](rg, cg), groupNormGradXKernel[float64](rg, cg))
	if stats {
		dims, diff, kernel = append(dims, 1), append(diff, false), ad.Floats(groupNormGradXStatsKernel[float32](rg, cg), groupNormGradXStatsKernel[float64](rg, cg))
	}
	return withCUDA(ad.OpSpec{
		Name: "GroupNormGradX", Params: fmt.Sprintf("%s as %v stats %v", rg.params(), cg, stats), InputDims: dims, OutputDims: s.Dims(), DiffWRT: diff,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !shapeIs(in[0], s) || !shapeIs(in[1], s) || !shapeIs(in[2], tensor.Shape{cg.c}) || stats && !shapeIs(in[3], statsShape(rg, cg)) {
				return nil, fmt.Errorf("nn: GroupNormGradX: inputs %v, want %v, %v, (%d) and the statistics %v", in, s, s, cg.c, statsShape(rg, cg))
			}
			return s.Clone(), nil
		},
		Kernel:           kernel,
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			x, u, w := in[0], in[1], in[2]
			return gorgoniaNodes(func(m func(*gorgonia.Node, error) *gorgonia.Node) gorgonia.Nodes {
				uw := m(ad.Apply(channelAffineSpec(s, cg, true, false), u, w))
				dx := m(rowNormGradX(rg, x, uw, v))
				gv := m(ad.Apply(rowNormGradSpec(rg), x, v))
				du := m(ad.Apply(channelAffineSpec(s, cg, true, false), gv, w))
				dw := m(ad.Apply(channelDotSpec(s, cg), gv, u))
				if stats {
					return gorgonia.Nodes{dx, du, dw, nil}
				}
				return gorgonia.Nodes{dx, du, dw}
			})
		},
	}, groupNormGradGPU{rg, cg, groupNormGradXKind, stats})
}

func groupNormGradWSpec(rg rowGeom, cg chanGeom, stats bool) ad.OpSpec {
	s := rg.s.Clone()
	dims, diff, kernel := []int{s.Dims(), s.Dims()}, []bool{true, true}, ad.Floats(groupNormGradWKernel[float32](rg, cg), groupNormGradWKernel[float64](rg, cg))
	if stats {
		dims, diff, kernel = append(dims, 1), append(diff, false), ad.Floats(groupNormStatsTotal[float32](rg, cg, 1), groupNormStatsTotal[float64](rg, cg, 1))
	}
	return withCUDA(ad.OpSpec{
		Name: "GroupNormGradW", Params: fmt.Sprintf("%s as %v stats %v", rg.params(), cg, stats), InputDims: dims, OutputDims: 1, DiffWRT: diff,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !shapeIs(in[0], s) || !shapeIs(in[1], s) || stats && !shapeIs(in[2], statsShape(rg, cg)) {
				return nil, fmt.Errorf("nn: GroupNormGradW: inputs %v, want %v, %v and the statistics %v", in, s, s, statsShape(rg, cg))
			}
			return tensor.Shape{cg.c}, nil
		},
		Kernel:           kernel,
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			u, x := in[0], in[1]
			return gorgoniaNodes(func(m func(*gorgonia.Node, error) *gorgonia.Node) gorgonia.Nodes {
				y := m(ad.Apply(rowNormSpec(rg), x))
				du := m(ad.Apply(channelAffineSpec(s, cg, true, false), y, v))
				dx := m(ad.Apply(groupNormGradXSpec(rg, cg, false), x, u, v))
				if stats {
					return gorgonia.Nodes{du, dx, nil}
				}
				return gorgonia.Nodes{du, dx}
			})
		},
	}, groupNormGradGPU{rg, cg, groupNormGradWKind, stats})
}

// groupNormGradBSpec is GroupNormGradB(u, stats) = ChannelTotal(u), from
// the statistics' per-plane sums.
func groupNormGradBSpec(rg rowGeom, cg chanGeom) ad.OpSpec {
	s := rg.s.Clone()
	return withCUDA(ad.OpSpec{
		Name: "GroupNormGradB", Params: fmt.Sprintf("%s as %v", rg.params(), cg), InputDims: []int{s.Dims(), 1}, OutputDims: 1, DiffWRT: []bool{true, false},
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !shapeIs(in[0], s) || !shapeIs(in[1], statsShape(rg, cg)) {
				return nil, fmt.Errorf("nn: GroupNormGradB: inputs %v, want %v and the statistics %v", in, s, statsShape(rg, cg))
			}
			return tensor.Shape{cg.c}, nil
		},
		Kernel:           ad.Floats(groupNormStatsTotal[float32](rg, cg, 0), groupNormStatsTotal[float64](rg, cg, 0)),
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			_, spread := channelTotalSpecs(s, cg)
			du, err := ad.Apply(spread, v)
			return gorgonia.Nodes{du, nil}, err
		},
	}, groupNormGradGPU{rg, cg, groupNormGradBKind, true})
}

// groupNormStatsSpec is GroupNormStats(u, x): for each row i its
// (μ, r) as RowNorm computes them, in slots 2i and 2i+1, then for each
// plane q (sample n, channel c: q = n·C + c) Σu and Σu·y over the plane
// (vmath.SumDotNorm, y = (x − μ)·r), in slots 2·rows + 2q and
// 2·rows + 2q + 1. A slot holds a float64 in two elements of the dtype
// (statSlot): the statistics keep float64's precision in float32 too.
// Not differentiable: only the ops above read it, as a shortcut to
// numbers that are functions of their other inputs.
func groupNormStatsSpec(rg rowGeom, cg chanGeom) ad.OpSpec {
	s := rg.s.Clone()
	return withCUDA(ad.OpSpec{
		Name: "GroupNormStats", Params: fmt.Sprintf("%s as %v", rg.params(), cg), InputDims: []int{s.Dims(), s.Dims()}, OutputDims: 1, DiffWRT: []bool{false, false},
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !shapeIs(in[0], s) || !shapeIs(in[1], s) {
				return nil, fmt.Errorf("nn: GroupNormStats: inputs %v and %v, want %v", in[0], in[1], s)
			}
			return statsShape(rg, cg), nil
		},
		Kernel:           ad.Floats(groupNormStatsKernel[float32](rg, cg), groupNormStatsKernel[float64](rg, cg)),
		KernelOverwrites: true,
	}, groupNormGradGPU{rg, cg, groupNormStatsKind, true})
}

// statsShape is GroupNormStats's shape: two elements for each of the
// 2·rows + 2·planes slots.
func statsShape(rg rowGeom, cg chanGeom) tensor.Shape {
	return tensor.Shape{4 * (rg.rows + cg.outer*cg.c)}
}

// setStatSlot stores v in slot k of p: for float32 its bits, low word
// first, in p[2k] and p[2k+1] (moved, never computed on, so the bits
// stay); for float64 v and 0.
func setStatSlot[T ad.Float](p []T, k int, v float64) {
	switch p := any(p).(type) {
	case []float32:
		b := math.Float64bits(v)
		p[2*k], p[2*k+1] = math.Float32frombits(uint32(b)), math.Float32frombits(uint32(b>>32))
	case []float64:
		p[2*k], p[2*k+1] = v, 0
	}
}

// statSlot is the float64 in slot k of p (setStatSlot).
func statSlot[T ad.Float](p []T, k int) float64 {
	switch p := any(p).(type) {
	case []float32:
		return math.Float64frombits(uint64(math.Float32bits(p[2*k])) | uint64(math.Float32bits(p[2*k+1]))<<32)
	case []float64:
		return p[2*k]
	}
	return 0
}

// groupNormStatsKernel writes GroupNormStats(u, x), row by row: the
// moments (two sums over the row, rowMoments), then one
// vmath.SumDotNorm per plane, the row in cache from the first.
func groupNormStatsKernel[T ad.Float](rg rowGeom, cg chanGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		u, x, perRow := in[0].Data, in[1].Data, rg.n/cg.inner
		eachRow(rg, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				mu, r := rowMoments(x[i*rg.n:][:rg.n], rg.eps)
				setStatSlot(out.Data, 2*i, float64(mu))
				setStatSlot(out.Data, 2*i+1, r)
				for j := 0; j < perRow; j++ {
					at, q := i*rg.n+j*cg.inner, i*perRow+j
					su, suy := vmath.SumDotNorm(u[at:at+cg.inner], x[at:at+cg.inner], mu, T(r))
					setStatSlot(out.Data, 2*rg.rows+2*q, su)
					setStatSlot(out.Data, 2*rg.rows+2*q+1, suy)
				}
			}
		})
		return nil
	}
}

// groupNormStatsTotal writes, per channel, Σ over samples (in order, in
// float64) of the statistics' per-plane Σu (which 0: GroupNormGradB) or
// Σu·y (which 1: GroupNormGradW); inputs (u, x, stats) or (u, stats).
func groupNormStatsTotal[T ad.Float](rg rowGeom, cg chanGeom, which int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		p := in[len(in)-1].Data
		for ci := range cg.c {
			var acc float64
			for o := 0; o < cg.outer; o++ {
				acc += statSlot(p, 2*rg.rows+2*(o*cg.c+ci)+which)
			}
			out.Data[ci] = T(acc)
		}
		return nil
	}
}

// groupNormGradXStatsKernel is groupNormGradXKernel with the row's
// (μ, r) and its planes' sums from the statistics (inputs x, u, w,
// stats): where vmath.VectorWhole allows, one vmath.NormGrad pass per
// row, the same arithmetic and bits as groupNormGradXKernel's (whose sums
// and moments the statistics hold exactly); otherwise that kernel.
func groupNormGradXStatsKernel[T ad.Float](rg rowGeom, cg chanGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	plain := groupNormGradXKernel[T](rg, cg)
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		if !vmath.VectorWhole[T](cg.inner) {
			return plain(out, in[:3])
		}
		perRow, n, w, p := rg.n/cg.inner, float64(rg.n), in[2].Data, in[3].Data
		eachRow(rg, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				gr, u, x := out.Data[i*rg.n:][:rg.n], in[1].Data[i*rg.n:][:rg.n], in[0].Data[i*rg.n:][:rg.n]
				c0 := (i * perRow) % cg.c
				mu, r := T(statSlot(p, 2*i)), statSlot(p, 2*i+1)
				var su, suy float64
				for j := 0; j < perRow; j++ {
					q := 2*rg.rows + 2*(i*perRow+j)
					su += float64(w[c0+j]) * statSlot(p, q)
					suy += float64(w[c0+j]) * statSlot(p, q+1)
				}
				for j := 0; j < perRow; j++ {
					at := j * cg.inner
					vmath.NormGrad(gr[at:at+cg.inner], u[at:at+cg.inner], x[at:at+cg.inner], mu, T(r),
						T(suy/n), T(su/n), T(-r), T(-r*float64(w[c0+j])))
				}
			}
		})
		return nil
	}
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

// The CUDA twin's descriptors (launch code in the *_cuda.go files; withCUDA
// ignores them in the CPU build).

// groupNormAffineGPU is GroupNorm's fused op: RowNorm's kernel, then
// ChannelAffine's in place on its result (norm_cuda.go).
type groupNormAffineGPU struct {
	row rowNormGPU
	aff channelAffineGPU
}

// groupNormGradKind picks one of GroupNorm's gradient ops (groupnorm.go).
type groupNormGradKind int

const (
	groupNormGradXKind groupNormGradKind = iota // GroupNormGradX
	groupNormGradWKind                          // GroupNormGradW
	groupNormGradBKind                          // GroupNormGradB (always with stats)
	groupNormStatsKind                          // GroupNormStats
)

// groupNormGradGPU is one of GroupNorm's gradient ops: with stats (the
// last input GroupNormStats) their kernels on the statistics, without the
// unfused kernels through a temporary (norm_cuda.go).
type groupNormGradGPU struct {
	rg    rowGeom
	cg    chanGeom
	kind  groupNormGradKind
	stats bool
}
