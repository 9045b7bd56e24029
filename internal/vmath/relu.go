package vmath

// ReLU sets dst[i] = src[i] where src[i] > 0 or is a NaN (its bits
// kept), else +0 (−0 and −Inf included), for i < len(src): torch.relu.
// dst must be at least as long as src (it may be src itself).
func ReLU[T Float](dst, src []T) {
	dst = dst[:len(src)]
	switch xs := any(src).(type) {
	case []float32:
		relu32(any(dst).([]float32), xs)
		return
	case []float64:
		relu64(any(dst).([]float64), xs)
		return
	}
	reluGo(dst, src)
}

// Positive sets dst[i] = a where src[i] > 0, else b (a NaN gives b), for
// i < len(src): LeakyReLU's slope with a = 1, b = the negative slope.
// dst must be at least as long as src (it may be src itself).
func Positive[T Float](dst, src []T, a, b T) {
	dst = dst[:len(src)]
	switch xs := any(src).(type) {
	case []float32:
		positive32(any(dst).([]float32), xs, float32(a), float32(b))
		return
	case []float64:
		positive64(any(dst).([]float64), xs, float64(a), float64(b))
		return
	}
	positiveGo(dst, src, a, b)
}

// PositiveMul sets dst[i] = u[i]·(src[i] > 0 ? a : b), the product
// rounded once (a NaN src gives b), for i < len(src): LeakyReLU's gradient
// for the upstream u with a = 1, b = the negative slope, bitwise
// u ⊙ Positive(src, a, b). u and dst must be at least as long as src (dst
// may be src or u).
func PositiveMul[T Float](dst, src, u []T, a, b T) {
	dst, u = dst[:len(src)], u[:len(src)]
	switch xs := any(src).(type) {
	case []float32:
		positiveMul32(any(dst).([]float32), xs, any(u).([]float32), float32(a), float32(b))
		return
	case []float64:
		positiveMul64(any(dst).([]float64), xs, any(u).([]float64), float64(a), float64(b))
		return
	}
	positiveMulGo(dst, src, u, a, b)
}

func reluGo[T Float](dst, src []T) {
	dst = dst[:len(src)]
	for i, v := range src {
		if v > 0 || v != v {
			dst[i] = v
		} else {
			dst[i] = 0
		}
	}
}

func positiveGo[T Float](dst, src []T, a, b T) {
	dst = dst[:len(src)]
	for i, v := range src {
		if v > 0 {
			dst[i] = a
		} else {
			dst[i] = b
		}
	}
}

func positiveMulGo[T Float](dst, src, u []T, a, b T) {
	dst, u = dst[:len(src)], u[:len(src)]
	for i, v := range src {
		s := b
		if v > 0 {
			s = a
		}
		dst[i] = u[i] * s
	}
}
