//go:build cuda

package gops_test

import (
	"fmt"
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The box members' twins (internal/cuda/kernels/gops/roialignbox.cu): gradients of order 1 and
// 2 w.r.t. the input and the boxes run F_10, F_01, F_11 and their
// transposes on the GPU.

func TestGPURoIAlignBoxes(t *testing.T) {
	for _, dt := range gpuDtypes {
		for _, o := range []gops.RoIAlignOpts{{OutputSize: [2]int{2, 3}, SamplingRatio: 2}, {OutputSize: [2]int{3, 2}, SpatialScale: 0.5, Aligned: true}, {OutputSize: [2]int{2, 2}, SpatialScale: 0.5}} {
			t.Run(fmt.Sprintf("%v/%+v", dt, o), func(t *testing.T) {
				roiGPUCheck(t, dt, tensor.Shape{2, 3, 6, 7}, true, func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
					return gops.RoIAlign(x, b, o)
				})
			})
		}
	}
}

func TestGPUPSRoIAlignBoxes(t *testing.T) {
	for _, dt := range gpuDtypes {
		t.Run(dt.String(), func(t *testing.T) {
			roiGPUCheck(t, dt, tensor.Shape{2, 8, 6, 7}, true, func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
				return gops.PSRoIAlign(x, b, gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2})
			})
		})
	}
}
