//go:build !(amd64 || arm64) || purego

package gemm

func kernels32() []impl[float32] { return []impl[float32]{goImpl[float32]()} }
func kernels64() []impl[float64] { return []impl[float64]{goImpl[float64]()} }
