package cpu

import (
	"github.com/gops-dev/gops/internal/par"
	"gonum.org/v1/gonum/blas/gonum"
)

// Helpers of the RoI kernels that work channels-last: a box's sample point
// then reads (or writes) the C values of one pixel as one contiguous row,
// which gonum's SIMD axpy processes at once, instead of C scattered
// elements, one per plane.

// addTo sets y[i] = x[i] + y[i] for i < len(x) (len(y) ≥ len(x)): axpy
// with alpha 1, bitwise, in AVX2 registers where the CPU has them.
func addTo[T Float](x, y []T) {
	y = y[:len(x)]
	for i := addVec(x, y); i < len(x); i++ {
		y[i] = x[i] + y[i]
	}
}

// axpy adds alpha·x to y (len(x) <= len(y)), with gonum's BLAS (SIMD
// assembly for unit strides). gonum skips alpha = 0; here 0·x is added
// element by element instead, so that a NaN or infinite x still gives NaN,
// as in torchvision's kernels, which multiply every pixel they read.
func axpy[T Float](alpha T, x, y []T) {
	if alpha == 0 {
		y = y[:len(x)]
		for i, v := range x {
			y[i] += alpha * v
		}
		return
	}
	switch xs := any(x).(type) {
	case []float32:
		gonum.Implementation{}.Saxpy(len(xs), float32(alpha), xs, 1, any(y).([]float32), 1)
	case []float64:
		gonum.Implementation{}.Daxpy(len(xs), float64(alpha), xs, 1, any(y).([]float64), 1)
	default:
		y = y[:len(x)]
		for i, v := range x {
			y[i] += alpha * v
		}
	}
}

// number is an element type the transposes move: the kernels' floats,
// RoIPool's order keys and indices.
type number interface {
	Float | ~int | ~int32 | ~int64
}

// scale divides x by d's count (or multiplies by its exact reciprocal).
func (d divider[T]) scale(x []T) {
	if d.exact {
		scal(d.inv, x)
		return
	}
	for i := range x {
		x[i] /= d.count
	}
}

// scal multiplies x by alpha with gonum's BLAS.
func scal[T Float](alpha T, x []T) {
	switch xs := any(x).(type) {
	case []float32:
		gonum.Implementation{}.Sscal(len(xs), float32(alpha), xs, 1)
	case []float64:
		gonum.Implementation{}.Dscal(len(xs), float64(alpha), xs, 1)
	default:
		for i := range x {
			x[i] *= alpha
		}
	}
}

// transposeTile is the side of the square tiles transpose2D walks: 16 rows
// of 16 elements touch 16 cache lines of the source and of the
// destination, which stay in L1 even at power-of-two strides.
const transposeTile = 16

// transpose2D sets dst[j·ldd + i] = src[i·lds + j] for i < rows, j < cols,
// or adds src to dst when add is set: a rows×cols matrix with row stride lds
// written transposed with row stride ldd. Tiles of transposeTile, each
// moved in 4×4 blocks held in registers.
func transpose2D[T number](dst []T, ldd int, src []T, lds int, rows, cols int, add bool) {
	for i0 := 0; i0 < rows; i0 += transposeTile {
		i1 := min(i0+transposeTile, rows)
		for j0 := 0; j0 < cols; j0 += transposeTile {
			j1 := min(j0+transposeTile, cols)
			i := i0
			for ; i+4 <= i1; i += 4 {
				j := j0
				for ; j+4 <= j1; j += 4 {
					r0 := src[i*lds+j : i*lds+j+4]
					r1 := src[(i+1)*lds+j : (i+1)*lds+j+4]
					r2 := src[(i+2)*lds+j : (i+2)*lds+j+4]
					r3 := src[(i+3)*lds+j : (i+3)*lds+j+4]
					w0 := dst[j*ldd+i : j*ldd+i+4]
					w1 := dst[(j+1)*ldd+i : (j+1)*ldd+i+4]
					w2 := dst[(j+2)*ldd+i : (j+2)*ldd+i+4]
					w3 := dst[(j+3)*ldd+i : (j+3)*ldd+i+4]
					if add {
						w0[0], w0[1], w0[2], w0[3] = w0[0]+r0[0], w0[1]+r1[0], w0[2]+r2[0], w0[3]+r3[0]
						w1[0], w1[1], w1[2], w1[3] = w1[0]+r0[1], w1[1]+r1[1], w1[2]+r2[1], w1[3]+r3[1]
						w2[0], w2[1], w2[2], w2[3] = w2[0]+r0[2], w2[1]+r1[2], w2[2]+r2[2], w2[3]+r3[2]
						w3[0], w3[1], w3[2], w3[3] = w3[0]+r0[3], w3[1]+r1[3], w3[2]+r2[3], w3[3]+r3[3]
					} else {
						w0[0], w0[1], w0[2], w0[3] = r0[0], r1[0], r2[0], r3[0]
						w1[0], w1[1], w1[2], w1[3] = r0[1], r1[1], r2[1], r3[1]
						w2[0], w2[1], w2[2], w2[3] = r0[2], r1[2], r2[2], r3[2]
						w3[0], w3[1], w3[2], w3[3] = r0[3], r1[3], r2[3], r3[3]
					}
				}
				for ; j < j1; j++ {
					w := dst[j*ldd+i : j*ldd+i+4]
					if add {
						w[0], w[1], w[2], w[3] = w[0]+src[i*lds+j], w[1]+src[(i+1)*lds+j], w[2]+src[(i+2)*lds+j], w[3]+src[(i+3)*lds+j]
					} else {
						w[0], w[1], w[2], w[3] = src[i*lds+j], src[(i+1)*lds+j], src[(i+2)*lds+j], src[(i+3)*lds+j]
					}
				}
			}
			for ; i < i1; i++ {
				for j := j0; j < j1; j++ {
					if add {
						dst[j*ldd+i] += src[i*lds+j]
					} else {
						dst[j*ldd+i] = src[i*lds+j]
					}
				}
			}
		}
	}
}

// transposeBatch writes, for each of n matrices of rows×cols in src, its
// transpose (cols×rows) to the same place in dst: dst[b, j, i] = src[b, i,
// j], or adds it when add is set. With rows = C and cols = H·W it turns
// [N, C, H, W] into channels-last [N, H, W, C]; with rows = H·W and
// cols = C, back. Parallel over bands of rows; each writes its own part of
// dst.
func transposeBatch[T number](dst, src []T, n, rows, cols int, add bool) {
	const band = 4 * transposeTile
	bands := (rows + band - 1) / band
	par.ForWork(n*bands, 2*n*rows*cols, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			b, i0 := t/bands, t%bands*band
			i1 := min(i0+band, rows)
			off := b * rows * cols
			transpose2D(dst[off+i0:], rows, src[off+i0*cols:], cols, i1-i0, cols, add)
		}
	})
}
