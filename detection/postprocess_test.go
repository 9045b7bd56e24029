package detection

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/tensor"
)

// postInputs rebuilds a postprocess case's inputs (the script's
// postprocess_cases formulas).
func postInputs(c postprocessCase) (cls, reg, ctr, anchors []*tensor.Dense) {
	n := len(c.ImageSizes)
	logits := func(seed uint64, count int) []float64 {
		u := uniforms(seed, count)
		if c.Quantised {
			for i, v := range u {
				u[i] = math.Floor(v*64)/4 - 8
			}
			return u
		}
		return affine(u, 12, -6)
	}
	for l, hwa := range c.Levels {
		base := c.Seed + uint64(10*l)
		cls = append(cls, golden.Tensor(c.Dtype, []int{n, hwa, c.Classes}, logits(base, n*hwa*c.Classes)))
		anchors = append(anchors, golden.Tensor(c.Dtype, []int{hwa, 4}, goldenBoxes(base+2, hwa, 80)))
		if c.Model == "retinanet" {
			reg = append(reg, golden.Tensor(c.Dtype, []int{n, hwa, 4}, affine(uniforms(base+1, n*hwa*4), 1.2, -0.6)))
			continue
		}
		reg = append(reg, golden.Tensor(c.Dtype, []int{n, hwa, 4}, affine(uniforms(base+1, n*hwa*4), 0.6, 0)))
		ctr = append(ctr, golden.Tensor(c.Dtype, []int{n, hwa, 1}, logits(base+3, n*hwa)))
	}
	return cls, reg, ctr, anchors
}

func TestPostprocessDetectionsGolden(t *testing.T) {
	for _, c := range loadValues(t).Post {
		checkPostprocessCase(t, c)
	}
}

// TestPostprocessDetectionsTiesGolden compares cases of more than 1000
// candidates with many equal scores (scripts/gen_detection_review.py),
// where torchvision's batched_nms runs per class and orders the kept
// boxes with torch's unstable sort; one case keeps no detection.
func TestPostprocessDetectionsTiesGolden(t *testing.T) {
	var doc struct {
		Post []postprocessCase `json:"postprocess"`
	}
	golden.Decode(t, "../testdata/detection/postprocess_ties.json.gz", &doc)
	if len(doc.Post) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range doc.Post {
		checkPostprocessCase(t, c)
	}
}

// checkPostprocessCase runs a golden postprocess case and compares labels
// (in order), scores and boxes with torchvision's.
func checkPostprocessCase(t *testing.T, c postprocessCase) {
	t.Helper()
	{
		name := c.Name + "/" + c.Dtype
		cfg := PostprocessConfig{ScoreThresh: c.ScoreThresh, NMSThresh: c.NMSThresh, DetectionsPerImg: c.DetectionsPerImg, TopkCandidates: c.TopkCandidates}
		cls, reg, ctr, anchors := postInputs(c)
		var dets []Detections
		var err error
		if c.Model == "retinanet" {
			dets, err = RetinaNetPostprocessDetections(cfg, NewBoxCoder([4]float64{1, 1, 1, 1}), cls, reg, anchors, c.ImageSizes)
		} else {
			dets, err = FCOSPostprocessDetections(cfg, BoxLinearCoder{NormalizeBySize: true}, cls, reg, ctr, anchors, c.ImageSizes)
		}
		if err != nil {
			t.Fatal(name, err)
		}
		if len(dets) != len(c.Labels) {
			t.Fatalf("%s: %d images, want %d", name, len(dets), len(c.Labels))
		}
		tol := 1e-5
		if c.Dtype == "float64" {
			tol = 1e-10
		}
		for i, d := range dets {
			if fmt.Sprint(d.Labels) != fmt.Sprint(c.Labels[i]) {
				t.Fatalf("%s image %d: labels\n%v\nwant\n%v", name, i, d.Labels, c.Labels[i])
			}
			if d.Boxes.Dtype() != dtypeNamed(c.Dtype) || d.Scores.Dtype() != d.Boxes.Dtype() {
				t.Fatalf("%s image %d: dtypes %v %v", name, i, d.Boxes.Dtype(), d.Scores.Dtype())
			}
			golden.AssertClose(t, fmt.Sprintf("%s image %d scores", name, i), f64s(d.Scores), c.Scores[i], tol, 0)
			golden.AssertClose(t, fmt.Sprintf("%s image %d boxes", name, i), f64s(d.Boxes), c.Boxes[i], tol, tol)
		}
	}
}

