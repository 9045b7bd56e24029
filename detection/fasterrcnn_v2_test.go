package detection

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// rcnnV2LossGolden is a case of
// testdata/detection/fasterrcnn_v2_losses.json.gz
// (scripts/gen_detection_fasterrcnn_v2.py): the tiny v2 Faster R-CNN in
// train mode (BatchNorm2d with batch statistics in the body, the FPN and
// the box head), its own training counts, the samples per image, and the
// running statistics after the run.
type rcnnV2LossGolden struct {
	rcnnLossGolden
	Running map[string]gradSum `json:"running"`
	Samples []int              `json:"box_samples"`
}

// v2Golden is fasterrcnn_v2.json.gz's first case (its checkpoint and
// structure).
func v2Golden(t *testing.T) rcnnGolden {
	for _, g := range loadRCNNGoldens(t) {
		if g.V2 != nil {
			return g
		}
	}
	t.Fatal("no v2 case in the Faster R-CNN goldens")
	return rcnnGolden{}
}

// TestFasterRCNNV2Keys: the v2 structure's weights are the torchvision
// checkpoint's keys, none missing or left over.
func TestFasterRCNNV2Keys(t *testing.T) {
	g := v2Golden(t)
	_, keys, err := LoadFasterRCNN(filepath.Join("..", "testdata", "detection", g.Checkpoint), g.config(), tensor.Float64, LoadOptions{ConvertDtype: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys.Missing)+len(keys.Unexpected) > 0 {
		t.Fatalf("missing %v, unexpected %v", keys.Missing, keys.Unexpected)
	}
}

// TestFasterRCNNV2LossGolden compares the v2 model's four losses, the
// total's gradient w.r.t. every trainable weight and every norm's running
// statistics after the run with torchvision's in train mode: the box
// head's BatchNorm2d over the sampled RoIs only (the "few" case samples
// fewer than BatchSizePerImage, the padded rows masked out), the
// samplers replaying torchvision's draws; float64 to 1e-10 (loss_objectness
// to float32's rounding), float32 losses to 1e-4. Each case starts from
// the checkpoint's statistics.
func TestFasterRCNNV2LossGolden(t *testing.T) {
	cases := golden.Load[rcnnV2LossGolden](t, filepath.Join("..", "testdata", "detection", "fasterrcnn_v2_losses.json.gz"))
	g0 := v2Golden(t)
	if c := cases[len(cases)-1]; c.Case != "few" || !slices.ContainsFunc(c.Samples, func(n int) bool { return n < c.BoxBatch }) {
		t.Fatalf("the last case %s samples %v of %d: no padded rows", c.Case, c.Samples, c.BoxBatch)
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", dt, c.Case), func(t *testing.T) {
				m := c.model(t, g0, dt, c.replay(t))
				defer m.Close()
				il, err := m.Config.Transform.Transform(c.lossImages(dt))
				if err != nil {
					t.Fatal(err)
				}
				x, in, losses, grads, vm := lossGraphOf(t, m, il.Tensors.Shape(), dt)
				defer vm.Close()
				if err := gorgonia.Let(x, il.Tensors); err != nil {
					t.Fatal(err)
				}
				if err := in.SetImageSizes(il.ImageSizes); err != nil {
					t.Fatal(err)
				}
				if err := in.Set(c.targets(t)); err != nil {
					t.Fatal(err)
				}
				if err := ad.RunAll(vm); err != nil {
					t.Fatal(err)
				}
				// torchvision computes loss_objectness in float32 (see
				// checkLosses): a few of its ulps.
				rtol := c.checkLosses(t, losses, dt, 1e-6)
				if dt != tensor.Float64 {
					return
				}
				gs := make([][]float64, len(grads))
				for i, n := range grads {
					gs[i] = graphtest.Floats(n.Value())
				}
				checkGrads(t, c.lossGolden, m.Weights().Params.Names(), gs, rtol)
				// The running statistics, summarised as the gradients are.
				running := c.lossGolden
				running.Grads = c.Running
				var names []string
				var vals [][]float64
				for k := range c.Running {
					v, err := m.Weights().Value(k)
					if err != nil {
						t.Fatal(err)
					}
					names = append(names, k)
					vals = append(vals, graphtest.Floats(v))
				}
				checkGrads(t, running, names, vals, 1e-12)
			})
		}
	}
}
