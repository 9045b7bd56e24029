package detection

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
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
		t.Skip("builds three ResNet-50 detectors")
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