func TestPostprocessDetectionsErrors(t *testing.T) {
	f64 := func(shape ...int) *tensor.Dense {
		return tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(shape...))
	}
	f32 := func(shape ...int) *tensor.Dense {
		return tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(shape...))
	}
	ls := func(ts ...*tensor.Dense) []*tensor.Dense { return ts }
	sizes := [][2]int{{10, 10}}
	ok := RetinaNetPostprocessConfig()
	coder := NewBoxCoder([4]float64{1, 1, 1, 1})
	retina := func(cfg PostprocessConfig, cls, reg, anc []*tensor.Dense, sz [][2]int) error {
		_, err := RetinaNetPostprocessDetections(cfg, coder, cls, reg, anc, sz)
		return err
	}
	nanThresh := ok
	nanThresh.ScoreThresh = math.NaN()
	negDets := ok
	negDets.DetectionsPerImg = -1
	negNMS := ok
	negNMS.NMSThresh = -0.5
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"no images", retina(ok, ls(f64(1, 5, 3)), ls(f64(1, 5, 4)), ls(f64(5, 4)), nil), "no images"},
		{"negative size", retina(ok, ls(f64(1, 5, 3)), ls(f64(1, 5, 4)), ls(f64(5, 4)), [][2]int{{-1, 4}}), "imageSizes[0] = [-1 4]"},
		{"no levels", retina(ok, nil, nil, nil, sizes), "0 levels of clsLogits"},
		{"anchor levels", retina(ok, ls(f64(1, 5, 3)), ls(f64(1, 5, 4)), ls(f64(5, 4), f64(5, 4)), sizes), "1 levels of clsLogits and 2 of anchors"},
		{"regression levels", retina(ok, ls(f64(1, 5, 3)), nil, ls(f64(5, 4)), sizes), "0 levels of bboxRegression"},
		{"logits rank", retina(ok, ls(f64(5, 3)), ls(f64(1, 5, 4)), ls(f64(5, 4)), sizes), "clsLogits[0] must be [N, HWA, K]"},
		{"batch mismatch", retina(ok, ls(f64(2, 5, 3)), ls(f64(2, 5, 4)), ls(f64(5, 4)), sizes), "clsLogits[0] must be"},
		{"anchors HWA", retina(ok, ls(f64(1, 5, 3)), ls(f64(1, 5, 4)), ls(f64(6, 4)), sizes), "anchors[0] must be [HWA, 4]"},
		{"regression cols", retina(ok, ls(f64(1, 5, 3)), ls(f64(1, 5, 5)), ls(f64(5, 4)), sizes), "bboxRegression[0] must be [N, HWA, 4]"},
		{"dtype mix", retina(ok, ls(f64(1, 5, 3)), ls(f32(1, 5, 4)), ls(f64(5, 4)), sizes), "level 0 holds dtype float32"},
		{"NaN threshold", retina(nanThresh, ls(f64(1, 5, 3)), ls(f64(1, 5, 4)), ls(f64(5, 4)), sizes), "ScoreThresh is NaN"},
		{"negative detections", retina(negDets, ls(f64(1, 5, 3)), ls(f64(1, 5, 4)), ls(f64(5, 4)), sizes), "DetectionsPerImg -1"},
		{"negative NMS", retina(negNMS, ls(f64(1, 5, 3)), ls(f64(1, 5, 4)), ls(f64(5, 4)), sizes), "NMSThresh -0.5"},
		{"bad weights", func() error {
			_, err := RetinaNetPostprocessDetections(ok, BoxCoder{}, ls(f64(1, 5, 3)), ls(f64(1, 5, 4)), ls(f64(5, 4)), sizes)
			return err
		}(), "Weights[0]"},
		{"fcos ctrness cols", func() error {
			_, err := FCOSPostprocessDetections(FCOSPostprocessConfig(), BoxLinearCoder{true}, ls(f64(1, 5, 3)), ls(f64(1, 5, 4)), ls(f64(1, 5, 2)), ls(f64(5, 4)), sizes)
			return err
		}(), "bboxCtrness[0] must be [N, HWA, 1]"},
		{"fcos ctrness levels", func() error {
			_, err := FCOSPostprocessDetections(FCOSPostprocessConfig(), BoxLinearCoder{true}, ls(f64(1, 5, 3)), ls(f64(1, 5, 4)), nil, ls(f64(5, 4)), sizes)
			return err
		}(), "0 levels of bboxCtrness"},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, c.err, c.want)
		}
	}
}

