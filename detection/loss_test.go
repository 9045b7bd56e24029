package detection

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestMatcher checks Matcher.Match on hand-made qualities: the thresholds'
// three bands, the first of equal qualities, low-quality matches with
// their ties, and the errors.
func TestMatcher(t *testing.T) {
	// 2 boxes × 5 predictions.
	q := []float64{
		0.7, 0.45, 0.1, 0.3, 0.2,
		0.7, 0.2, 0.35, 0.1, 0.2,
	}
	for _, c := range []struct {
		name string
		m    Matcher
		want []int
	}{
		{"thresholds", Matcher{HighThreshold: 0.5, LowThreshold: 0.4}, []int{0, -2, -1, -1, -1}},
		// Box 1's best is 0.7 at prediction 0 (kept on box 0: its own
		// best); box 0's is 0.7 too. Prediction 2 is box 1's best only
		// after prediction 0: not a tie, stays below.
		{"low quality", Matcher{HighThreshold: 0.5, LowThreshold: 0.4, AllowLowQualityMatches: true}, []int{0, -2, -1, -1, -1}},
		{"equal thresholds", Matcher{HighThreshold: 0.3, LowThreshold: 0.3}, []int{0, 0, 1, 0, -1}},
	} {
		got, err := c.m.Match(q, 2, 5)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	// Low-quality matches: box 1's best, 0.35 at predictions 2 and 4 (a
	// tie), rescues both from below the thresholds.
	q2 := []float64{
		0.9, 0.1, 0.1, 0.2, 0.1,
		0.1, 0.2, 0.35, 0.1, 0.35,
	}
	got, err := Matcher{HighThreshold: 0.5, LowThreshold: 0.4, AllowLowQualityMatches: true}.Match(q2, 2, 5)
	if want := []int{0, -1, 1, -1, 1}; err != nil || !slices.Equal(got, want) {
		t.Errorf("low-quality ties: %v, %v; want %v", got, err, want)
	}
	for _, c := range []struct {
		m    Matcher
		q    []float64
		rows int
		cols int
	}{
		{Matcher{HighThreshold: 0.4, LowThreshold: 0.5}, q, 2, 5},
		{Matcher{HighThreshold: 0.5, LowThreshold: 0.4}, nil, 0, 5},
		{Matcher{HighThreshold: 0.5, LowThreshold: 0.4}, nil, 2, 0},
		{Matcher{HighThreshold: 0.5, LowThreshold: 0.4}, q, 3, 5},
		{Matcher{HighThreshold: 0.5, LowThreshold: 0.4}, nil, 1 << (strconv.IntSize - 2), 4}, // m·n overflows to 0
		{Matcher{HighThreshold: 0.5, LowThreshold: 0.4}, []float64{0.2, math.NaN()}, 1, 2},
	} {
		if _, err := c.m.Match(c.q, c.rows, c.cols); err == nil || !strings.HasPrefix(err.Error(), "detection: Matcher:") {
			t.Errorf("%+v on %d×%d: error %v", c.m, c.rows, c.cols, err)
		}
	}
}

// TestLossBadInput: bad ground truth is an error naming the tensor and
// the problem, never a panic, from PadTargets and LossInputs.Set; a bad
// BoxLossType or input from Loss.
func TestLossBadInput(t *testing.T) {
	box := func(v ...float64) *tensor.Dense { return newValue(v, len(v)/4, 4) }
	ok := Targets{Boxes: box(1, 2, 10, 12), Labels: []int{1}}
	for _, c := range []struct {
		name    string
		targets []Targets
		max     int
		want    string
	}{
		{"x2 < x1", []Targets{{Boxes: box(10, 2, 5, 12), Labels: []int{0}}}, 2, "targets[0].Boxes[0] = [10 2 5 12] has x2 <= x1"},
		{"y2 = y1", []Targets{ok, {Boxes: box(1, 2, 3, 4, 1, 5, 3, 5), Labels: []int{0, 1}}}, 2, "targets[1].Boxes[1] = [1 5 3 5] has x2 <= x1 or y2 <= y1"},
		{"NaN box", []Targets{{Boxes: box(1, math.NaN(), 3, 4), Labels: []int{0}}}, 2, "targets[0].Boxes[0] = [1 NaN 3 4] is not finite"},
		{"infinite box", []Targets{{Boxes: box(1, 1, math.Inf(1), 4), Labels: []int{0}}}, 2, "is not finite"},
		{"negative label", []Targets{ok, {Boxes: box(1, 2, 3, 4), Labels: []int{-1}}}, 2, "targets[1].Labels[0] = -1 is negative"},
		{"more boxes than the maximum", []Targets{{Boxes: box(1, 2, 3, 4, 1, 2, 3, 4), Labels: []int{0, 0}}}, 1, "targets[0] has 2 boxes, more than the padded maximum 1"},
		{"labels and boxes", []Targets{{Boxes: box(1, 2, 3, 4), Labels: []int{0, 1}}}, 2, "targets[0] has 1 boxes and 2 labels"},
		{"boxes not [G, 4]", []Targets{{Boxes: newValue([]float64{1, 2, 3}, 1, 3), Labels: []int{0}}}, 2, "targets[0].Boxes must be [G, 4]"},
		{"int boxes", []Targets{{Boxes: tensor.New(tensor.WithShape(1, 4), tensor.WithBacking([]int{1, 2, 3, 4})), Labels: []int{0}}}, 2, "dtype int"},
		{"no images", nil, 2, "no images"},
		{"negative maximum", []Targets{ok}, -1, "maxBoxes -1 is negative"},
		{"huge maximum", []Targets{ok, ok}, 1 << (strconv.IntSize - 2), "is above 16777216 boxes (MaxPadBoxes)"},
	} {
		_, err := PadTargets(c.targets, c.max)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "detection: PadTargets: ") {
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		}
	}

	_, m := tinyModel(t, "retinanet_v1", tensor.Float32)
	defer m.Close()
	lg := newLossGraph(t, m, graphtest.Float32([]*tensor.Dense{randomBatch(1, 2, 32, 32)})[0], false)
	two, err := PadTargets([]Targets{ok, {Boxes: box(1, 2, 10, 12), Labels: []int{3}}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	one, err := PadTargets([]Targets{ok}, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Boxes checked in float64 that round to degenerate or infinite ones
	// in the model's float32 (torchvision matches them in float64).
	narrow, err := PadTargets([]Targets{ok, {Boxes: box(1, 2, 1+1e-9, 12), Labels: []int{0}}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	huge, err := PadTargets([]Targets{{Boxes: box(1, 2, 1e39, 40), Labels: []int{0}}, ok}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		tb   TargetBatch
		want string
	}{
		"label out of range": {two, "targets[1].Labels[0] = 3, the model has 3 classes"},
		"one image of two":   {one, "targets for 1 images, want 2"},
		"zero value":         {TargetBatch{}, "targets for 0 images, want 2"},
		"x2 = x1 in float32": {narrow, "targets[1].Boxes[0] = [1 2 1 12] in float32 has x2 <= x1 or y2 <= y1"},
		"inf in float32":     {huge, "targets[0].Boxes[0] = [1 2 +Inf 40] in float32 is not finite"},
	} {
		if err := lg.in.Set(c.tb); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Set, %s: error %v, want one with %q", name, err, c.want)
		}
	}
	if err := (*LossInputs)(nil).Set(one); err == nil {
		t.Error("Set on a nil LossInputs: no error")
	}

	r := m.(*RetinaNet)
	r.Config.BoxLossType = "smooth_l1"
	if _, _, err := r.Loss(lg.x); err == nil || !strings.Contains(err.Error(), `BoxLossType "smooth_l1"`) {
		t.Errorf("BoxLossType smooth_l1: error %v", err)
	}
	r.Config.BoxLossType = ""
	if _, _, err := r.Loss(nil); err == nil {
		t.Error("Loss(nil): no error")
	}
	if _, _, err := (*FCOS)(nil).Loss(lg.x); err == nil {
		t.Error("a nil FCOS's Loss: no error")
	}
}

// twoImageTargets are two images' ground truth for 40×56 batches: boxes of
// several levels, one at the border.
func twoImageTargets() []Targets {
	return []Targets{
		{Boxes: newValue([]float64{2, 3, 20, 25, 10, 4, 40, 30}, 2, 4), Labels: []int{1, 2}},
		{Boxes: newValue([]float64{0, 0, 56, 40}, 1, 4), Labels: []int{0}},
	}
}

// TestLossDirectional checks the total loss's derivatives of orders 1 to
// 3 along a random direction over every trainable weight and the image
// against central differences, on small images with boxes of several
// levels: FCOS and RetinaNet v2 (GIoU of decoded boxes, batch norm with
// batch statistics).
func TestLossDirectional(t *testing.T) {
	tb, err := PadTargets(twoImageTargets(), 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fcos", "retinanet_v2"} {
		t.Run(name, func(t *testing.T) {
			_, m := tinyModel(t, name, tensor.Float64)
			defer m.Close()
			lg := newLossGraph(t, m, randomBatch(5, 2, 40, 56), false)
			if err := lg.in.Set(tb); err != nil {
				t.Fatal(err)
			}
			ws, err := m.Weights().Params.Nodes(lg.g)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := graphtest.Directional(lg.losses.Total, append(gorgonia.Nodes{lg.x}, ws...),
				graphtest.DirectionalOpts{Order: 3, Seed: 11, RTol: 1e-4, ATol: 1e-7})
			if err != nil {
				t.Fatalf("%v\n%v", err, rep)
			}
			t.Logf("%v", rep)
		})
	}
}

// TestLossAssignment checks the values Set computes for one hand-made
// image against torchvision's rules: RetinaNet's anchors of IoU >= 0.5
// are foreground with the box's one-hot class, those in [0.4, 0.5) have
// no classification weight; FCOS's anchors inside a box near its centre
// take the smaller of two nested boxes.
func TestLossAssignment(t *testing.T) {
	for _, name := range []string{"retinanet_v1", "fcos"} {
		_, m := tinyModel(t, name, tensor.Float64)
		lg := newLossGraph(t, m, randomBatch(2, 1, 64, 64), false)
		m.Close()
		tb, err := PadTargets([]Targets{{Boxes: newValue([]float64{8, 8, 40, 40, 16, 16, 32, 32}, 2, 4), Labels: []int{2, 1}}}, 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := lg.in.Set(tb); err != nil {
			t.Fatal(err)
		}
		in := lg.in
		anchors := valueData[float64](in.anchorBoxes)
		gt := []float64{8, 8, 40, 40, 16, 16, 32, 32}
		iou := boxIoU(gt, anchors)
		cls, clsW := in.clsTarget.Data().([]float64), in.clsWeight.Data().([]float64)
		fg := 0
		for i := 0; i < in.anchors; i++ {
			label := -1
			for c := 0; c < in.k; c++ {
				if cls[i*in.k+c] == 1 {
					label = c
				}
			}
			if label >= 0 {
				fg++
			}
			best := math.Max(iou[i], iou[in.anchors+i])
			switch {
			case name == "retinanet_v1" && best >= 0.5 && label < 0:
				t.Errorf("%s: anchor %d of IoU %.3f is not foreground", name, i, best)
			case name == "retinanet_v1" && best >= 0.4 && best < 0.5 && label < 0 && clsW[i*in.k] != 0:
				t.Errorf("%s: anchor %d of IoU %.3f between the thresholds has weight %v", name, i, best, clsW[i*in.k])
			case name == "fcos" && label >= 0:
				a := anchors[4*i : 4*i+4]
				cx, cy := (a[0]+a[2])/2, (a[1]+a[3])/2
				if inner := cx > 16 && cx < 32 && cy > 16 && cy < 32; inner != (label == 1) {
					t.Errorf("%s: anchor %d at (%v, %v) has label %d", name, i, cx, cy, label)
				}
			}
		}
		if fg == 0 {
			t.Errorf("%s: no foreground anchor", name)
		}
		want := 1 / float64(fg)
		if name == "retinanet_v1" {
			if w := in.boxWeight.Data().([]float64); !slices.Contains(w, want) {
				t.Errorf("%s: no box weight 1/%d", name, fg)
			}
		} else if clsW[0] != want {
			t.Errorf("%s: classification weight %v, want 1/%d", name, clsW[0], fg)
		}
		t.Log(name, fmt.Sprint(fg, " foreground anchors"))
	}
}
