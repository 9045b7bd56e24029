//go:build amd64 && !purego

package vmath

// vectorModes runs f with the assembly loops on (where the CPU has them)
// and off.
func vectorModes(f func(name string)) {
	old := hasAVX2
	defer func() { hasAVX2 = old }()
	for _, on := range []bool{old, false} {
		hasAVX2 = on
		name := "go"
		if on {
			name = "avx2"
		}
		f(name)
	}
}
