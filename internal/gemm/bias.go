package gemm

import "github.com/gops-dev/gops/internal/vmath"

// addRowBias adds bias[i] to the w elements from c[i·ldc], i < len(bias):
// bitwise vmath.Axpb(row, row, 1, bias[i]) on each row (its fused
// 1·c + b, NaN payloads and −0 included), by addBiasS or addBiasD where
// the rows are whole AVX2 vectors (the instruction and operand order of
// vmath's vector loop) and by vmath.Axpb itself elsewhere. The caller has
// checked the bounds.
func addRowBias[T Float](c []T, ldc int, bias []T, w int) {
	if len(bias) == 0 || w == 0 {
		return
	}
	_ = c[(len(bias)-1)*ldc+w-1]
	if biasAsm(c, ldc, bias, w) {
		return
	}
	for i, b := range bias {
		row := c[i*ldc:][:w]
		vmath.Axpb(row, row, 1, b)
	}
}
