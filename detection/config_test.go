package detection

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/tensor"
)

// TestConfigKeys checks that the full-size configurations hold exactly
// torchvision's state_dict layout (scripts/gen_detection_keys.py): every
// key, its shape, and whether it is trained.
func TestConfigKeys(t *testing.T) {
	type keyCase struct {
		Model string `json:"model"`
		Keys  []struct {
			Key       string `json:"key"`
			Shape     []int  `json:"shape"`
			Trainable bool   `json:"trainable"`
		} `json:"keys"`
	}
	if testing.Short() {
		t.Skip("builds five ResNet-50 detectors")
	}
	for _, c := range golden.Load[keyCase](t, filepath.Join("..", "testdata", "detection", "keys_golden.json.gz")) {
		t.Run(c.Model, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var w *Weights
			switch c.Model {
			case "fcos_resnet50_fpn":
				m, err := NewFCOS(FCOSResNet50FPN(91), tensor.Float32, rng)
				if err != nil {
					t.Fatal(err)
				}
				w = m.Weights()
			case "retinanet_resnet50_fpn", "retinanet_resnet50_fpn_v2":
				cfg := RetinaNetResNet50FPN(91)
				if c.Model == "retinanet_resnet50_fpn_v2" {
					cfg = RetinaNetResNet50FPNV2(91)
				}
				m, err := NewRetinaNet(cfg, tensor.Float32, rng)
				if err != nil {
					t.Fatal(err)
				}
				w = m.Weights()
			case "fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2":
				cfg := FasterRCNNResNet50FPN(91)
				if c.Model == "fasterrcnn_resnet50_fpn_v2" {
					cfg = FasterRCNNResNet50FPNV2(91)
				}
				m, err := NewFasterRCNN(cfg, tensor.Float32, rng)
				if err != nil {
					t.Fatal(err)
				}
				w = m.Weights()
			default:
				t.Fatalf("unknown model %q", c.Model)
			}
			if got, want := w.Params.Len()+w.Frozen.Len(), len(c.Keys); got != want {
				t.Errorf("%d tensors, torchvision %d", got, want)
			}
			for _, k := range c.Keys {
				v, err := w.Value(k.Key)
				if err != nil {
					t.Errorf("missing %s", k.Key)
					continue
				}
				if fmt.Sprint([]int(v.Shape())) != fmt.Sprint(k.Shape) {
					t.Errorf("%s: shape %v, torchvision %v", k.Key, v.Shape(), k.Shape)
				}
				if _, err := w.Params.Value(k.Key); (err == nil) != k.Trainable {
					t.Errorf("%s: trainable %v, torchvision %v", k.Key, err == nil, k.Trainable)
				}
			}
		})
	}
}

// TestConfigLevelErrors checks that NewFCOS and NewRetinaNet refuse an
// anchor generator that does not fit the FPN's levels or the head (which
// torchvision finds only on the first forward, as an assertion), before
// any graph is built.
func TestConfigLevelErrors(t *testing.T) {
	backbone := BackboneWithFPN{
		Body: ResNet{Block: BasicBlock, Layers: []int{1, 1, 1, 1}, StemWidth: 8, Planes: []int{8, 8, 16, 16},
			NormLayer: FrozenBatchNorm2d},
		TrainableLayers: 3, ReturnedLayers: []int{2, 3, 4}, OutChannels: 32,
		ExtraBlocks: LastLevelP6P7{InChannels: 32, OutChannels: 32},
	}
	fcos := FCOSResNet50FPN(3)
	fcos.Backbone = backbone
	retina := RetinaNetResNet50FPN(3)
	retina.Backbone = backbone
	four := func(g AnchorGenerator) AnchorGenerator {
		return AnchorGenerator{Sizes: g.Sizes[:4], AspectRatios: g.AspectRatios[:4]}
	}
	fcosFour, retinaFour := fcos, retina
	fcosFour.AnchorGenerator, retinaFour.AnchorGenerator = four(fcos.AnchorGenerator), four(retina.AnchorGenerator)
	fcosTwo := fcos
	fcosTwo.AnchorGenerator = AnchorGenerator{Sizes: fcos.AnchorGenerator.Sizes,
		AspectRatios: [][]float64{{1, 2}, {1, 2}, {1, 2}, {1, 2}, {1, 2}}}
	retinaMixed := retina
	retinaMixed.AnchorGenerator = RetinaNetAnchorGenerator()
	retinaMixed.AnchorGenerator.AspectRatios[2] = []float64{1}
	retinaPool := retina
	retinaPool.Backbone.ExtraBlocks = LastLevelMaxPool{}
	retinaBadSize := retina
	retinaBadSize.AnchorGenerator = RetinaNetAnchorGenerator()
	retinaBadSize.AnchorGenerator.Sizes[1][0] = -32
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name string
		new  func() error
		want string
	}{
		{"FCOS 4 anchor levels", func() error { _, err := NewFCOS(fcosFour, tensor.Float32, rng); return err },
			"NewFCOS: detection: AnchorGenerator: 5 feature maps for 4 levels"},
		{"FCOS 2 anchors", func() error { _, err := NewFCOS(fcosTwo, tensor.Float32, rng); return err },
			"NewFCOS: detection: AnchorGenerator: 2 anchors per location at level 0, FCOS's head predicts 1"},
		{"RetinaNet 4 anchor levels", func() error { _, err := NewRetinaNet(retinaFour, tensor.Float32, rng); return err },
			"NewRetinaNet: detection: AnchorGenerator: 5 feature maps for 4 levels"},
		{"RetinaNet mixed anchors", func() error { _, err := NewRetinaNet(retinaMixed, tensor.Float32, rng); return err },
			"NewRetinaNet: detection: AnchorGenerator: 3 anchors per location at level 2, RetinaNet's head predicts 9"},
		{"RetinaNet LastLevelMaxPool", func() error { _, err := NewRetinaNet(retinaPool, tensor.Float32, rng); return err },
			"NewRetinaNet: detection: AnchorGenerator: 4 feature maps for 5 levels"},
		{"RetinaNet negative size", func() error { _, err := NewRetinaNet(retinaBadSize, tensor.Float32, rng); return err },
			"Sizes[1] holds -32"},
	} {
		err := c.new()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	retinaPool.AnchorGenerator = four(retina.AnchorGenerator)
	if _, err := NewRetinaNet(retinaPool, tensor.Float32, rng); err != nil {
		t.Errorf("RetinaNet with LastLevelMaxPool and 4 anchor levels: %v", err)
	}
}
