package cpu

import (
	"math"

	"github.com/gops-dev/gops/internal/par"
	"github.com/gops-dev/gops/internal/vmath"
)

// Softmax along the middle axis of [outer, n, inner] tensors (nn.Softmax,
// nn.LogSoftmax and their gradient, nn's axis sums), one line of n
// elements at a time.

// Softmax sets y to softmax(x) (or, with log, log_softmax) along the
// middle axis of [outer, n, inner] (torch.softmax(x, dim) for the axis of
// length n), line by line as torch's CPU kernel: m = max x,
// s = Σ exp(x − m), then exp(x − m) · (1/s) or (x − m) − log s. A line
// holding NaN or +Inf, or only −Inf, is all NaN, as in torch.
func Softmax[T Float](outer, n, inner int, log bool, y, x []T) {
	eachLine(outer, n, inner, y, [][]T{x}, func(y []T, x [][]T) { softmaxLine(y, x[0], log) })
}

// softmaxLine is Softmax of one line.
func softmaxLine[T Float](y, x []T, log bool) {
	m := vmath.Max(x)
	if f := float64(m); math.IsNaN(f) || math.IsInf(f, 0) {
		fillNaN(y)
		return
	}
	s := vmath.ExpSum(y, x, m)
	if log {
		vmath.Axpb(y, x, 1, -m)
		vmath.Axpb(y, y, 1, -T(math.Log(s)))
		return
	}
	vmath.Axpb(y, y, T(1/s), 0)
}

// fillNaN sets every element of y to NaN: a line whose maximum is NaN or
// infinite, as torch's.
func fillNaN[T Float](y []T) {
	for i := range y {
		y[i] = T(math.NaN())
	}
}

// SoftmaxGrad sets g, along the middle axis of [outer, n, inner], to the
// gradient of Softmax (log false) or LogSoftmax for upstream u, from the
// op's output y: y ⊙ (u − Σ u ⊙ y), or u − exp(y) ⊙ Σ u. A LogSoftmax line
// whose maximum is NaN or positive (not a log-probability) is all NaN.
func SoftmaxGrad[T Float](outer, n, inner int, log bool, g, y, u []T) {
	eachLine(outer, n, inner, g, [][]T{y, u}, func(g []T, x [][]T) {
		y, u := x[0], x[1]
		if !log {
			vmath.MulSub(g, y, u, T(vmath.Dot(u, y)))
			return
		}
		if m := float64(vmath.Max(y)); math.IsNaN(m) || m > 0 {
			fillNaN(g) // y is a log-probability (≤ 0) or a NaN line
			return
		}
		vmath.ExpSum(g, y, 0)
		vmath.SubMul(g, u, g, T(vmath.Sum(u)))
	})
}

// lineGrain is the number of elements below which Softmax and SoftmaxGrad
// stay on one goroutine.
const lineGrain = 1 << 15

// eachLine runs f(y, xs) on every line along the middle axis of
// [outer, n, inner] tensors: y the output's line, xs the inputs' lines,
// each n contiguous elements. With inner > 1 the lines are strided: they
// are gathered into scratch and y is scattered back. Lines are spread over
// goroutines when the tensor is large; f's arithmetic on a line does not
// depend on the split.
func eachLine[T Float](outer, n, inner int, y []T, xs [][]T, f func(y []T, xs [][]T)) {
	work := func(lo, hi int) {
		cur := make([][]T, len(xs))
		var buf []T
		if inner > 1 {
			buf = make([]T, n*(len(xs)+1))
			for j := range cur {
				cur[j] = buf[(j+1)*n : (j+2)*n]
			}
		}
		for l := lo; l < hi; l++ {
			base := (l/inner)*n*inner + l%inner
			if inner == 1 {
				for j, x := range xs {
					cur[j] = x[base : base+n]
				}
				f(y[base:base+n], cur)
				continue
			}
			for j, x := range xs {
				for k := range n {
					cur[j][k] = x[base+k*inner]
				}
			}
			f(buf[:n], cur)
			for k, v := range buf[:n] {
				y[base+k*inner] = v
			}
		}
	}
	lines := outer * inner
	if lines*n < lineGrain {
		work(0, lines)
		return
	}
	par.For(lines, work)
}

// AxisSum sets dst [outer, inner] to the sums of src [outer, n, inner]
// along its middle axis, in order (torch.sum(src, dim)).
func AxisSum[T Float](outer, n, inner int, dst, src []T) {
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			var acc T
			for k := 0; k < n; k++ {
				acc += src[(o*n+k)*inner+i]
			}
			dst[o*inner+i] = acc
		}
	}
}

// AxisBroadcast copies src [outer, inner] to every position of dst
// [outer, n, inner] along its middle axis: AxisSum's transpose.
func AxisBroadcast[T Float](outer, n, inner int, dst, src []T) {
	for o := 0; o < outer; o++ {
		for k := 0; k < n; k++ {
			copy(dst[(o*n+k)*inner:(o*n+k+1)*inner], src[o*inner:(o+1)*inner])
		}
	}
}
