package gops_test

import (
	"math"
	"slices"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// boxGoldenCase is one torchvision evaluation written by
// testdata/gen_golden_boxops.py (schema at its top).
type boxGoldenCase struct {
	Name        string           `json:"name"`
	Op          string           `json:"op"`
	Dtype       string           `json:"dtype"`
	InFmt       string           `json:"in_fmt"`
	OutFmt      string           `json:"out_fmt"`
	Size        []int            `json:"size"`
	Eps         float64          `json:"eps"`
	Reduction   ad.Reduction     `json:"reduction"`
	Alpha       float64          `json:"alpha"`
	Gamma       float64          `json:"gamma"`
	Shape1      []int            `json:"shape1"`
	X1          []float64        `json:"x1"`
	Shape2      []int            `json:"shape2"`
	X2          []float64        `json:"x2"`
	OutputShape []int            `json:"output_shape"`
	Output      []float64        `json:"output"`
	GradOutput  []float64        `json:"grad_output"`
	Grad1       []float64        `json:"grad1"`
	Grad2       []float64        `json:"grad2"`
	V1          []float64        `json:"v1"`
	V2          []float64        `json:"v2"`
	HVP1        []float64        `json:"hvp1"`
	HVP2        []float64        `json:"hvp2"`
	NaN         map[string][]int `json:"nan"`
	// The exact loss and logits gradient of a large-logit focal case
	// (gamma 0), in float64 on the case's rounded inputs.
	ExactOutput []float64 `json:"exact_output"`
	ExactGrad1  []float64 `json:"exact_grad1"`

	BoxesShape   []int     `json:"boxes_shape"`
	Boxes        []float64 `json:"boxes"`
	Scores       []float64 `json:"scores"`
	ScoresNaN    []int     `json:"scores_nan"`
	Idxs         []int     `json:"idxs"`
	IoUThreshold float64   `json:"iou_threshold"`
	MinSize      float64   `json:"min_size"`
	Keep         []int     `json:"keep"`
}

// build applies the case's op to its input nodes.
func (c *boxGoldenCase) build(x1, x2 *gorgonia.Node) (*gorgonia.Node, error) {
	switch c.Op {
	case "box_area":
		return gops.BoxArea(x1)
	case "box_convert":
		return gops.BoxConvert(x1, c.InFmt, c.OutFmt)
	case "clip_boxes_to_image":
		return gops.ClipBoxesToImage(x1, [2]int{c.Size[0], c.Size[1]})
	case "box_iou":
		return gops.BoxIoU(x1, x2)
	case "generalized_box_iou":
		return gops.GeneralizedBoxIoU(x1, x2)
	case "distance_box_iou":
		return gops.DistanceBoxIoU(x1, x2, c.Eps)
	case "complete_box_iou":
		return gops.CompleteBoxIoU(x1, x2, c.Eps)
	case "generalized_box_iou_loss":
		return gops.GeneralizedBoxIoULoss(x1, x2, c.Reduction, c.Eps)
	case "distance_box_iou_loss":
		return gops.DistanceBoxIoULoss(x1, x2, c.Reduction, c.Eps)
	case "complete_box_iou_loss":
		return gops.CompleteBoxIoULoss(x1, x2, c.Reduction, c.Eps)
	case "sigmoid_focal_loss":
		return gops.SigmoidFocalLoss(x1, x2, c.Alpha, c.Gamma, c.Reduction)
	}
	return nil, nil
}

// assertWithNaN compares got to want, requiring NaN exactly at nan.
func assertWithNaN(t *testing.T, what string, got, want []float64, nan []int, rtol, atol float64) {
	t.Helper()
	got = append([]float64(nil), got...)
	want = append([]float64(nil), want...)
	for i, v := range want {
		if math.Abs(v) >= 1e308 { // the generator's ±Inf
			want[i] = math.Inf(int(math.Copysign(1, v)))
		}
	}
	for _, i := range nan {
		if i >= len(got) || !math.IsNaN(got[i]) {
			t.Fatalf("%s[%d] = %v, want NaN", what, i, got[i])
		}
		got[i] = 0
	}
	for i, v := range got {
		if math.IsNaN(v) && !slices.Contains(nan, i) {
			t.Fatalf("%s[%d] is NaN, want %v", what, i, want[i])
		}
	}
	assertClose(t, what, got, want, rtol, atol)
}

func TestBoxOpsGolden(t *testing.T) {
	cases := loadGoldenFile[boxGoldenCase](t, "boxops_golden.json.gz")
	seen := map[string]bool{}
	for _, c := range cases {
		if c.Shape1 == nil {
			continue // a selection case (TestNMSGolden)
		}
		seen[c.Op] = true
		t.Run(c.Name, func(t *testing.T) {
			dt := tensor.Float64
			rtol, atol := 1e-10, 1e-10
			if c.Dtype == "float32" {
				dt, rtol, atol = tensor.Float32, 2e-4, 2e-4
			}
			g := gorgonia.NewGraph()
			node := func(shape []int, data []float64, name string) *gorgonia.Node {
				return goldenNode(g, c.Dtype, name, shape, data)
			}
			x1 := node(c.Shape1, c.X1, "x1")
			wrt := gorgonia.Nodes{x1}
			var x2 *gorgonia.Node
			if c.Shape2 != nil {
				x2 = node(c.Shape2, c.X2, "x2")
				wrt = append(wrt, x2)
			}
			y, err := c.build(x1, x2)
			if err != nil {
				t.Fatal(err)
			}
			if !sameInts(y.Shape(), c.OutputShape) && !(len(c.OutputShape) == 0 && y.IsScalar()) {
				t.Fatalf("output shape %v, want %v", y.Shape(), c.OutputShape)
			}
			if !y.IsScalar() && y.Shape().TotalSize() == 0 {
				runRead(t, g, y)
				return
			}
			if c.Grad1 == nil || x1.Shape().TotalSize() == 0 { // no gradient, or gradients of nothing
				got := runRead(t, g, y)
				assertWithNaN(t, "output", got[0], c.Output, c.NaN["output"], rtol, atol)
				return
			}
			var cost *gorgonia.Node
			if y.IsScalar() {
				gc, _ := ad.Constant(g, scalarOf(dt, c.GradOutput[0]))
				cost = gorgonia.Must(gorgonia.Mul(y, gc))
			} else {
				gc, _ := ad.Constant(g, goldenTensor(c.Dtype, c.OutputShape, c.GradOutput))
				cost = gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, gc))))
			}
			g1, err := ad.Grad(cost, wrt...)
			if err != nil {
				t.Fatal(err)
			}
			vs := [][]float64{c.V1, c.V2}
			var s *gorgonia.Node
			for i, gn := range g1 {
				vc, _ := ad.Constant(g, goldenTensor(c.Dtype, wrt[i].Shape(), vs[i]))
				term := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(gn, vc))))
				if s == nil {
					s = term
				} else {
					s = gorgonia.Must(gorgonia.Add(s, term))
				}
			}
			h, err := ad.Grad(s, wrt...)
			if err != nil {
				t.Fatal(err)
			}
			got := runRead(t, g, append(append(gorgonia.Nodes{y}, g1...), h...)...)
			assertWithNaN(t, "output", got[0], c.Output, c.NaN["output"], rtol, atol)
			if c.ExactOutput != nil {
				// A few ulps of the dtype, relative: torch's own float32
				// loss of a confident correct logit is 1 % off; a loss
				// computed as softplus(x) − x·t was 5 % off in float32.
				ertol, eatol := 1e-13, 1e-300
				if dt == tensor.Float32 {
					ertol, eatol = 1e-6, 1e-44 // (float32 subnormals at |x| = 90)
				}
				assertClose(t, "exact output", got[0], c.ExactOutput, ertol, eatol)
				assertClose(t, "exact grad1", got[1], c.ExactGrad1, ertol, eatol)
			}
			grads, hvps := [][]float64{c.Grad1, c.Grad2}, [][]float64{c.HVP1, c.HVP2}
			for i := range wrt {
				n := []string{"1", "2"}[i]
				assertWithNaN(t, "grad"+n, got[1+i], grads[i], c.NaN["grad"+n], rtol, atol)
				assertWithNaN(t, "hvp"+n, got[1+len(wrt)+i], hvps[i], c.NaN["hvp"+n], rtol, 10*atol)
			}
		})
	}
	for _, op := range []string{"box_area", "box_convert", "clip_boxes_to_image", "box_iou", "generalized_box_iou", "distance_box_iou",
		"complete_box_iou", "generalized_box_iou_loss", "distance_box_iou_loss", "complete_box_iou_loss", "sigmoid_focal_loss"} {
		if !seen[op] {
			t.Errorf("no golden case for %s", op)
		}
	}
}

