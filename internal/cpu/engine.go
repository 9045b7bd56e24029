package cpu

import (
	"github.com/gops-dev/gops/internal/par"
	"github.com/gops-dev/gops/internal/vmath"
)

// The loops of nn.Engine, a tensor engine for Gorgonia's machines: a
// one-pass sum of a whole tensor and an elementwise product.

// sumBlock is the number of elements whose sum one worker computes as a
// whole: large enough that joining the team is cheap beside it (see
// par.InlineWork), small enough that float32 lanes accumulating
// sumBlock/8 elements lose little.
const sumBlock = 1 << 15

// SumBlocks is Σx (nn.Engine's Sum): vmath.Sum over blocks of sumBlock
// elements, the blocks' float64 sums added in order, so the order is fixed
// for a given len(x) whatever GOMAXPROCS is.
func SumBlocks[T Float](x []T) float64 {
	blocks := (len(x) + sumBlock - 1) / sumBlock
	part := make([]float64, blocks)
	par.ForGrains(blocks, 1, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			part[b] = vmath.Sum(x[b*sumBlock : min((b+1)*sumBlock, len(x))])
		}
	})
	var s float64
	for _, v := range part {
		s += v
	}
	return s
}

// MulInto sets out to x·y elementwise (nn.Engine's Mul), or adds the
// products to out when incr; x and y at least out's length. Parallel
// over ranges of elements above par.InlineWork.
func MulInto[T Float](out, x, y []T, incr bool) {
	x, y = x[:len(out)], y[:len(out)]
	par.ForWork(len(out), 3*len(out), func(lo, hi int) {
		o, a, b := out[lo:hi], x[lo:hi], y[lo:hi]
		if incr {
			for i := range o {
				o[i] += a[i] * b[i]
			}
			return
		}
		for i := range o {
			o[i] = a[i] * b[i]
		}
	})
}
