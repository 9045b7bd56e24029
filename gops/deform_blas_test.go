package gops_test

import (
	"math"
	"runtime"
	"testing"

	"github.com/gops-dev/gops/gops"
)

// DeformConv2d's values and gradients must not depend on GOMAXPROCS
// (README: "bitwise identical for any GOMAXPROCS"), with OpenBLAS in use
// (gops.BLAS()) as with gonum. TestDeformConv2dDeterministic checks it on a
// product too small for splitGemm; here the products are above
// gemmSplitMin.
func TestDeformOpenBLASDeterministic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	c := deformCase{name: "big", n: 2, cin: 16, h: 16, w: 16, cout: 16, groups: 1, kh: 3, kw: 3, og: 1, bias: true, mask: true,
		opts: gops.DeformConv2dOpts{Padding: [2]int{1, 1}}, offsetScale: 0.7, maskShift: 0.5}
	var ref []float64
	for i, procs := range []int{1, 2, 3} {
		runtime.GOMAXPROCS(procs)
		in := c.inputs()
		for j := range in {
			in[j] = toFloat32(in[j])
		}
		y, grads := runDeformConv2d(t, c, in)
		all := y
		for _, g := range grads {
			all = append(all, g...)
		}
		if i == 0 {
			ref = all
			continue
		}
		for j := range all {
			if math.Float64bits(all[j]) != math.Float64bits(ref[j]) {
				t.Fatalf("GOMAXPROCS=%d: value %d of %d (output has %d) differs: %v vs %v", procs, j, len(all), len(y), all[j], ref[j])
			}
		}
	}
}
