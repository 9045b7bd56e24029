package cpu

import (
	"fmt"
	"testing"
)

// BenchmarkConvWino times ConvForward and ConvInput of 3×3, padding 1
// convolutions by Winograd and by im2col (winoForce), C = Cout channels
// on maps of side 4 to 56, batch 1, 2, 4 and 8 (float32): where Winograd
// starts to win (winoWins). GFLOP/s count the direct convolution's flops.
func BenchmarkConvWino(b *testing.B) {
	for _, mode := range []struct {
		name string
		m    ConvMode
	}{{"forward", ConvForward}, {"input", ConvInput}} {
		for _, c := range []int{16, 32, 64, 128, 256, 512} {
			for _, side := range []int{4, 8, 14, 16, 28, 32, 56} {
				for _, n := range []int{1, 2, 4, 8} {
					g := ConvGeom{N: n, C: c, H: side, W: side, Cout: c, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, HO: side, WO: side}
					for _, path := range []struct {
						name  string
						force int
					}{{"im2col", -1}, {"winograd", 1}} {
						b.Run(fmt.Sprintf("%s/c%d/%dx%d/n%d/%s", mode.name, c, side, side, n, path.name), func(b *testing.B) {
							defer func(f int) { winoForce = f }(winoForce)
							winoForce = path.force
							benchConv[float32](b, &g, mode.m)
						})
					}
				}
			}
		}
	}
}
