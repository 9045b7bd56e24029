// Package cpu holds the CPU kernels of gops' and nn's ops: plain loops
// over flat slices in row-major order, parallel through par.For only, each
// writing disjoint memory and summing in a fixed order so that results are
// bitwise the same for any GOMAXPROCS. It imports neither Gorgonia nor the
// ops: a kernel sees slices and a geometry struct, never a node or a value.
//
// The groups: the RoI family (RoIAlign, RoIPool, PSRoIAlign, PSRoIPool,
// with their geometries, box checks and the shared sampling grid and bin
// rules) and MultiScaleRoIAlign's pyramid (FPN level mapper, per-level
// gather, pool and scatter); DeformConv2d and the convolution's
// Im2col/Col2im; pooling (max with argmax, average, adaptive) and
// interpolation; GridSample's family (sampling, transposes, grid
// contractions, bicubic, the tables of the CUDA kernels) and AffineGrid;
// layout moves (channels-last, broadcasts, Concat, Narrow); nn's row
// kernels (Softmax, LogSumExp and NLL, RowNorm, the channel affine family,
// GroupNorm, BatchNorm's channel mean); the convolution's per-sample loop
// (Conv) and MatMul's batch loop, with the product passed in; nn's
// elementwise activations and losses, CrossEntropy's Pick and Scatter,
// Dropout's mask; gops' box primitives (the pointwise box functions,
// column and row moves, BoxConvert, ClipBoxes, BoxesToRoIs) and box
// selection (NMS, BatchedNMS, RemoveSmallBoxes). Their scratch memory
// comes from the keepers of package par.
package cpu

import (
	"fmt"
	"math"
)

// Float is the element type of every kernel.
type Float interface{ ~float32 | ~float64 }

// BoxColumns names the columns of a box row (batch_index, x1, y1, x2, y2).
var BoxColumns = [5]string{"batch_index", "x1", "y1", "x2", "y2"}

// CheckBoxes checks box values at run time: each row's batch index is an
// integer in [0, n) and its coordinates are finite. The error names the
// first bad box.
func CheckBoxes[T Float](opName string, boxes []T, n int) error {
	for k := 0; k+5 <= len(boxes); k += 5 {
		b := float64(boxes[k])
		if b != math.Trunc(b) || b < 0 || b >= float64(n) {
			return fmt.Errorf("gops: %s: box %d: batch index %v is not an integer in [0, %d)", opName, k/5, b, n)
		}
		for j := 1; j < 5; j++ {
			if c := float64(boxes[k+j]); math.IsNaN(c) || math.IsInf(c, 0) {
				return fmt.Errorf("gops: %s: box %d: coordinate %d (%s) is %v", opName, k/5, j, BoxColumns[j], c)
			}
		}
	}
	return nil
}
