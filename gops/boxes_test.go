package gops_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/tensor"
)

// Semantics shared by the RoI ops (boxes.go): channel mapping of the
// position-sensitive ops, their bad-input table, overflowing boxes.

// Output channel c of bin (i, j) reads input channel c·PH·PW + i·PW + j:
// with input channel k constant k, bin (i, j) of output channel c is
// c·PH·PW + i·PW + j exactly.
func TestPSChannelMapping(t *testing.T) {
	const ph, pw, cOut = 2, 3, 2
	x := make([]float64, 1*cOut*ph*pw*5*6)
	for i := range x {
		x[i] = float64(i / 30)
	}
	in := tensor.New(tensor.WithShape(1, cOut*ph*pw, 5, 6), tensor.WithBacking(x))
	b := boxesTensor([5]float64{0, 0.5, 0.5, 5, 4})
	for name, op := range map[string]poolOp{
		"PSRoIAlign": psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: [2]int{ph, pw}, SamplingRatio: 2}),
		"PSRoIPool":  psRoIPoolOp(gops.PSRoIPoolOpts{OutputSize: [2]int{ph, pw}}),
	} {
		y, _, err := runPool(op, in, b)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range y {
			if v != float64(i) {
				t.Fatalf("%s: output %v, want 0, 1, 2, ...", name, y)
			}
		}
	}
}

// psBadInput runs the bad-input table of a position-sensitive op: the
// RoI ops' common cases and the channel rule.
func psBadInput(t *testing.T, name string, build poolBuild, more ...badInputCase) {
	cases := append(commonBadInput(name),
		badInputCase{"channels not a multiple of the bins", rangeTensor(2, 6, 5, 6), testBoxes, [2]int{2, 2}, 0, true,
			fmt.Sprintf("gops: %s: input channels 6 must be a multiple of OutputSize[0]·OutputSize[1] = 4", name)},
		badInputCase{"more bins than channels", rangeTensor(2, 8, 5, 6), testBoxes, [2]int{3, 3}, 0, true, "input channels 8 must be a multiple"},
	)
	runBadInput(t, build, append(cases, more...))
}

// float32 box coordinates whose product with the spatial scale overflows
// to infinity pool nothing, without an error or a crash (with adaptive
// sampling, PSRoIAlign reports the infinite grid instead).
func TestPoolOverflowingBoxes(t *testing.T) {
	b := boxesTensor([5]float64{0, 3e38, 3e38, 3.4e38, 3.4e38}, [5]float64{1, -3.4e38, 0, 3.4e38, 4})
	ops := map[string]poolOp{
		"RoIPool":    roiPoolOp(gops.RoIPoolOpts{OutputSize: [2]int{2, 2}, SpatialScale: 4}),
		"PSRoIAlign": psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}, SpatialScale: 4, SamplingRatio: 2}),
		"PSRoIPool":  psRoIPoolOp(gops.PSRoIPoolOpts{OutputSize: [2]int{2, 2}, SpatialScale: 4}),
	}
	for name, op := range ops {
		y, dx, err := runPool(op, toFloat32(rangeTensor(2, 4, 5, 6)), toFloat32(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, v := range append(y, dx...) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s: value %d = %v", name, i, v)
			}
		}
	}
}
