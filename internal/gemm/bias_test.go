package gemm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/internal/vmath"
)

// TestAddRowBias: addRowBias is bitwise vmath.Axpb(row, row, 1, b) on each
// row, for widths 1 to 40 (whole AVX2 vectors and not), 1 to 5 rows, rows
// ldc apart with other values between them left alone, C and the bias
// both holding NaNs of distinct payloads (the payload kept where both are
// NaN differs between instructions: arm64's fused add keeps the addend's),
// −0, ±Inf and normals, float32 and float64.
func TestAddRowBias(t *testing.T) {
	testAddRowBias[float32](t)
	testAddRowBias[float64](t)
}

func testAddRowBias[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(3, 30))
	val := func() T {
		switch r.IntN(6) {
		case 0, 1:
			return nanPayload[T](r)
		case 2:
			return T(math.Copysign(0, -1))
		case 3:
			return T(math.Inf(2*r.IntN(2) - 1))
		}
		return T(r.NormFloat64())
	}
	for w := 1; w <= 40; w++ {
		for rows := 1; rows <= 5; rows++ {
			ldc := w + r.IntN(3)
			c := make([]T, (rows-1)*ldc+w)
			bias := make([]T, rows)
			for i := range c {
				c[i] = val()
			}
			for i := range bias {
				bias[i] = val()
			}
			want := append([]T(nil), c...)
			for i, b := range bias {
				row := want[i*ldc:][:w]
				vmath.Axpb(row, row, 1, b)
			}
			addRowBias(c, ldc, bias, w)
			if i := bitsEq(c, want); i >= 0 {
				t.Fatalf("%T w %d rows %d ldc %d: C[%d] = %v, want %v", T(0), w, rows, ldc, i, c[i], want[i])
			}
		}
	}
}
