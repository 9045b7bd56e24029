//go:build !amd64 || purego

package vmath

func sigmoidSoftplus32(x []float32, s, sc, l []float64) { sigmoidSoftplusGo(x, s, sc, l) }
