package gops

import (
	"fmt"
	"math"
	"strings"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// What the RoI ops (RoIAlign, RoIPool, PSRoIAlign, PSRoIPool) check when a
// node is built, and the geometry they share.

// checkFloatNode checks that n is a float32 or float64 tensor of rank dims.
func checkFloatNode(opName, arg string, n *gorgonia.Node, dims int) error {
	if n == nil {
		return fmt.Errorf("gops: %s: %s is nil", opName, arg)
	}
	if dt := n.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return fmt.Errorf("gops: %s: %s dtype %v, want float32 or float64", opName, arg, dt)
	}
	if n.IsScalar() || n.Shape().Dims() != dims {
		return fmt.Errorf("gops: %s: %s must have rank %d, got shape %v", opName, arg, dims, n.Shape())
	}
	return nil
}

// checkRoINodes checks input [N, C, H, W] with H, W > 0 and boxes [K, 5] of
// input's float dtype, and returns input's shape.
func checkRoINodes(opName string, input, boxes *gorgonia.Node) (tensor.Shape, error) {
	if err := checkFloatNode(opName, "input", input, 4); err != nil {
		return nil, err
	}
	if err := checkFloatNode(opName, "boxes", boxes, 2); err != nil {
		return nil, err
	}
	if s := boxes.Shape(); s[1] != 5 {
		return nil, fmt.Errorf("gops: %s: boxes must be [K, 5] (batch_index, x1, y1, x2, y2), got %v", opName, s)
	}
	if boxes.Dtype() != input.Dtype() {
		return nil, fmt.Errorf("gops: %s: boxes dtype %v differs from input dtype %v", opName, boxes.Dtype(), input.Dtype())
	}
	s := input.Shape()
	if s[2] == 0 || s[3] == 0 {
		return nil, fmt.Errorf("gops: %s: input %v has no pixels (H or W is 0)", opName, s)
	}
	return s, nil
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
	if float64(size[0])*float64(size[1]) > cpu.MaxSamplesPerBox {
		return fmt.Errorf("gops: %s: OutputSize %v has more than 2^24 bins", opName, size)
	}
	return nil
}

// checkSamplingRatio checks that a fixed sampling ratio keeps a box within
// cpu.MaxSamplesPerBox samples.
func checkSamplingRatio(opName string, ratio int, size [2]int) error {
	if r := float64(ratio); ratio > 0 && r*r*float64(size[0])*float64(size[1]) > cpu.MaxSamplesPerBox {
		return fmt.Errorf("gops: %s: SamplingRatio %d gives more than 2^24 samples per box", opName, ratio)
	}
	return nil
}

// newPoolGeom checks the nodes and options shared by RoIPool, PSRoIPool and
// PSRoIAlign when a node is built, and returns the geometry. With
// positionSensitive, C must be a multiple of PH·PW.
func newPoolGeom(name string, input, boxes *gorgonia.Node, size [2]int, spatialScale float64, positionSensitive bool) (*cpu.PoolGeom, error) {
	s, err := checkRoINodes(name, input, boxes)
	if err != nil {
		return nil, err
	}
	if err := checkOutputSize(name, size); err != nil {
		return nil, err
	}
	scale, err := spatialScaleOrOne(name, spatialScale, input.Dtype())
	if err != nil {
		return nil, err
	}
	g := &cpu.PoolGeom{N: s[0], C: s[1], H: s[2], W: s[3], PH: size[0], PW: size[1], Scale: scale}
	if nb := g.PH * g.PW; positionSensitive && g.C%nb != 0 {
		return nil, fmt.Errorf("gops: %s: input channels %d must be a multiple of OutputSize[0]·OutputSize[1] = %d", name, g.C, nb)
	}
	return g, nil
}

// inputShape is the pooled ops' input shape [N, C, H, W].
func inputShape(g *cpu.PoolGeom) tensor.Shape { return tensor.Shape{g.N, g.C, g.H, g.W} }

// checkBoxesShape checks the boxes input of a RoI op spec, [K, 5].
func checkBoxesShape(name string, s tensor.Shape) error {
	if len(s) != 2 || s[1] != 5 {
		return fmt.Errorf("gops: %s: boxes must be [K, 5], got %v", name, s)
	}
	return nil
}

// roiPairShapes is the Shape rule of a RoI op F(X, boxes) -> [K, ...] and
// of its transpose Fᵀ(G, boxes) -> X's shape, given the input shape and the
// pooled shape of K boxes.
func roiPairShapes(name string, in tensor.Shape, pooled func(k int) tensor.Shape) (f, ft func([]tensor.Shape) (tensor.Shape, error)) {
	f = func(s []tensor.Shape) (tensor.Shape, error) {
		if !s[0].Eq(in) {
			return nil, fmt.Errorf("gops: %s: input shape %v, want %v", name, s[0], in)
		}
		if err := checkBoxesShape(name, s[1]); err != nil {
			return nil, err
		}
		return pooled(s[1][0]), nil
	}
	ft = func(s []tensor.Shape) (tensor.Shape, error) {
		if checkBoxesShape(name, s[1]) != nil || !s[0].Eq(pooled(s[1][0])) {
			want := strings.Trim(fmt.Sprint(pooled(1)[1:]), "()")
			return nil, fmt.Errorf("gops: %sTranspose: grad %v and boxes %v do not match (K, %s) and (K, 5)", name, s[0], s[1], want)
		}
		return in.Clone(), nil
	}
	return f, ft
}

// psSpecs is a position-sensitive op F(X, boxes) -> [K, C/(PH·PW), PH, PW]
// and its transpose Fᵀ(G, boxes) -> shape of X, a linear pair in X. The box
// gradient is zero when the op rounds them (PSRoIPool: piecewise constant
// in boxes; fam nil), otherwise that of the box family fam's members
// (PSRoIAlign: psRoIAlignFamily). adjSets says that adj writes every
// element of its result (Fᵀ's KernelOverwrites).
func psSpecs(g *cpu.PoolGeom, name string, rounds bool, fwd, adj ad.Kernel, adjSets bool, fam boxFamily) (f, ft ad.OpSpec) {
	shape, tshape := roiPairShapes(name, inputShape(g), func(k int) tensor.Shape {
		return tensor.Shape{k, g.C / (g.PH * g.PW), g.PH, g.PW}
	})
	f = ad.OpSpec{
		Name:       name,
		Params:     g.Params(),
		InputDims:  []int{4, 2},
		OutputDims: 4,
		DiffWRT:    []bool{true, !rounds},
		Shape:      shape,
		Kernel:     fwd,
	}
	ft = f
	ft.Name, ft.Shape, ft.Kernel, ft.KernelOverwrites = name+"Transpose", tshape, adj, adjSets
	if fam != nil {
		f.BackwardFor = boxFamilyBackward(fam, 0, 0, false)
		ft.BackwardFor = boxFamilyBackward(fam, 0, 0, true)
	}
	return ad.LinearPair(withCUDA(f, psGPU{g, !rounds, false}), withCUDA(ft, psGPU{g, !rounds, true}))
}

// psGPU is what the CUDA twins of PSRoIAlign, PSRoIPool and their
// transposes need (psroialign_cuda.go, psroipool_cuda.go).
type psGPU struct {
	g                *cpu.PoolGeom
	align, transpose bool
}
