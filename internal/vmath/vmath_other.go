//go:build !amd64 || purego

package vmath

// hasAVX512 is false: no assembly here.
var hasAVX512 = false

func max32(x []float32) float32 { return maxGo(x) }
func max64(x []float64) float64 { return maxGo(x) }

func expSum32(dst, src []float32, shift float32) float64 { return expSumGo(dst, src, shift) }
func expSum64(dst, src []float64, shift float64) float64 { return expSumGo(dst, src, shift) }

func axpb32(dst, src []float32, a, b float32) { axpbGo(dst, src, a, b) }
func axpb64(dst, src []float64, a, b float64) { axpbGo(dst, src, a, b) }

// No vector loop: AxpbAt's parts are all Go tail (vecLen 0).
func vecLen(l, w int) int                          { return 0 }
func axpbFused32(dst, src []float32, a, b float32) { axpbGo(dst, src, a, b) }
func axpbFused64(dst, src []float64, a, b float64) { axpbGo(dst, src, a, b) }

func dot32(x, y []float32) float64 { return dotGo(x, y) }
func dot64(x, y []float64) float64 { return dotGo(x, y) }
func sum32(x []float32) float64    { return sumGo(x) }
func sum64(x []float64) float64    { return sumGo(x) }

func mulSub32(dst, s, u []float32, d float32) { mulSubGo(dst, s, u, d) }
func mulSub64(dst, s, u []float64, d float64) { mulSubGo(dst, s, u, d) }
func subMul32(dst, u, e []float32, c float32) { subMulGo(dst, u, e, c) }
func subMul64(dst, u, e []float64, c float64) { subMulGo(dst, u, e, c) }

func subSq32(x []float32, m float32) float64                   { return subSqGo(x, m) }
func subSq64(x []float64, m float64) float64                   { return subSqGo(x, m) }
func subDot32(u, x []float32, m float32) float64               { return subDotGo(u, x, m) }
func subDot64(u, x []float64, m float64) float64               { return subDotGo(u, x, m) }
func sumDotNorm32(u, x []float32, m, r float32) (a, b float64) { return sumDotNormGo(u, x, m, r) }
func sumDotNorm64(u, x []float64, m, r float64) (a, b float64) { return sumDotNormGo(u, x, m, r) }
func normAffine32(dst, x []float32, m, r, w, b float32)        { normAffineGo(dst, x, m, r, w, b) }
func normAffine64(dst, x []float64, m, r, w, b float64)        { normAffineGo(dst, x, m, r, w, b) }
func normGrad32(dst, u, x []float32, k *[6]float32)            { normGradGo(dst, u, x, k) }
func normGrad64(dst, u, x []float64, k *[6]float64)            { normGradGo(dst, u, x, k) }
func vectorWhole(n, w int) bool                                { return true }

func vectorLoops() bool { return false }
