package cpu

import "github.com/gops-dev/gops/internal/par"

// Swap01 reads src as [a, b, inner] and writes dst as [b, a, inner]:
// dst[j, i, ...] = src[i, j, ...], plus bias[i] when bias is not nil
// (len(bias) = a). Parallel over the b blocks of dst.
func Swap01[T Float](src, bias, dst []T, a, b int) {
	inner := len(src) / max(a*b, 1)
	par.For(b, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			for i := 0; i < a; i++ {
				d := dst[(j*a+i)*inner : (j*a+i+1)*inner]
				s := src[(i*b+j)*inner : (i*b+j+1)*inner]
				if bias == nil {
					copy(d, s)
					continue
				}
				s = s[:len(d)]
				for t := range d {
					d[t] = s[t] + bias[i]
				}
			}
		}
	})
}
