package cpu

import (
	"errors"
	"testing"

	"github.com/gops-dev/gops/internal/gemm"
)

// TestMatMul: each batch matrix is op(a_i)·op(b_i), for the four
// transpose cases and empty sizes, and a product's error is returned.
func TestMatMul(t *testing.T) {
	mul := func(transA, transB bool, m, n, k int, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) error {
		return gemm.Gemm(transA, transB, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
	}
	for _, d := range [][4]int{{3, 2, 4, 5}, {1, 1, 1, 1}, {2, 3, 2, 0}, {2, 0, 3, 2}} {
		batch, m, n, k := d[0], d[1], d[2], d[3]
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			a, b := make([]float64, batch*m*k), make([]float64, batch*k*n)
			for i := range a {
				a[i] = float64(i%7) - 3
			}
			for i := range b {
				b[i] = float64(i%5) - 2
			}
			at := func(i, r, j int) float64 { // op(a_i)[r, j]
				if tr[0] {
					return a[i*m*k+j*m+r]
				}
				return a[i*m*k+r*k+j]
			}
			bt := func(i, r, j int) float64 { // op(b_i)[r, j]
				if tr[1] {
					return b[i*k*n+j*k+r]
				}
				return b[i*k*n+r*n+j]
			}
			c := make([]float64, batch*m*n)
			for i := range c {
				c[i] = 99 // overwritten
			}
			if err := MatMul(batch, m, n, k, tr[0], tr[1], mul, c, a, b); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < batch; i++ {
				for r := 0; r < m; r++ {
					for j := 0; j < n; j++ {
						var want float64
						for p := 0; p < k; p++ {
							want += at(i, r, p) * bt(i, p, j)
						}
						if got := c[i*m*n+r*n+j]; got != want {
							t.Fatalf("%v trans %v: c[%d, %d, %d] = %v, want %v", d, tr, i, r, j, got, want)
						}
					}
				}
			}
		}
	}
	bad := errors.New("bad")
	fail := func(bool, bool, int, int, int, []float32, int, []float32, int, float32, []float32, int) error {
		return bad
	}
	if err := MatMul(2, 1, 1, 1, false, false, fail, make([]float32, 2), make([]float32, 2), make([]float32, 2)); !errors.Is(err, bad) {
		t.Errorf("error %v, want the product's", err)
	}
}
