package gemm

import "sync/atomic"

func goImpl[T Float]() impl[T] { return impl[T]{name: "go", mr: goMR, nr: goNR, kern: goKernel[T]} }

var (
	impls32 = kernels32()
	impls64 = kernels64()
	// forced, when not "", is the kernel name every product uses (tests).
	forced atomic.Value
)

// Kernel is the name of the micro-kernel products use on this CPU:
// "avx512", "avx2" (amd64), "neon" (arm64) or "go".
func Kernel() string {
	if f, _ := forced.Load().(string); f != "" {
		return f
	}
	return impls32[0].name
}

func pick[T Float]() impl[T] {
	f, _ := forced.Load().(string)
	var z T
	if any(z) == any(float32(0)) {
		return any(find(impls32, f)).(impl[T])
	}
	return any(find(impls64, f)).(impl[T])
}

func find[T Float](ks []impl[T], name string) impl[T] {
	for _, k := range ks {
		if k.name == name {
			return k
		}
	}
	return ks[0]
}
