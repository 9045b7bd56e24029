package cpu

import "github.com/gops-dev/gops/internal/par"

// Swap01 reads src as [a, b, inner] and writes dst as [b, a, inner]:
// dst[j, i, ...] = src[i, j, ...], plus bias[i] when bias is not nil
// (len(bias) = a). Parallel over the b blocks of dst.
func Swap01[T Float](src, bias, dst []T, a, b int) {
	inner := len(src) / max(a*b, 1)
	par.For(b, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			for i := 0; i < a; i++ {
				d := dst[(j*a+i)*inner : (j*a+i+1)*inner]
				s := src[(i*b+j)*inner : (i*b+j+1)*inner]
				if bias == nil {
					copy(d, s)
					continue
				}
				s = s[:len(d)]
				for t := range d {
					d[t] = s[t] + bias[i]
				}
			}
		}
	})
}

// Concat sets dst to the concatenation of xs along an axis
// (torch.cat): dst and every x are outer blocks, each x's block
// len(x)/outer elements long, copied side by side into dst's blocks of
// len(dst)/outer.
func Concat[T Float](outer int, dst []T, xs [][]T) {
	if outer == 0 {
		return
	}
	row := len(dst) / outer
	off := 0
	for _, x := range xs {
		n := len(x) / outer
		for b := 0; b < outer; b++ {
			copy(dst[b*row+off:b*row+off+n], x[b*n:(b+1)*n])
		}
		off += n
	}
}

// Narrow sets dst to src's elements [start, start+length) along an axis
// (torch.narrow): src is outer blocks of size·inner elements, dst outer
// blocks of length·inner. With embed it does the transpose instead,
// copying dst's blocks back into those places of src and leaving the rest
// of src as it is.
func Narrow[T Float](outer, inner, size, start, length int, embed bool, dst, src []T) {
	n := length * inner
	for b := 0; b < outer; b++ {
		full := b*size*inner + start*inner
		if embed {
			copy(src[full:full+n], dst[b*n:(b+1)*n])
		} else {
			copy(dst[b*n:(b+1)*n], src[full:full+n])
		}
	}
}

// Permute sets dst to src with its axes permuted (torch.permute): src is
// row-major of the given shape, dst row-major of shape[perm[0]], ...,
// shape[perm[r−1]], and dst's axis i is src's axis perm[i]. perm must be a
// permutation of 0..r−1 and len(dst) = len(src). Parallel over dst's rows
// (runs of its last axis), each a copy where that axis is src's last.
func Permute[T Float](src, dst []T, shape, perm []int) {
	r := len(shape)
	if len(dst) == 0 || r == 0 {
		copy(dst, src)
		return
	}
	stride := make([]int, r)
	for i, s := r-1, 1; i >= 0; i-- {
		stride[i] = s
		s *= shape[i]
	}
	out, step := make([]int, r), make([]int, r)
	for i, p := range perm {
		out[i], step[i] = shape[p], stride[p]
	}
	last, inner := out[r-1], step[r-1]
	par.ForWork(len(dst)/last, len(dst), func(lo, hi int) {
		for row := lo; row < hi; row++ {
			off, q := 0, row
			for i := r - 2; i >= 0; i-- {
				off += q % out[i] * step[i]
				q /= out[i]
			}
			d := dst[row*last : (row+1)*last]
			if inner == 1 {
				copy(d, src[off:off+last])
				continue
			}
			for j := range d {
				d[j] = src[off+j*inner]
			}
		}
	})
}
