package detection

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/dense"
	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// modelGolden is a case of testdata/detection/models_*.json.gz
// (scripts/gen_detection_models.py): a tiny random torchvision detector,
// its checkpoint, images, and torchvision's features, head outputs and
// detections.
type modelGolden struct {
	Model            string      `json:"model"`
	NumClasses       int         `json:"num_classes"`
	MinSize          float64     `json:"min_size"`
	MaxSize          float64     `json:"max_size"`
	Stem             int         `json:"stem"`
	Planes           []int       `json:"planes"`
	FPN              int         `json:"fpn"`
	AnchorSizes      [][]float64 `json:"anchor_sizes"`
	AspectRatios     [][]float64 `json:"aspect_ratios"`
	ScoreThresh      float64     `json:"score_thresh"`
	NMSThresh        float64     `json:"nms_thresh"`
	DetectionsPerImg int         `json:"detections_per_img"`
	TopkCandidates   int         `json:"topk_candidates"`
	Checkpoint       string      `json:"checkpoint"`
	Images           []struct {
		Shape []int     `json:"shape"`
		Data  []float64 `json:"data"`
	} `json:"images"`
	BatchShape []int    `json:"batch_shape"`
	ImageSizes [][2]int `json:"image_sizes"`
	Features   []struct {
		Name  string    `json:"name"`
		Shape []int     `json:"shape"`
		Data  []float64 `json:"data"`
	} `json:"features"`
	Head map[string]struct {
		Shape []int     `json:"shape"`
		Data  []float64 `json:"data"`
	} `json:"head"`
	Det64 []goldenDetections `json:"detections_float64"`
	Det32 []goldenDetections `json:"detections_float32"`
}

type goldenDetections struct {
	Boxes  []float64 `json:"boxes"`
	Scores []float64 `json:"scores"`
	Labels []int     `json:"labels"`
}

// detector is what the tests use of FCOS and RetinaNet.
type detector interface {
	Forward([]*tensor.Dense) ([]Detections, error)
	Build(*gorgonia.Node, bool) ([]*gorgonia.Node, *HeadOutputs, error)
	Weights() *Weights
	Close() error
}

// goldenBackbone is the tiny backbone of gen_detection_models.py.
func (g modelGolden) backbone() BackboneWithFPN {
	body := ResNet{Block: BasicBlock, Layers: []int{1, 1, 1, 1}, StemWidth: g.Stem, Planes: g.Planes,
		NormLayer: FrozenBatchNorm2d, Eps: 0}
	extra := LastLevelP6P7{InChannels: g.FPN, OutChannels: g.FPN}
	if g.Model == "retinanet_v2" {
		body.NormLayer, body.Eps = BatchNorm2d, 1e-5
		extra.InChannels = g.Planes[len(g.Planes)-1]
	}
	return BackboneWithFPN{Body: body, TrainableLayers: 3, ReturnedLayers: []int{2, 3, 4},
		OutChannels: g.FPN, ExtraBlocks: extra}
}

// load builds the golden's model in dt from its checkpoint.
func (g modelGolden) load(t *testing.T, dt tensor.Dtype) detector {
	t.Helper()
	path := filepath.Join("..", "testdata", "detection", g.Checkpoint)
	opts := LoadOptions{ConvertDtype: dt == tensor.Float64}
	post := PostprocessConfig{ScoreThresh: g.ScoreThresh, NMSThresh: g.NMSThresh,
		DetectionsPerImg: g.DetectionsPerImg, TopkCandidates: g.TopkCandidates}
	anchors := AnchorGenerator{Sizes: g.AnchorSizes, AspectRatios: g.AspectRatios}
	transform := NewGeneralizedRCNNTransform(g.MinSize, g.MaxSize)
	var m detector
	var err error
	if g.Model == "fcos" {
		cfg := FCOSConfig{Backbone: g.backbone(), NumClasses: g.NumClasses, NumConvs: 2, Transform: transform,
			AnchorGenerator: anchors, Postprocess: post}
		m, _, err = LoadFCOS(path, cfg, dt, opts)
	} else {
		cfg := RetinaNetConfig{Backbone: g.backbone(), NumClasses: g.NumClasses, NumConvs: 2, Transform: transform,
			AnchorGenerator: anchors, Postprocess: post, HeadNorm: HeadNormNone}
		if g.Model == "retinanet_v2" {
			cfg.HeadNorm, cfg.BoxLossType = HeadNormGroupNorm, "giou"
		}
		m, _, err = LoadRetinaNet(path, cfg, dt, opts)
	}
	if err != nil {
		t.Fatalf("loading %s: %v", g.Checkpoint, err)
	}
	return m
}

