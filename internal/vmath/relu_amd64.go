//go:build amd64 && !purego

package vmath

// The assembly loops (relu_amd64.s) take n > 0, a multiple of 8 (float32)
// or 4 (float64): a VMAXPS against 0 (which gives +0 for ±0), with a NaN
// blended back in; a compare with 0 blending a and b
// (then multiplied into u, for PositiveMul).

//go:noescape
func reluS(dst, src *float32, n int)

//go:noescape
func reluD(dst, src *float64, n int)

//go:noescape
func positiveS(dst, src *float32, n int, a, b float32)

//go:noescape
func positiveD(dst, src *float64, n int, a, b float64)

//go:noescape
func positiveMulS(dst, src, u *float32, n int, a, b float32)

//go:noescape
func positiveMulD(dst, src, u *float64, n int, a, b float64)

func relu32(dst, src []float32) {
	n := vecRun(len(src), 8, func(n int) { reluS(&dst[0], &src[0], n) })
	reluGo(dst[n:], src[n:])
}

func relu64(dst, src []float64) {
	n := vecRun(len(src), 4, func(n int) { reluD(&dst[0], &src[0], n) })
	reluGo(dst[n:], src[n:])
}

func positive32(dst, src []float32, a, b float32) {
	n := vecRun(len(src), 8, func(n int) { positiveS(&dst[0], &src[0], n, a, b) })
	positiveGo(dst[n:], src[n:], a, b)
}

func positive64(dst, src []float64, a, b float64) {
	n := vecRun(len(src), 4, func(n int) { positiveD(&dst[0], &src[0], n, a, b) })
	positiveGo(dst[n:], src[n:], a, b)
}

func positiveMul32(dst, src, u []float32, a, b float32) {
	n := vecRun(len(src), 8, func(n int) { positiveMulS(&dst[0], &src[0], &u[0], n, a, b) })
	positiveMulGo(dst[n:], src[n:], u[n:], a, b)
}

func positiveMul64(dst, src, u []float64, a, b float64) {
	n := vecRun(len(src), 4, func(n int) { positiveMulD(&dst[0], &src[0], &u[0], n, a, b) })
	positiveMulGo(dst[n:], src[n:], u[n:], a, b)
}
