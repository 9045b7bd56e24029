//go:build cuda

package gops_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/internal/cuda/cudatest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The box functions' twins (boxops_cuda.go, internal/cuda/kernels/gops/boxops.cu): each public
// box function's value and its gradients of order 1 and 2 on the GPU
// against the CPU (gpuCheck), float64 and float32. Reductions to a scalar
// are Gorgonia's own ops and are left out (gpuCheck weights the result
// elementwise); the empty inputs' BoxEmpty stays on the host.

// gpuBoxes is k random boxes [k, 4] (x1, y1, x2, y2), corners at shift +
// [0, 5], sides in [1, 7]: overlapping often, no two coordinates equal (no
// kinks, where a subgradient rule would decide).
func gpuBoxes(rng *rand.Rand, dt tensor.Dtype, k int, shift float64) tensor.Tensor {
	d := make([]float64, 4*k)
	for i := 0; i < k; i++ {
		x, y := shift+5*rng.Float64(), shift+5*rng.Float64()
		d[4*i], d[4*i+1], d[4*i+2], d[4*i+3] = x, y, x+1+6*rng.Float64(), y+1+6*rng.Float64()
	}
	return cudatest.Tensor(dt, tensor.Shape{k, 4}, d)
}

// gpuBoxCase builds one box function's graph: f and the inputs to
// differentiate w.r.t.
type gpuBoxCase struct {
	name  string
	build func(g *gorgonia.ExprGraph, rng *rand.Rand, dt tensor.Dtype) (*gorgonia.Node, gorgonia.Nodes, error)
}

