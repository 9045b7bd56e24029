package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/openblas"
)

// DeformConv2d's values and gradients must not depend on GOMAXPROCS
// (README: "bitwise identical for any GOMAXPROCS"), with OpenBLAS in use
// (TestMain's openblas.UseFromEnv, where it is installed; openblas.Describe() says
// which) as with gonum. The conformance table checks it on products too
// small for openblas's split over goroutines; here the products are above
// it (openblas.gemmSplitMin).
func TestDeformOpenBLASDeterministic(t *testing.T) {
	t.Logf("openblas.Describe(): %s", openblas.Describe())
	c := deformCase{name: "big", n: 2, cin: 16, h: 16, w: 16, cout: 16, groups: 1, kh: 3, kw: 3, og: 1, bias: true, mask: true,
		opts: gops.DeformConv2dOpts{Padding: [2]int{1, 1}}, offsetScale: 0.7, maskShift: 0.5}
	in := c.inputs()
	checkDeterministic(t, c.f, allFloat32(in), []int{0, 1, 2, 3, 4}, 1, 2, 3)
}
