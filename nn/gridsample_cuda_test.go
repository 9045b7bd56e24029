//go:build cuda

package nn_test

import (
	"testing"

	"github.com/gops-dev/gops/nn"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestGPUGridSample compares GridSample on the GPU (internal/cuda/kernels/nn/gridsample.cu),
// its order-1 and order-2 gradients w.r.t. input and grid (S, T, C, O and
// the pairs S2, T2, O2, GridSplit/GridEmbed), with the CPU's for every mode
// × padding, align_corners alternating, float64 and float32 (gpuCheck);
// and AffineGrid feeding GridSample, gradients reaching theta.
func TestGPUGridSample(t *testing.T) {
	if n, err := cu.NumDevices(); err != nil || n == 0 {
		t.Skip("no CUDA device")
	}
	var cases []gpuCase
	k := 0
	for _, mode := range []string{"bilinear", "nearest", "bicubic"} {
		for _, pad := range []string{"zeros", "border", "reflection"} {
			opts := nn.GridSampleOpts{Mode: mode, PaddingMode: pad, AlignCorners: k%2 == 1}
			k++
			cases = append(cases, gpuCase{"GridSample/" + mode + "/" + pad, []tensor.Shape{{2, 3, 5, 6}, {2, 4, 3, 2}},
				func(xs gorgonia.Nodes) (*gorgonia.Node, error) { return nn.GridSample(xs[0], xs[1], opts) }})
		}
	}
	cases = append(cases, gpuCase{"AffineGrid", []tensor.Shape{{2, 3, 5, 6}, {2, 2, 3}}, func(xs gorgonia.Nodes) (*gorgonia.Node, error) {
		grid, err := nn.AffineGrid(xs[1], [4]int{2, 3, 4, 5}, false)
		if err != nil {
			return nil, err
		}
		return nn.GridSample(xs[0], grid, nn.GridSampleOpts{PaddingMode: "border"})
	}})
	for _, c := range cases {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) { gpuCheck(t, dt, c) })
		}
	}
}
