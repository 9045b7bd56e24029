//go:build amd64 && !purego

package cpu

import "unsafe"

//go:noescape
func addS(y, x *float32, blocks int)

//go:noescape
func addD(y, x *float64, blocks int)

// addVec sets y[i] = x[i] + y[i] for the first i < len(x) in whole AVX2
// registers (len(y) ≥ len(x)) and returns how many it did: 0 without
// AVX2 (avgAVX2 off), which leaves them all to addTo's Go loop.
func addVec[T Float](x, y []T) int {
	if !avgAVX2 {
		return 0
	}
	if unsafe.Sizeof(T(0)) == 4 {
		if b := len(x) / 8; b > 0 {
			addS(p32(y, 0), p32(x, 0), b)
			return 8 * b
		}
		return 0
	}
	if b := len(x) / 4; b > 0 {
		addD((*float64)(unsafe.Pointer(&y[0])), (*float64)(unsafe.Pointer(&x[0])), b)
		return 4 * b
	}
	return 0
}
