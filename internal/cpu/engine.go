package cpu

import (
	"github.com/gops-dev/gops/internal/par"
	"github.com/gops-dev/gops/internal/vmath"
)

// The loops of nn.Engine, a tensor engine for Gorgonia's machines: a
// one-pass sum of a whole tensor, an elementwise product and sum.

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

// addChunk is the number of elements AddInto copies and then adds while
// they are in the first-level cache.
const addChunk = 2048

// AddInto sets out to x+y elementwise (nn.Engine's Add), or adds the sums
// to out when incr (out[i] + (x[i] + y[i])); x and y at least out's
// length, out either one of them (the same first element and length) or
// apart from both. Parallel over ranges of elements above
// par.InlineWork; each element is one rounded sum, x[i] + y[i] as tensor's
// StdEng computes it (x the first operand: of two NaNs, x's payload, as
// StdEng's compiled loop keeps in an ordinary build, not under -race).
func AddInto[T Float](out, x, y []T, incr bool) {
	x, y = x[:len(out)], y[:len(out)]
	if len(out) == 0 {
		return
	}
	inX, inY := &out[0] == &x[0], &out[0] == &y[0]
	par.ForWork(len(out), 3*len(out), func(lo, hi int) {
		o, a, b := out[lo:hi], x[lo:hi], y[lo:hi]
		switch {
		case incr:
			for i := range o {
				o[i] += a[i] + b[i]
			}
		case inY: // o = a + o
			addTo(a, o)
		default: // a chunk of b, then a + it (addTo keeps a first), in L1
			var tmp []T
			if inX {
				tmp = make([]T, min(addChunk, len(o)))
			}
			for c := 0; c < len(o); c += addChunk {
				e := min(len(o), c+addChunk)
				d := o[c:e]
				if inX {
					d = tmp[:e-c]
				}
				copy(d, b[c:e])
				addTo(a[c:e], d)
				if inX {
					copy(o[c:e], d)
				}
			}
		}
	})
}
