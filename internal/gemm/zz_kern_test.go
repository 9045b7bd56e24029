package gemm

import (
	"fmt"
	"testing"
	"time"
)

func TestZZPw(t *testing.T) {
	m, n, k := 1024, 196, 256
	a := make([]float32, m*k)
	for i := range a {
		a[i] = float32(i%7) * 0.1
	}
	pa, _ := PackA(m, k, a, k)
	nb := 8
	b := make([]float32, nb*k*n)
	c := make([]float32, nb*m*n)
	for round := 0; round < 3; round++ {
		for _, mode := range []string{"fresh C", "same C"} {
			best := time.Hour
			for rep := 0; rep < 20; rep++ {
				t0 := time.Now()
				for s := 0; s < nb; s++ {
					cs := c[s*m*n:]
					if mode == "same C" {
						cs = c
					}
					GemmPackedA(pa, n, b[s*k*n:], n, cs, n)
				}
				best = min(best, time.Since(t0))
			}
			fl := float64(nb) * 2 * float64(m*n*k)
			fmt.Printf("%s: %.1f GFLOP/s one core\n", mode, fl/best.Seconds()/1e9)
		}
	}
}
