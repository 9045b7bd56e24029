package nn_test

import (
	"os"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"github.com/gops-dev/gops/openblas"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestProductOpenBLAS: MatMul and Conv2d run their products where the
// program put them, on OpenBLAS when it installed it (openblas.Use; here
// openblas.Load and gorgonia.Use, undone at the end, since this test
// binary otherwise runs on gops' own product). There their golden cases
// and MatMul's reference products pass as on gops' own, and values and
// gradients are bitwise the same for any GOMAXPROCS with products large
// enough for package openblas' split over goroutines. Skipped where no
// OpenBLAS loads, unless GOPS_TEST_REQUIRE_OPENBLAS=1 (CI, where it is
// installed).
func TestProductOpenBLAS(t *testing.T) {
	o, err := openblas.Load()
	if err != nil {
		if os.Getenv("GOPS_TEST_REQUIRE_OPENBLAS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	prev := gorgonia.WhichBLAS()
	gorgonia.Use(o)
	defer gorgonia.Use(prev)
	t.Run("MatMulGolden", TestMatMulGolden)
	t.Run("MatMulReference", TestMatMulReference)
	t.Run("ConvGolden", TestConvGolden)
	t.Run("deterministic", func(t *testing.T) {
		for _, c := range []struct {
			name string
			f    graphtest.Func
			in   []*tensor.Dense
		}{
			{"MatMul", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.MatMul(in[0], in[1], false, true) },
				[]*tensor.Dense{smoothTensor(0.01, 2, 100, 300), smoothTensor(0.01, 2, 70, 300)}},
			{"Conv2d", func(in gorgonia.Nodes) (*gorgonia.Node, error) {
				return nn.Conv2d(in[0], in[1], nil, nn.Conv2dOpts{Padding: [2]int{1, 1}})
			}, []*tensor.Dense{smoothTensor(1, 2, 16, 16, 16), smoothTensor(0.1, 16, 16, 3, 3)}},
		} {
			t.Run(c.name, func(t *testing.T) {
				if err := graphtest.CheckDeterministic(c.f, graphtest.Float32(c.in), []int{0, 1}, 1, 2, 3, 8); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}
