package detection_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gops-dev/gops/detection"
	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/tensor"
)

// r18Dets are a golden's detections of one image.
type r18Dets struct {
	Boxes  []float64 `json:"boxes"`
	Scores []float64 `json:"scores"`
	Labels []int     `json:"labels"`
}

// r18Golden is testdata/detection/fasterrcnn_r18.json.gz.
type r18Golden struct {
	NumClasses     int     `json:"num_classes"`
	Representation int     `json:"representation"`
	MinSize        float64 `json:"min_size"`
	MaxSize        float64 `json:"max_size"`
	Runs           []struct {
		Shapes     [][]int  `json:"shapes"`
		BatchShape []int    `json:"batch_shape"`
		ImageSizes [][2]int `json:"image_sizes"`
		Proposals  []struct {
			Boxes  []float64 `json:"boxes"`
			Scores []float64 `json:"scores"`
		} `json:"proposals"`
		Det64 []r18Dets `json:"detections_float64"`
		Det32 []r18Dets `json:"detections_float32"`
	} `json:"runs"`
}

// closeTo compares got and want elementwise to rtol of want's largest
// magnitude.
func closeTo(t *testing.T, what string, got, want []float64, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 0.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	for i := range want {
		if d := math.Abs(got[i] - want[i]); !(d <= rtol*scale) {
			t.Errorf("%s[%d]: %v, want %v (rtol %g of %g)", what, i, got[i], want[i], rtol, scale)
			return
		}
	}
}

// float64s is a value's elements as float64.
func float64s(d *tensor.Dense) []float64 {
	switch x := d.Data().(type) {
	case []float32:
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = float64(v)
		}
		return out
	case []float64:
		return x
	}
	return nil
}

// TestFasterRCNNResNet18Golden: a ResNet-18-FPN Faster R-CNN with formula
// weights (scripts/gen_detection_fasterrcnn_r18.py: torchvision's default
// anchors, RPN and RoI heads, 11 classes) gives torchvision's proposals
// (float64, to 1e-10 of the largest coordinate) and detections (the same
// labels in order, boxes and scores to 1e-10 in float64; in float32, as
// matchDetections says) for a batch of two images of different sizes and
// two single images, resized by the transform.
func TestFasterRCNNResNet18Golden(t *testing.T) {
	if testing.Short() {
		t.Skip("a ResNet-18 detector on 160-pixel images")
	}
	doc := golden.Load[r18Golden](t, filepath.Join("..", "testdata", "detection", "fasterrcnn_r18.json.gz"))[0]
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			cfg := detection.FasterRCNNResNet50FPN(doc.NumClasses)
			cfg.Backbone.Body = detection.ResNet18()
			cfg.Backbone.Body.Eps = 0
			cfg.Representation = doc.Representation
			cfg.Transform = detection.NewGeneralizedRCNNTransform(doc.MinSize, doc.MaxSize)
			m, err := detection.NewFasterRCNN(cfg, dt, nil)
			if err == nil {
				t.Fatal("NewFasterRCNN with a nil rng: no error")
			}
			m, err = detection.NewFasterRCNN(cfg, dt, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			fillFormula(t, m.Weights())
			rtol := 1e-10
			if dt == tensor.Float32 {
				rtol = 1e-4
			}
			for r, run := range doc.Runs {
				images := make([]*tensor.Dense, len(run.Shapes))
				for j, s := range run.Shapes {
					x := make([]float64, tensor.Shape(s).TotalSize())
					for i := range x {
						x[i] = 0.5 + 0.5*math.Sin(0.021*float64(i)+0.7*float64(j))
					}
					images[j] = golden.Tensor(dt.String(), s, x)
				}
				if dt == tensor.Float64 {
					props, err := detection.FasterRCNNProposals(m, images)
					if err != nil {
						t.Fatal(err)
					}
					if len(props) != len(run.Proposals) {
						t.Fatalf("run %d: %d images' proposals, torchvision %d", r, len(props), len(run.Proposals))
					}
					for i, p := range props {
						closeTo(t, fmt.Sprintf("run %d image %d proposal boxes", r, i), float64s(p.Boxes), run.Proposals[i].Boxes, rtol)
						closeTo(t, fmt.Sprintf("run %d image %d proposal scores", r, i), float64s(p.Scores), run.Proposals[i].Scores, rtol)
					}
				}
				dets, err := m.Forward(images)
				if err != nil {
					t.Fatal(err)
				}
				want := run.Det64
				if dt == tensor.Float32 {
					want = run.Det32
				}
				if len(dets) != len(want) {
					t.Fatalf("run %d: %d images' detections, torchvision %d", r, len(dets), len(want))
				}
				for i, d := range dets {
					if dt == tensor.Float32 {
						matchDetections(t, fmt.Sprintf("run %d image %d", r, i), d, want[i])
						continue
					}
					if !slices.Equal(d.Labels, want[i].Labels) {
						t.Fatalf("run %d image %d labels\n%v\ntorchvision\n%v", r, i, d.Labels, want[i].Labels)
					}
					closeTo(t, fmt.Sprintf("run %d image %d boxes", r, i), float64s(d.Boxes), want[i].Boxes, rtol)
					closeTo(t, fmt.Sprintf("run %d image %d scores", r, i), float64s(d.Scores), want[i].Scores, rtol)
				}
			}
		})
	}
}

// matchDetections compares float32 detections with torchvision's where
// neither their order nor all of the set is reproducible: this model's
// scores lie within 1e-4 of each other (formula weights), so float32
// rounding reorders near-equal ones, and NMS, which keeps the first of
// overlapping boxes, then keeps others of a chain of near-equal
// overlapping boxes (a row of them along an edge). A detection matches
// an unused one of torchvision's of the same label, score within 3e-7
// and box within 1e-4 of the largest coordinate; 85% must match (a broken
// model matches next to none; this one matches 90–100%).
func matchDetections(t *testing.T, what string, d detection.Detections, want r18Dets) {
	t.Helper()
	boxes, scores := float64s(d.Boxes), float64s(d.Scores)
	if len(scores) != len(want.Scores) {
		t.Fatalf("%s: %d detections, torchvision %d", what, len(scores), len(want.Scores))
	}
	scale := 0.0
	for _, v := range want.Boxes {
		scale = math.Max(scale, math.Abs(v))
	}
	const sTol = 3e-7
	used := make([]bool, len(want.Scores))
	matched := 0
	for j := range scores {
		for k := range want.Scores {
			if used[k] || want.Labels[k] != d.Labels[j] || math.Abs(want.Scores[k]-scores[j]) > sTol {
				continue
			}
			ok := true
			for q := 0; q < 4; q++ {
				ok = ok && math.Abs(want.Boxes[4*k+q]-boxes[4*j+q]) <= 1e-4*scale
			}
			if ok {
				used[k] = true
				matched++
				break
			}
		}
	}
	if matched < len(scores)*85/100 {
		t.Errorf("%s: %d of %d detections match torchvision's, want 85%%", what, matched, len(scores))
	}
	t.Logf("%s: %d of %d detections match torchvision's", what, matched, len(scores))
}
