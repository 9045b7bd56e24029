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
// all members of closed families, so every order is available.
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
	dims := []int{s.Dims()}
	if hasW {
		dims = append(dims, 1)
	}
	if hasB {
		dims = append(dims, 1)
	}
	return withCUDA(ad.OpSpec{
		Name: "GroupNormAffine", Params: fmt.Sprintf("%s groups %d as %v weight %v bias %v", rg.params(), groups, cg, hasW, hasB),
		InputDims: dims, OutputDims: s.Dims(),
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !shapeIs(in[0], s) {
				return nil, fmt.Errorf("nn: GroupNorm: input %v, want %v", in[0], s)
			}
			for _, p := range in[1:] {
				if !shapeIs(p, tensor.Shape{cg.c}) {
					return nil, fmt.Errorf("nn: GroupNorm: parameter %v, want (%d)", p, cg.c)
				}
			}
			return s.Clone(), nil
		},
		Kernel: ad.Floats(groupNormAffineKernel[float32](rg, cg, hasW, hasB), groupNormAffineKernel[float64](rg, cg, hasW, hasB)),
		Backward: func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			x := in[0]
			uw := u
			var grads gorgonia.Nodes
			if hasW {
				var err error
				if uw, err = ad.Apply(channelAffineSpec(s, cg, true, false), u, in[1]); err != nil {
					return nil, err
				}
			}
			dx, err := ad.Apply(rowNormGradSpec(rg), x, uw)
			if err != nil {
				return nil, err
			}
			grads = append(grads, dx)
			if hasW {
				y, err := ad.Apply(rowNormSpec(rg), x)
				if err != nil {
					return nil, err
				}
				dw, err := ad.Apply(channelDotSpec(s, cg), u, y)
				if err != nil {
					return nil, err
				}
				grads = append(grads, dw)
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
// arithmetic as the two.
func groupNormAffineKernel[T ad.Float](rg rowGeom, cg chanGeom, hasW, hasB bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		w, b := affineParams(cg.c, in, hasW, hasB)
		perRow := rg.n / cg.inner // channels in a row
		eachRow(rg, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				y := out.Data[i*rg.n:][:rg.n]
				r := rowStats(y, in[0].Data[i*rg.n:][:rg.n], rg.eps)
				vmath.Axpb(y, y, T(r), 0)
				c0 := (i * perRow) % cg.c
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
