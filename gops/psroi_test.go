package gops_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func psRoIAlignOp(opts gops.PSRoIAlignOpts) poolOp {
	return func(x, b *gorgonia.Node) (*gorgonia.Node, error) { return gops.PSRoIAlign(x, b, opts) }
}

func psRoIPoolOp(opts gops.PSRoIPoolOpts) poolOp {
	return func(x, b *gorgonia.Node) (*gorgonia.Node, error) { return gops.PSRoIPool(x, b, opts) }
}

// borderBoxes reach the last row and column of a [2, C, 5, 6] input, or
// beyond, where torchvision's ps_roi_pool forward and backward disagree.
var borderBoxes = boxesTensor(
	[5]float64{0, 0, 0, 6, 5},     // one past the last column and row
	[5]float64{1, 3, 2, 7.4, 6.6}, // beyond both
	[5]float64{0, 2.5, 0.5, 5, 4}, // ends on the last column, .5 start
	[5]float64{1, -1, 3, 4, 5.5},  // left of the image and beyond the last row
)

// psCase is one configuration of a position-sensitive op: the op and its
// input channels (a multiple of its output bins).
type psCase struct {
	name string
	op   poolOp
	c    int
}

var psCases = []psCase{
	{"PSRoIAlign/out=2x2/adaptive", psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}}), 8},
	{"PSRoIAlign/out=3x2/sampling=2/scale=0.5", psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: [2]int{3, 2}, SpatialScale: 0.5, SamplingRatio: 2}), 6},
	{"PSRoIAlign/out=1x2/sampling=-1/scale=0.5", psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: [2]int{1, 2}, SpatialScale: 0.5, SamplingRatio: -1}), 4},
	{"PSRoIPool/out=2x2", psRoIPoolOp(gops.PSRoIPoolOpts{OutputSize: [2]int{2, 2}}), 8},
	{"PSRoIPool/out=2x3/scale=0.5", psRoIPoolOp(gops.PSRoIPoolOpts{OutputSize: [2]int{2, 3}, SpatialScale: 0.5}), 12},
}

func TestPSDerivativesOrder3(t *testing.T) {
	for _, c := range psCases {
		for _, bs := range []struct {
			name  string
			boxes *tensor.Dense
		}{{"boxes", testBoxes}, {"border", borderBoxes}} {
			t.Run(c.name+"/"+bs.name, func(t *testing.T) {
				in := []*tensor.Dense{rangeTensor(2, c.c, 5, 6), bs.boxes}
				err := graphtest.Check(cubeOfSinPool(c.op), in, graphtest.Options{Order: 3, Wrt: []int{0}, Seed: 2})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestPSTapeEqualsLisp(t *testing.T) {
	for _, c := range psCases {
		for _, dt := range []string{"float64", "float32"} {
			t.Run(c.name+"/"+dt, func(t *testing.T) {
				checkVMs(t, cubeOfSinPool(c.op), rangeTensor(2, c.c, 5, 6), testBoxes, dt)
			})
		}
	}
}

func TestPSDeterministic(t *testing.T) {
	for _, c := range psCases {
		t.Run(c.name, func(t *testing.T) {
			checkDeterministic(t, c.op, rangeTensor(2, 4*c.c, 5, 6), manyBoxes)
		})
	}
}

// A bin without samples (a zero-width box, adaptive sampling) gives 0 and no
// gradient; torchvision gives NaN (0/0).
func TestPSRoIAlignNoSamplesIsZero(t *testing.T) {
	b := boxesTensor(
		[5]float64{0, 2, 1, 2, 4},     // zero width
		[5]float64{1, 1, 3, 4, 3},     // zero height
		[5]float64{0, 4, 1, 3.5, 3.5}, // slightly inverted: ceil(-0.25) = 0 samples
	)
	y, dx, err := runPool(psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}}), rangeTensor(2, 4, 5, 6), b)
	if err != nil {
		t.Fatal(err)
	}
	expectZeros(t, append(y, dx...))
}

// Sample points outside the input read nothing, in both directions, as in
// torchvision's ps_roi_align: a NaN in pixel 0 does not spread into an
// outside box's output, nor an infinite upstream gradient into pixel 0.
func TestPSRoIAlignOutsideReadsNothing(t *testing.T) {
	x := rangeTensor(1, 4, 4, 4)
	for c := 0; c < 4; c++ {
		x.Data().([]float64)[c*16] = math.NaN()
	}
	g := gorgonia.NewGraph()
	xn := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 4, 4, 4), gorgonia.WithValue(x))
	bn := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(1, 5), gorgonia.WithValue(boxesTensor([5]float64{0, -9, -9, -8, -8})))
	y := gorgonia.Must(gops.PSRoIAlign(xn, bn, gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2}))
	inf := tensor.New(tensor.WithShape(1, 1, 2, 2), tensor.WithBacking([]float64{math.Inf(1), math.Inf(1), math.Inf(1), math.Inf(1)}))
	dx, err := gops.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, g.Constant(inf))))), xn)
	if err != nil {
		t.Fatal(err)
	}
	got, err := evalNodes(g, y, dx[0])
	if err != nil {
		t.Fatal(err)
	}
	expectZeros(t, append(got[0], got[1]...))
}

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

func TestPSBadInput(t *testing.T) {
	ops := map[string]poolBuild{
		"PSRoIAlign": func(x, b *gorgonia.Node, size [2]int, scale float64) (*gorgonia.Node, error) {
			return gops.PSRoIAlign(x, b, gops.PSRoIAlignOpts{OutputSize: size, SpatialScale: scale})
		},
		"PSRoIPool": func(x, b *gorgonia.Node, size [2]int, scale float64) (*gorgonia.Node, error) {
			return gops.PSRoIPool(x, b, gops.PSRoIPoolOpts{OutputSize: size, SpatialScale: scale})
		},
	}
	for name, build := range ops {
		t.Run(name, func(t *testing.T) {
			cases := append(commonBadInput(name),
				badInputCase{"channels not a multiple of the bins", rangeTensor(2, 6, 5, 6), testBoxes, [2]int{2, 2}, 0, true,
					fmt.Sprintf("gops: %s: input channels 6 must be a multiple of OutputSize[0]·OutputSize[1] = 4", name)},
				badInputCase{"more bins than channels", rangeTensor(2, 8, 5, 6), testBoxes, [2]int{3, 3}, 0, true, "input channels 8 must be a multiple"},
			)
			if name == "PSRoIAlign" {
				cases = append(cases, badInputCase{"huge adaptive box", rangeTensor(2, 8, 5, 6), boxesTensor([5]float64{0, 0, 0, 1e12, 1e12}), [2]int{2, 2}, 0, false, "PSRoIAlign: box 0: adaptive sampling grid"})
			}
			runBadInput(t, build, cases)
		})
	}
	t.Run("PSRoIAlign/huge sampling ratio", func(t *testing.T) {
		g := gorgonia.NewGraph()
		x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 4, 4, 4), gorgonia.WithInit(gorgonia.RangedFrom(0)))
		b := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(1, 5), gorgonia.WithValue(boxesTensor([5]float64{0, 0, 0, 2, 2})))
		_, err := gops.PSRoIAlign(x, b, gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 5000})
		if err == nil || !strings.Contains(err.Error(), "SamplingRatio 5000 gives more than 2^24 samples per box") {
			t.Fatalf("error %v", err)
		}
	})
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
