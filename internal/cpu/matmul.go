package cpu

// MatMul computes c_i = op(a_i)·op(b_i) for the batch matrices of
// a [batch, m, k] (stored [batch, k, m] with transA), b [batch, k, n]
// ([batch, n, k] with transB) and c [batch, m, n], row-major, one product
// mul per matrix in order (torch.bmm; batch 1 is torch.matmul of two
// matrices). Sizes may be 0. The error is the first product's error; a
// nil mul is gemm.Gemm's.
func MatMul[T Float](batch, m, n, k int, transA, transB bool, mul Product[T], c, a, b []T) error {
	mul = mul.orOwn()
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	for i := 0; i < batch; i++ {
		ai := a[i*m*k : (i+1)*m*k]
		bi := b[i*k*n : (i+1)*k*n]
		ci := c[i*m*n : (i+1)*m*n]
		if err := mul(transA, transB, m, n, k, ai, max(lda, 1), bi, max(ldb, 1), 0, ci, max(n, 1)); err != nil {
			return err
		}
	}
	return nil
}
