//go:build !amd64 || purego

package vmath

func relu32(dst, src []float32)                         { reluGo(dst, src) }
func relu64(dst, src []float64)                         { reluGo(dst, src) }
func positive32(dst, src []float32, a, b float32)       { positiveGo(dst, src, a, b) }
func positive64(dst, src []float64, a, b float64)       { positiveGo(dst, src, a, b) }
func positiveMul32(dst, src, u []float32, a, b float32) { positiveMulGo(dst, src, u, a, b) }
func positiveMul64(dst, src, u []float64, a, b float64) { positiveMulGo(dst, src, u, a, b) }