func gpuBoxCases() []gpuBoxCase {
	pair := func(name string, f func(a, b *gorgonia.Node) (*gorgonia.Node, error), n, m int) gpuBoxCase {
		return gpuBoxCase{name, func(g *gorgonia.ExprGraph, rng *rand.Rand, dt tensor.Dtype) (*gorgonia.Node, gorgonia.Nodes, error) {
			a := input(g, "boxes1", gpuBoxes(rng, dt, n, 0))
			b := input(g, "boxes2", gpuBoxes(rng, dt, m, 0))
			y, err := f(a, b)
			return y, gorgonia.Nodes{a, b}, err
		}}
	}
	square := func(y *gorgonia.Node, err error) (*gorgonia.Node, error) {
		if err != nil {
			return nil, err
		}
		return gorgonia.Square(y)
	}
	cases := []gpuBoxCase{
		pair("BoxIoU", gops.BoxIoU, 3, 4),
		pair("GeneralizedBoxIoU", gops.GeneralizedBoxIoU, 3, 4),
		pair("DistanceBoxIoU", func(a, b *gorgonia.Node) (*gorgonia.Node, error) {
			return gops.DistanceBoxIoU(a, b, gops.DefaultBoxEps)
		}, 3, 4),
		pair("CompleteBoxIoU", func(a, b *gorgonia.Node) (*gorgonia.Node, error) {
			return gops.CompleteBoxIoU(a, b, gops.DefaultBoxEps)
		}, 3, 4),
		pair("GeneralizedBoxIoULoss", func(a, b *gorgonia.Node) (*gorgonia.Node, error) {
			return gops.GeneralizedBoxIoULoss(a, b, "none", gops.DefaultBoxEps)
		}, 5, 5),
		pair("DistanceBoxIoULoss", func(a, b *gorgonia.Node) (*gorgonia.Node, error) {
			return gops.DistanceBoxIoULoss(a, b, "none", gops.DefaultBoxEps)
		}, 5, 5),
		pair("CompleteBoxIoULoss", func(a, b *gorgonia.Node) (*gorgonia.Node, error) {
			return gops.CompleteBoxIoULoss(a, b, "none", gops.DefaultBoxEps)
		}, 5, 5),
		{"BoxArea", func(g *gorgonia.ExprGraph, rng *rand.Rand, dt tensor.Dtype) (*gorgonia.Node, gorgonia.Nodes, error) {
			b := input(g, "boxes", gpuBoxes(rng, dt, 5, 0))
			y, err := gops.BoxArea(b)
			return y, gorgonia.Nodes{b}, err
		}},
		{"ClipBoxesToImage", func(g *gorgonia.ExprGraph, rng *rand.Rand, dt tensor.Dtype) (*gorgonia.Node, gorgonia.Nodes, error) {
			b := input(g, "boxes", gpuBoxes(rng, dt, 6, -2.5)) // some corners outside [0, 10] × [0, 8]
			y, err := square(gops.ClipBoxesToImage(b, [2]int{8, 10}))
			return y, gorgonia.Nodes{b}, err
		}},
		{"IndexSelect/repeats", func(g *gorgonia.ExprGraph, rng *rand.Rand, dt tensor.Dtype) (*gorgonia.Node, gorgonia.Nodes, error) {
			x := input(g, "x", randValue(rng, dt, tensor.Shape{4, 2, 3}))
			idx := input(g, "idx", tensor.New(tensor.WithShape(6), tensor.WithBacking([]int{2, 0, 2, 3, 2, 0})))
			y, err := square(gops.IndexSelect(x, idx)) // row 1 never selected: a zero gradient row
			return y, gorgonia.Nodes{x}, err
		}},
		{"BoxesToRoIs", func(g *gorgonia.ExprGraph, rng *rand.Rand, dt tensor.Dtype) (*gorgonia.Node, gorgonia.Nodes, error) {
			lists := gorgonia.Nodes{
				input(g, "boxes0", gpuBoxes(rng, dt, 2, 0)),
				input(g, "boxes1", gpuBoxes(rng, dt, 1, 0)),
				input(g, "boxes2", gpuBoxes(rng, dt, 3, 0)),
			}
			y, err := square(gops.BoxesToRoIs(lists))
			return y, lists, err
		}},
	}
	formats := []string{gops.BoxFormatXYXY, gops.BoxFormatXYWH, gops.BoxFormatCXCYWH}
	for _, in := range formats {
		for _, out := range formats {
			if in == out {
				continue // a Reshape copy (layout.cu)
			}
			cases = append(cases, gpuBoxCase{"BoxConvert/" + in + "→" + out, func(g *gorgonia.ExprGraph, rng *rand.Rand, dt tensor.Dtype) (*gorgonia.Node, gorgonia.Nodes, error) {
				b := input(g, "boxes", gpuBoxes(rng, dt, 5, 0))
				y, err := square(gops.BoxConvert(b, in, out))
				return y, gorgonia.Nodes{b}, err
			}})
		}
	}
	for _, fc := range []struct{ alpha, gamma float64 }{{0.25, 2}, {-1, 1.5}, {0.5, 0}, {0.25, 1}} {
		cases = append(cases, gpuBoxCase{fmt.Sprintf("SigmoidFocalLoss/alpha=%v/gamma=%v", fc.alpha, fc.gamma), func(g *gorgonia.ExprGraph, rng *rand.Rand, dt tensor.Dtype) (*gorgonia.Node, gorgonia.Nodes, error) {
			x := input(g, "inputs", randValue(rng, dt, tensor.Shape{3, 4}))
			tv := make([]float64, 12)
			for i := range tv {
				tv[i] = rng.Float64()
			}
			tn := input(g, "targets", cudatest.Tensor(dt, tensor.Shape{3, 4}, tv))
			y, err := gops.SigmoidFocalLoss(x, tn, fc.alpha, fc.gamma, "none")
			return y, gorgonia.Nodes{x, tn}, err
		}})
	}
	return cases
}

func TestGPUBoxFunctions(t *testing.T) {
	for _, dt := range gpuDtypes {
		for _, c := range gpuBoxCases() {
			t.Run(fmt.Sprintf("%v/%s", dt, c.name), func(t *testing.T) {
				gpuCheck(t, dt, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes) {
					y, wrt, err := c.build(g, rng, dt)
					if err != nil {
						t.Fatal(err)
					}
					return y, wrt
				})
			})
		}
	}
}

// TestGPUIndexSelectBadIndex: an index out of range is reported as on the
// CPU (checked on the host before any launch).
func TestGPUIndexSelectBadIndex(t *testing.T) {
	needGPU(t)
	for _, dt := range gpuDtypes {
		t.Run(dt.String(), func(t *testing.T) {
			g := gorgonia.NewGraph()
			x := input(g, "x", randValue(rand.New(rand.NewSource(1)), dt, tensor.Shape{3, 2}))
			idx := input(g, "idx", tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{0, 3})))
			y, err := gops.IndexSelect(x, idx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := gorgonia.Square(y); err != nil {
				t.Fatal(err)
			}
			m := gorgonia.NewTapeMachine(g)
			defer m.Close()
			if err := m.RunAll(); err == nil || !strings.Contains(err.Error(), "idx[1] = 3 is outside [0, 3)") {
				t.Fatalf("error %v, want the index out of range named", err)
			}
		})
	}
}
