//go:build amd64 && !purego

package gemm

//go:noescape
func addBiasS(c *float32, ldc int, bias *float32, rows, vecs int)

//go:noescape
func addBiasD(c *float64, ldc int, bias *float64, rows, vecs int)

// biasAsm adds bias[i] to the w elements from c[i·ldc], i < len(bias),
// by addBiasS or addBiasD when the CPU has AVX2 and the rows are whole
// 32-byte vectors, and reports whether it did. The caller has checked
// the bounds and that there is a row and a column (addRowBias).
func biasAsm[T Float](c []T, ldc int, bias []T, w int) bool {
	if !hasAVX2 {
		return false
	}
	switch cs := any(c).(type) {
	case []float32:
		if w%8 == 0 {
			addBiasS(&cs[0], ldc, &any(bias).([]float32)[0], len(bias), w/8)
			return true
		}
	case []float64:
		if w%4 == 0 {
			addBiasD(&cs[0], ldc, &any(bias).([]float64)[0], len(bias), w/4)
			return true
		}
	}
	return false
}