func TestNMSGolden(t *testing.T) {
	cases := loadGoldenFile[boxGoldenCase](t, "boxops_golden.json.gz")
	n := 0
	for _, c := range cases {
		if c.BoxesShape == nil {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			boxes := goldenTensor(c.Dtype, c.BoxesShape, c.Boxes)
			var scores *tensor.Dense
			if c.Scores != nil {
				sc := append([]float64(nil), c.Scores...)
				for _, i := range c.ScoresNaN {
					sc[i] = math.NaN()
				}
				scores = goldenTensor(c.Dtype, []int{len(sc)}, sc)
			}
			var keep []int
			var err error
			switch c.Op {
			case "nms":
				keep, err = gops.NMS(boxes, scores, c.IoUThreshold)
			case "batched_nms":
				keep, err = gops.BatchedNMS(boxes, scores, c.Idxs, c.IoUThreshold)
			case "remove_small_boxes":
				keep, err = gops.RemoveSmallBoxes(boxes, c.MinSize)
			default:
				t.Fatalf("unknown op %q", c.Op)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(keep, c.Keep) {
				t.Fatalf("kept %v,\nwant %v", keep, c.Keep)
			}
		})
	}
	if n == 0 {
		t.Fatal("no selection cases")
	}
}

func sameInts(s tensor.Shape, want []int) bool {
	return len(s) == len(want) && slices.Equal([]int(s), want)
}

func scalarOf(dt tensor.Dtype, v float64) gorgonia.Value {
	if dt == tensor.Float32 {
		return gorgonia.NewF32(float32(v))
	}
	return gorgonia.NewF64(v)
}
