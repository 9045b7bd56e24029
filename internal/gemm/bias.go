package gemm

// addRowBias adds bias[i] to the w elements from c[i·ldc], i < len(bias):
// c + b rounded once, what vmath.Axpb's fused 1·c + b gives (NaN
// payloads and −0 included). The caller has checked the bounds.
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
		for j := range row {
			row[j] += b
		}
	}
}
