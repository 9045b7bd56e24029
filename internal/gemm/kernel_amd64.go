//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

//go:generate go run ./asmgen

//go:noescape
func kernS512(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernD512(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

//go:noescape
func kernS256(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernD256(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

var (
	hasAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

// kernels lists the micro-kernels this CPU can run, best first.
func kernels32() []impl[float32] {
	var ks []impl[float32]
	if hasAVX512 {
		ks = append(ks, impl[float32]{"avx512", 12, 32, kernS512})
	}
	if hasAVX2 {
		ks = append(ks, impl[float32]{"avx2", 6, 16, kernS256})
	}
	return append(ks, goImpl[float32]())
}

func kernels64() []impl[float64] {
	var ks []impl[float64]
	if hasAVX512 {
		ks = append(ks, impl[float64]{"avx512", 12, 16, kernD512})
	}
	if hasAVX2 {
		ks = append(ks, impl[float64]{"avx2", 6, 8, kernD256})
	}
	return append(ks, goImpl[float64]())
}

// peakS512 and peakS256 run n iterations of 24 (AVX-512) or 12 (AVX2)
// independent float32 FMAs on registers: BenchmarkPeak's FMA ceiling.
//
//go:noescape
func peakS512(n int)

//go:noescape
func peakS256(n int)