func loadModelGoldens(t *testing.T) []modelGolden {
	var all []modelGolden
	for _, name := range []string{"fcos", "retinanet_v1", "retinanet_v2"} {
		all = append(all, golden.Load[modelGolden](t, filepath.Join("..", "testdata", "detection", "models_"+name+".json.gz"))...)
	}
	return all
}

func (g modelGolden) images(dt tensor.Dtype) []*tensor.Dense {
	out := make([]*tensor.Dense, len(g.Images))
	for i, im := range g.Images {
		out[i] = dense.Of(dt, im.Shape, im.Data)
	}
	return out
}

// relClose compares got and want elementwise relative to want's largest
// magnitude.
func relClose(t *testing.T, what string, got, want []float64, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 0.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	worst, at := 0.0, 0
	for i := range want {
		if d := math.Abs(got[i] - want[i]); d > worst || math.IsNaN(d) {
			worst, at = d, i
		}
	}
	if !(worst <= rtol*scale) {
		t.Errorf("%s: |got − want| = %.3g at %d (got %v, want %v), over %.1g of the largest |want| %.3g",
			what, worst, at, got[at], want[at], rtol, scale)
	}
}

// TestModelsGoldenFeatures compares the FPN levels and head outputs of the
// batch's first image with torchvision's float64 model (float32 to 1e-4).
func TestModelsGoldenFeatures(t *testing.T) {
	for _, g := range loadModelGoldens(t) {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", g.Model, dt), func(t *testing.T) {
				m := g.load(t, dt)
				defer m.Close()
				tr := NewGeneralizedRCNNTransform(g.MinSize, g.MaxSize)
				il, err := tr.Transform(g.images(dt))
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint([]int(il.Tensors.Shape())) != fmt.Sprint(g.BatchShape) || fmt.Sprint(il.ImageSizes) != fmt.Sprint(g.ImageSizes) {
					t.Fatalf("batch %v sizes %v, torchvision %v %v", il.Tensors.Shape(), il.ImageSizes, g.BatchShape, g.ImageSizes)
				}
				gr := gorgonia.NewGraph()
				x := gorgonia.NewTensor(gr, dt, 4, gorgonia.WithShape(il.Tensors.Shape()...), gorgonia.WithValue(il.Tensors), gorgonia.WithName("x"))
				features, heads, err := m.Build(x, false)
				if err != nil {
					t.Fatal(err)
				}
				cls, reg, ctr, err := heads.Cat()
				if err != nil {
					t.Fatal(err)
				}
				outs := append(append([]*gorgonia.Node(nil), features...), cls, reg)
				names := []string{"cls_logits", "bbox_regression"}
				if ctr != nil {
					outs = append(outs, ctr)
					names = append(names, "bbox_ctrness")
				}
				vals, err := graphtest.Eval(gr, outs...)
				if err != nil {
					t.Fatal(err)
				}
				rtol := 1e-10
				if dt == tensor.Float32 {
					rtol = 1e-4
				}
				if len(features) != len(g.Features) {
					t.Fatalf("%d FPN levels, torchvision %d", len(features), len(g.Features))
				}
				for l, f := range g.Features {
					relClose(t, "features "+f.Name, vals[l][:len(f.Data)], f.Data, rtol)
				}
				for i, name := range names {
					want := g.Head[name]
					relClose(t, name, vals[len(features)+i][:len(want.Data)], want.Data, rtol)
				}
			})
		}
	}
}

// TestModelsGoldenDetections runs Forward on the three images and
// compares the detections with torchvision's: the same labels in the same
// order, boxes and scores to 1e-10 (float64) or 1e-4 (float32) relative.
func TestModelsGoldenDetections(t *testing.T) {
	for _, g := range loadModelGoldens(t) {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", g.Model, dt), func(t *testing.T) {
				m := g.load(t, dt)
				defer m.Close()
				want, rtol := g.Det64, 1e-10
				if dt == tensor.Float32 {
					want, rtol = g.Det32, 1e-4
				}
				for run := 0; run < 2; run++ { // the second run reuses the graph
					dets, err := m.Forward(g.images(dt))
					if err != nil {
						t.Fatal(err)
					}
					if len(dets) != len(want) {
						t.Fatalf("%d images' detections, torchvision %d", len(dets), len(want))
					}
					for i, d := range dets {
						if fmt.Sprint(d.Labels) != fmt.Sprint(want[i].Labels) {
							t.Fatalf("run %d image %d labels\n%v\ntorchvision\n%v", run, i, d.Labels, want[i].Labels)
						}
						relClose(t, fmt.Sprintf("image %d boxes", i), f64s(d.Boxes), want[i].Boxes, rtol)
						relClose(t, fmt.Sprintf("image %d scores", i), f64s(d.Scores), want[i].Scores, rtol)
					}
				}
			})
		}
	}
}
