package cpu

// Linear computes y = x·wᵀ + b (torch.nn.functional.linear) for x [n, in],
// w [out, in] and y [n, out], row-major, with b [out] or nil (no bias), as
// one product mul that reads w transposed in place: with a bias, y's rows
// are set to b first and mul adds the product to them (beta 1), so the
// bias costs no second pass over y. Sizes may be 0 (in = 0 gives y = b, or
// zeros). The error is the product's; a nil mul is gemm.Gemm's.
func Linear[T Float](n, out, in int, mul Product[T], y, x, w, b []T) error {
	var beta T
	if b != nil {
		for i := 0; i < n; i++ {
			copy(y[i*out:(i+1)*out], b)
		}
		beta = 1
	}
	return mul.orOwn()(false, true, n, out, in, x, max(in, 1), w, max(in, 1), beta, y, max(out, 1))
}