func TestPostprocessDetectionsEmpty(t *testing.T) {
	// All scores below the threshold, and an image of size 0: no detections,
	// [0, 4] boxes.
	cls := tensor.New(tensor.WithShape(2, 3, 2), tensor.WithBacking([]float32{-9, -9, -9, -9, -9, -9, 9, -9, -9, -9, -9, -9}))
	reg := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(2, 3, 4))
	anc := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking([]float32{0, 0, 4, 4, 1, 1, 5, 5, 2, 2, 6, 6}))
	dets, err := RetinaNetPostprocessDetections(RetinaNetPostprocessConfig(), NewBoxCoder([4]float64{1, 1, 1, 1}), []*tensor.Dense{cls}, []*tensor.Dense{reg}, []*tensor.Dense{anc}, [][2]int{{8, 8}, {0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(dets[0].Labels) != 0 || dets[0].Boxes.Shape()[0] != 0 {
		t.Fatalf("image 0: %v %v, want none", dets[0].Labels, dets[0].Boxes.Shape())
	}
	if fmt.Sprint(dets[1].Labels, f64s(dets[1].Boxes)) != "[0] [0 0 0 0]" {
		t.Fatalf("image 1: %v %v, want label 0 with the box clipped to the empty image", dets[1].Labels, f64s(dets[1].Boxes))
	}
}

// TestLogitCutSelection: the scores' cut below the threshold selects
// exactly the entries the full scores select, for logits dense around the
// threshold's logit, both models' rules, float32 and float64.
func TestLogitCutSelection(t *testing.T) {
	for _, thr := range []float64{0.05, 0.2, 0.5, 0.9, 0.989, 0.995, 0, -0.1} {
		testLogitCut[float32](t, thr)
		testLogitCut[float64](t, thr)
	}
}

func testLogitCut[T floatType](t *testing.T, thr float64) {
	t.Helper()
	rules := map[string]levelRule[T]{"retinanet": retinaLevel[T](NewBoxCoder([4]float64{1, 1, 1, 1})), "fcos": fcosLevel[T](BoxLinearCoder{NormalizeBySize: true})}
	base := math.Log(thr / (1 - thr))
	if thr <= 0 || thr >= 1 {
		base = 0
	}
	const n = 20000
	logits, ctr := make([]T, n), make([]T, n)
	for i := range logits {
		logits[i] = T(base + 0.04*(float64(i)/n-0.5)) // ±0.02 around the bound
		if i%7 == 0 {
			logits[i] = T(base + float64(i%23) - 11)
		}
		ctr[i] = T(8 - 16*float64(i%13)/12)
	}
	for name, rule := range rules {
		cut, full := make([]T, n), make([]T, n)
		rule.scores(cut, logits, ctr, 1, thr)
		rule.scores(full, logits, ctr, 1, -1) // no cut
		for i := range cut {
			if (cut[i] > T(thr)) != (full[i] > T(thr)) || cut[i] > T(thr) && cut[i] != full[i] {
				t.Fatalf("%s %T thr %v: logit %v scores %v with the cut, %v without", name, cut[i], thr, logits[i], cut[i], full[i])
			}
		}
	}
}
