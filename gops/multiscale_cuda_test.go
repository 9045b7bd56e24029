//go:build cuda

package gops_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MultiScaleRoIAlign's twin (multiscale_cuda.go, internal/cuda/kernels/gops/multiscale.cu):
// the forward, the gradients of order 1 and 2 w.r.t. the maps and the boxes
// (every level's members M_l,ab and their transposes) on the GPU, with the
// boxes spread over both levels (compact buffers and row moves) and all on
// one level (in place).
func TestGPUMultiScaleRoIAlign(t *testing.T) {
	spread := boxPyramidInputs(3)
	one := boxPyramidInputs(3) // every box on level 1 (s >= 8)
	one[2] = boxList([4]float64{1.13, 0.87, 11.41, 10.29}, [4]float64{2.37, 1.21, 13.19, 9.77})
	one[3] = boxList([4]float64{0.71, 1.37, 12.93, 9.61}, [4]float64{1.63, 0.59, 12.47, 9.23})
	for _, dt := range gpuDtypes {
		for name, in := range map[string][]*tensor.Dense{"spread": spread, "one level": one} {
			if dt == tensor.Float32 {
				in = graphtest.Float32(in)
			}
			t.Run(fmt.Sprintf("%v/%s", dt, name), func(t *testing.T) {
				gpuCheck(t, dt, func(g *gorgonia.ExprGraph, _ *rand.Rand) (*gorgonia.Node, gorgonia.Nodes) {
					nodes := make(gorgonia.Nodes, len(in))
					for i, v := range in {
						nodes[i] = input(g, fmt.Sprintf("in%d", i), v)
					}
					y, err := boxPyramid.build(nodes)
					if err != nil {
						t.Fatal(err)
					}
					return y, nodes
				})
			})
		}
	}
}
