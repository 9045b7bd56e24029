package detection

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gops-dev/gops/internal/dense"
	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/tensor"
)

// rcnnGolden is a case of testdata/detection/fasterrcnn.json.gz
// (scripts/gen_detection_fasterrcnn.py): a tiny random torchvision Faster
// R-CNN, its checkpoint, images, and torchvision's proposals, box head
// outputs and detections.
type rcnnGolden struct {
	Name             string      `json:"name"`
	NumClasses       int         `json:"num_classes"`
	MinSize          float64     `json:"min_size"`
	MaxSize          float64     `json:"max_size"`
	Stem             int         `json:"stem"`
	Planes           []int       `json:"planes"`
	FPN              int         `json:"fpn"`
	Representation   int         `json:"representation"`
	AnchorSizes      [][]float64 `json:"anchor_sizes"`
	AspectRatios     [][]float64 `json:"aspect_ratios"`
	PreNMSTopN       int         `json:"rpn_pre_nms_top_n"`
	PostNMSTopN      int         `json:"rpn_post_nms_top_n"`
	RPNNMSThresh     float64     `json:"rpn_nms_thresh"`
	RPNScoreThresh   float64     `json:"rpn_score_thresh"`
	BoxScoreThresh   float64     `json:"box_score_thresh"`
	BoxNMSThresh     float64     `json:"box_nms_thresh"`
	DetectionsPerImg int         `json:"box_detections_per_img"`
	Checkpoint       string      `json:"checkpoint"`
	Images           []struct {
		Shape []int     `json:"shape"`
		Data  []float64 `json:"data"`
	} `json:"images"`
	BatchShape []int    `json:"batch_shape"`
	ImageSizes [][2]int `json:"image_sizes"`
	Props64    []struct {
		Boxes  []float64 `json:"boxes"`
		Scores []float64 `json:"scores"`
	} `json:"proposals_float64"`
	Props32 []struct {
		Boxes  []float64 `json:"boxes"`
		Scores []float64 `json:"scores"`
	} `json:"proposals_float32"`
	ClassLogits struct {
		Shape []int     `json:"shape"`
		Data  []float64 `json:"data"`
	} `json:"class_logits"`
	BoxRegression struct {
		Shape []int     `json:"shape"`
		Data  []float64 `json:"data"`
	} `json:"box_regression"`
	Det64 []goldenDetections `json:"detections_float64"`
	Det32 []goldenDetections `json:"detections_float32"`
	// V2, in fasterrcnn_v2.json.gz's cases, is the v2 structure
	// (scripts/gen_detection_fasterrcnn_v2.py): BatchNorm2d in the body
	// and the FPN, an RPN head of RPNConvDepth convolutions and a
	// FastRCNNConvFCHead with BatchNorm2d.
	V2 *struct {
		BoxConvLayers []int   `json:"box_conv_layers"`
		BoxFCLayers   []int   `json:"box_fc_layers"`
		RPNConvDepth  int     `json:"rpn_conv_depth"`
		BNEps         float64 `json:"bn_eps"`
	} `json:"v2"`
}

// config is the golden's model configuration.
func (g rcnnGolden) config() FasterRCNNConfig {
	body := ResNet{Block: BasicBlock, Layers: []int{1, 1, 1, 1}, StemWidth: g.Stem, Planes: g.Planes,
		NormLayer: FrozenBatchNorm2d, Eps: 0}
	rpn := DefaultRPNConfig()
	rpn.PreNMSTopNTest, rpn.PostNMSTopNTest = g.PreNMSTopN, g.PostNMSTopN
	rpn.NMSThresh, rpn.ScoreThresh = g.RPNNMSThresh, g.RPNScoreThresh
	heads := DefaultRoIHeadsConfig()
	heads.ScoreThresh, heads.NMSThresh, heads.DetectionsPerImg = g.BoxScoreThresh, g.BoxNMSThresh, g.DetectionsPerImg
	c := FasterRCNNConfig{
		Backbone: BackboneWithFPN{Body: body, TrainableLayers: 3, ReturnedLayers: []int{1, 2, 3, 4},
			OutChannels: g.FPN, ExtraBlocks: LastLevelMaxPool{}},
		NumClasses:      g.NumClasses,
		Transform:       NewGeneralizedRCNNTransform(g.MinSize, g.MaxSize),
		AnchorGenerator: AnchorGenerator{Sizes: g.AnchorSizes, AspectRatios: g.AspectRatios},
		RPN:             rpn,
		Representation:  g.Representation,
		RoIHeads:        heads,
	}
	if v := g.V2; v != nil {
		c.Backbone.Body.NormLayer, c.Backbone.Body.Eps = BatchNorm2d, v.BNEps
		c.Backbone.FPNBatchNorm = true
		c.RPNConvDepth = v.RPNConvDepth
		c.ConvFCHead = &FastRCNNConvFCHead{InputSize: [3]int{g.FPN, 7, 7}, ConvLayers: v.BoxConvLayers,
			FCLayers: v.BoxFCLayers, BatchNorm: true}
	}
	return c
}

