// Package cpu holds the CPU kernels of gops' ops: plain loops over flat
// slices in row-major order, parallel through par.For only, each
// writing disjoint memory and summing in a fixed order so that results are
// bitwise the same for any GOMAXPROCS. It imports neither Gorgonia nor the
// ops: a kernel sees slices and a geometry struct, never a node or a value.
//
// Files by family: sampling.go (RoIAlign's sampling grid and bilinear rule,
// shared by RoIAlign and PSRoIAlign), poolbins.go (the integer bin geometry
// of RoIPool and PSRoIPool), roialign.go, roipool.go, psroialign.go,
// psroipool.go, deformconv.go, layout.go, gridsample.go (nn.GridSample's
// family and AffineGrid, with AVX2 gathers in gridsample_amd64.s), and
// vec.go (the channels-last helpers).
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
