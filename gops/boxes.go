package gops

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// checkBoxesNode checks, when a RoI op node is built, that boxes is [K, 5]
// with input's dtype.
func checkBoxesNode(opName string, input, boxes *gorgonia.Node) error {
	if err := checkFloatNode(opName, "boxes", boxes, 2); err != nil {
		return err
	}
	if s := boxes.Shape(); s[1] != 5 {
		return fmt.Errorf("gops: %s: boxes must be [K, 5] (batch_index, x1, y1, x2, y2), got %v", opName, s)
	}
	if boxes.Dtype() != input.Dtype() {
		return fmt.Errorf("gops: %s: boxes dtype %v differs from input dtype %v", opName, boxes.Dtype(), input.Dtype())
	}
	return nil
}

// spatialScaleOrOne returns the scale that multiplies box coordinates:
// 0 means 1. Negative, NaN and infinite scales are errors, and so is a
// scale that float32 cannot hold when the op runs in float32 (it would
// become +Inf or 0 there).
func spatialScaleOrOne(opName string, s float64, dt tensor.Dtype) (float64, error) {
	if s < 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return 0, fmt.Errorf("gops: %s: SpatialScale %v must be finite and >= 0", opName, s)
	}
	if s == 0 {
		return 1, nil
	}
	if f := float32(s); dt == tensor.Float32 && (math.IsInf(float64(f), 0) || f == 0) {
		return 0, fmt.Errorf("gops: %s: SpatialScale %v does not fit in float32", opName, s)
	}
	return s, nil
}

// checkOutputSize checks a pooled output size: positive, and at most 2²⁴
// bins.
func checkOutputSize(opName string, size [2]int) error {
	if size[0] <= 0 || size[1] <= 0 {
		return fmt.Errorf("gops: %s: OutputSize %v must be positive", opName, size)
	}
	if float64(size[0])*float64(size[1]) > MaxSamplesPerBox {
		return fmt.Errorf("gops: %s: OutputSize %v has more than 2^24 bins", opName, size)
	}
	return nil
}

// checkSamplingRatio checks that a fixed sampling ratio keeps a box within
// maxSamplesPerBox samples.
func checkSamplingRatio(opName string, ratio int, size [2]int) error {
	if r := float64(ratio); ratio > 0 && r*r*float64(size[0])*float64(size[1]) > MaxSamplesPerBox {
		return fmt.Errorf("gops: %s: SamplingRatio %d gives more than 2^24 samples per box", opName, ratio)
	}
	return nil
}
