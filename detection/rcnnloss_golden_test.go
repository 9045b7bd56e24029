package detection

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// rcnnLossGolden is a case of testdata/detection/fasterrcnn_losses.json.gz
// (scripts/gen_detection_fasterrcnn_losses.py): loss_golden's images and
// ground truth on the tiny Faster R-CNN, torchvision's samplers' draws,
// its losses (float64 and float32) and the float64 gradient summaries.
type rcnnLossGolden struct {
	lossGolden
	PreNMS   int                `json:"pre_nms_top_n"`
	PostNMS  int                `json:"post_nms_top_n"`
	BoxBatch int                `json:"box_batch_size_per_image"`
	Draws    map[string][][]int `json:"draws"`
	Losses32 map[string]float64 `json:"losses_float32"`
}

// replay is a Randperm giving the recorded draws in order (the RPN's,
// then the box head's); a draw of another n fails the test.
func (c rcnnLossGolden) replay(t *testing.T) func(n int) []int {
	var seq [][]int
	seq = append(append(seq, c.Draws["rpn"]...), c.Draws["roi"]...)
	return func(n int) []int {
		if len(seq) == 0 {
			t.Errorf("%s: more draws than torchvision's", c.Case)
			return make([]int, n)
		}
		p := seq[0]
		seq = seq[1:]
		if len(p) != n {
			t.Errorf("%s: randperm(%d), torchvision drew randperm(%d)", c.Case, n, len(p))
			out := make([]int, n)
			for i := range out {
				out[i] = i
			}
			return out
		}
		return p
	}
}

// TestFasterRCNNLossGolden compares the four losses and the total's
// gradient w.r.t. every trainable weight with torchvision's for batches
// of 0, 1 and many boxes, the samplers replaying torchvision's draws:
// float64 to 1e-10 (loss_objectness to float32's rounding, in which
// torchvision returns it), float32 losses to 1e-4; every case on one
// graph, run after run.
func TestFasterRCNNLossGolden(t *testing.T) {
	cases := golden.Load[rcnnLossGolden](t, filepath.Join("..", "testdata", "detection", "fasterrcnn_losses.json.gz"))
	g0 := loadRCNNGoldens(t)[0]
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			var draw func(int) []int
			m := cases[0].model(t, g0, dt, func(n int) []int { return draw(n) })
			defer m.Close()
			cfg := m.Config
			il, err := cfg.Transform.Transform(cases[0].lossImages(dt))
			if err != nil {
				t.Fatal(err)
			}
			x, in, losses, grads, vm := lossGraphOf(t, m, il.Tensors.Shape(), dt)
			defer vm.Close()
			for _, c := range cases {
				draw = c.replay(t)
				il, err := cfg.Transform.Transform(c.lossImages(dt))
				if err != nil {
					t.Fatal(err)
				}
				if err := gorgonia.Let(x, il.Tensors); err != nil {
					t.Fatal(err)
				}
				if err := in.SetImageSizes(il.ImageSizes); err != nil {
					t.Fatal(err)
				}
				if err := in.Set(c.targets(t)); err != nil {
					t.Fatal(err)
				}
				vm.Reset()
				if err := ad.RunAll(vm); err != nil {
					t.Fatal(err)
				}
				rtol := c.checkLosses(t, losses, dt, 1e-7)
				if dt == tensor.Float64 {
					gs := make([][]float64, len(grads))
					for i, n := range grads {
						gs[i] = graphtest.Floats(n.Value())
					}
					checkGrads(t, c.lossGolden, m.Weights().Params.Names(), gs, rtol)
				}
			}
		})
	}
}

// checkLosses compares the four losses' values with the case's
// torchvision losses of dt: float64 to 1e-10 (loss_objectness to
// objTol), float32 to 1e-4; it returns the float64 or float32 tolerance.
// torchvision's RPN labels are float32, and binary_cross_entropy_with_logits
// of float64 logits against them returns float32: loss_objectness is
// rounded there (its gradient is float64's).
func (c rcnnLossGolden) checkLosses(t *testing.T, losses *Losses, dt tensor.Dtype, objTol float64) float64 {
	t.Helper()
	want, rtol := c.Losses, 1e-10
	if dt == tensor.Float32 {
		want, rtol = c.Losses32, 1e-4
	}
	got := map[string]float64{}
	for name, n := range map[string]*gorgonia.Node{"loss_classifier": losses.Classification,
		"loss_box_reg": losses.BboxRegression, "loss_objectness": losses.Objectness, "loss_rpn_box_reg": losses.RPNBoxReg} {
		got[name] = graphtest.Floats(n.Value())[0]
	}
	for k, w := range want {
		tol := rtol
		if k == "loss_objectness" && dt == tensor.Float64 {
			tol = objTol
		}
		if v, ok := got[k]; !ok || !(math.Abs(v-w) <= tol*math.Abs(w)) {
			t.Errorf("%s: %s = %.17g, torchvision %.17g", c.Case, k, v, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: losses %v, torchvision %v", c.Case, got, want)
	}
	return rtol
}

// lossGraphOf builds m's loss graph on an input x of shape s and dtype
// dt and, in float64, the total's gradients w.r.t. every trainable
// weight, and its TapeMachine (the caller closes it).
func lossGraphOf(t *testing.T, m *FasterRCNN, s tensor.Shape, dt tensor.Dtype) (*gorgonia.Node, *LossInputs, *Losses, gorgonia.Nodes, gorgonia.VM) {
	t.Helper()
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(s...), gorgonia.WithName("x"))
	in, losses, err := m.Loss(x)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := m.Weights().Params.Nodes(g)
	if err != nil {
		t.Fatal(err)
	}
	var grads gorgonia.Nodes
	if dt == tensor.Float64 {
		if grads, err = ad.Grad(losses.Total, ws...); err != nil {
			t.Fatal(err)
		}
	}
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		t.Fatal(err)
	}
	return x, in, losses, grads, vm
}

// model is the golden g0's model in dt, loaded from its checkpoint, with
// c's image size (no resizing), training counts and randperm.
func (c rcnnLossGolden) model(t *testing.T, g0 rcnnGolden, dt tensor.Dtype, randperm func(int) []int) *FasterRCNN {
	t.Helper()
	cfg := g0.config()
	cfg.Transform = NewGeneralizedRCNNTransform(float64(c.Height), float64(c.Width))
	cfg.RPN.PreNMSTopNTrain, cfg.RPN.PostNMSTopNTrain = c.PreNMS, c.PostNMS
	cfg.RoIHeads.BatchSizePerImage = c.BoxBatch
	cfg.Randperm = randperm
	m, _, err := LoadFasterRCNN(filepath.Join("..", "testdata", "detection", g0.Checkpoint), cfg, dt, LoadOptions{ConvertDtype: dt == tensor.Float64})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