func (g rcnnGolden) load(t *testing.T, dt tensor.Dtype) *FasterRCNN {
	t.Helper()
	path := filepath.Join("..", "testdata", "detection", g.Checkpoint)
	m, _, err := LoadFasterRCNN(path, g.config(), dt, LoadOptions{ConvertDtype: dt == tensor.Float64})
	if err != nil {
		t.Fatalf("loading %s: %v", g.Checkpoint, err)
	}
	return m
}

func (g rcnnGolden) images(dt tensor.Dtype) []*tensor.Dense {
	out := make([]*tensor.Dense, len(g.Images))
	for i, im := range g.Images {
		out[i] = dense.Of(dt, im.Shape, im.Data)
	}
	return out
}

// loadRCNNGoldens are fasterrcnn.json.gz's cases (v1), then
// fasterrcnn_v2.json.gz's.
func loadRCNNGoldens(t *testing.T) []rcnnGolden {
	gs := golden.Load[rcnnGolden](t, filepath.Join("..", "testdata", "detection", "fasterrcnn.json.gz"))
	return append(gs, golden.Load[rcnnGolden](t, filepath.Join("..", "testdata", "detection", "fasterrcnn_v2.json.gz"))...)
}

// TestFasterRCNNGoldenProposals compares the RPN's proposals (boxes and
// objectness probabilities, in order) and the box head's outputs on them
// with torchvision's: float64 to 1e-10, float32 to 1e-4 relative.
func TestFasterRCNNGoldenProposals(t *testing.T) {
	for _, g := range loadRCNNGoldens(t) {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", g.Name, dt), func(t *testing.T) {
				m := g.load(t, dt)
				defer m.Close()
				il, raw, err := m.rawOutputs(g.images(dt))
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint([]int(il.Tensors.Shape())) != fmt.Sprint(g.BatchShape) || fmt.Sprint(il.ImageSizes) != fmt.Sprint(g.ImageSizes) {
					t.Fatalf("batch %v sizes %v, torchvision %v %v", il.Tensors.Shape(), il.ImageSizes, g.BatchShape, g.ImageSizes)
				}
				want, rtol := g.Props64, 1e-10
				if dt == tensor.Float32 {
					want, rtol = g.Props32, 1e-4
				}
				if len(raw.proposals) != len(want) {
					t.Fatalf("%d images' proposals, torchvision %d", len(raw.proposals), len(want))
				}
				for i, p := range raw.proposals {
					relClose(t, fmt.Sprintf("image %d proposal boxes", i), f64s(p.Boxes), want[i].Boxes, rtol)
					relClose(t, fmt.Sprintf("image %d proposal scores", i), f64s(p.Scores), want[i].Scores, rtol)
				}
				if dt == tensor.Float64 {
					relClose(t, "class logits", f64s(raw.classLogits), g.ClassLogits.Data, rtol)
					relClose(t, "box regression", f64s(raw.boxRegression), g.BoxRegression.Data, rtol)
				}
			})
		}
	}
}

// TestFasterRCNNGoldenDetections runs Forward twice (the second run reuses
// the graph) and compares the detections with torchvision's: the same
// labels in the same order, boxes and scores to 1e-10 (float64) or 1e-4
// (float32) relative.
func TestFasterRCNNGoldenDetections(t *testing.T) {
	for _, g := range loadRCNNGoldens(t) {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", g.Name, dt), func(t *testing.T) {
				m := g.load(t, dt)
				defer m.Close()
				want, rtol := g.Det64, 1e-10
				if dt == tensor.Float32 {
					want, rtol = g.Det32, 1e-4
				}
				for run := 0; run < 2; run++ {
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
