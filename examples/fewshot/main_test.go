package main

import (
	"flag"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"gorgonia.org/tensor"
)

// tinyConfig is the FCOS example at a size a test can afford.
func tinyConfig(dir string) Config { return tinyConfigFor(ModelFCOS, dir) }

// tinyConfigFor is the example of a model at a size a test can afford.
func tinyConfigFor(model, dir string) Config {
	c := defaultConfigFor(model)
	c.Steps, c.Every = 200, 100
	c.MetaSteps, c.MetaBatch = 3, 1
	c.FDDirections = 2
	c.Shots, c.Tasks, c.EvalQueries, c.AdaptSteps, c.AdaptLR = []int{1, 2}, 2, 2, 4, 0.05
	c.PNG = filepath.Join(dir, "fewshot.png")
	if model == ModelFasterRCNN {
		// Its support loss, on sampled anchors and proposals, is noisy
		// from step to step: 8 steps at its default rate lower it
		// clearly.
		c.AdaptSteps, c.AdaptLR = 8, 0.03
	}
	return c
}

// TestRunTiny runs the whole example at a tiny size: pre-training lowers
// the loss and detects base digits, the second-order meta-gradient agrees
// with central differences and differs from the first-order one, every
// method's fine-tuning lowers the support loss, the AP50 values are
// COCO's (in [0, 1]), and the figure is a PNG of a row per method.
func TestRunTiny(t *testing.T) { testRunTiny(t, tinyConfig(t.TempDir())) }

// TestRunTinyFasterRCNN is TestRunTiny with -model fasterrcnn: its
// labels are the digits + 1 in the losses (Set refuses 0, the
// background) and the digits again in the detections (the base AP50),
// and its meta-gradient check runs without the RPN's proposals.
func TestRunTinyFasterRCNN(t *testing.T) {
	testRunTiny(t, tinyConfigFor(ModelFasterRCNN, t.TempDir()))
}

// testRunTiny is TestRunTiny on c.
func testRunTiny(t *testing.T, c Config) {
	var lines []string
	r, err := Run(c, func(s string) { lines = append(lines, s) })
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(lines, "\n"))
	}
	log := strings.Join(lines, "\n")
	if !(r.PretrainLast < 0.9*r.PretrainFirst) {
		t.Errorf("pre-training loss %.3f → %.3f, want a drop of 10%%", r.PretrainFirst, r.PretrainLast)
	}
	if !(r.BaseAP50 > 0.05 && r.BaseAP50 <= 1) {
		t.Errorf("base AP50 %.3f after 200 steps, want in (0.05, 1]", r.BaseAP50)
	}
	if r.FD == nil || len(r.FD.Analytic) != 2 || len(r.FD.FirstOrder) != 2 {
		t.Fatalf("meta-gradient check %+v", r.FD)
	}
	if r.FD.MaxRelErr > 1e-4 {
		t.Errorf("meta-gradient vs central differences: relative error %.2g\n%s", r.FD.MaxRelErr, r.FD)
	}
	differs := false
	for i, a := range r.FD.Analytic {
		differs = differs || relErr(a, r.FD.FirstOrder[i]) > 0.01
	}
	if !differs {
		t.Errorf("first- and second-order meta-gradients agree along every direction:\n%s", r.FD)
	}
	want := []string{"fine-tune", "FO-MAML", "MAML"}
	if strings.Join(r.Methods, ",") != strings.Join(want, ",") || len(r.Rows) != 2 {
		t.Fatalf("methods %v, %d rows", r.Methods, len(r.Rows))
	}
	// Faster R-CNN's support loss, on sampled anchors and proposals, is
	// noisy from step to step: a fine-tuning may end above its start on a
	// tiny task, so its losses must fall on average, by a tenth.
	var before, after float64
	for _, row := range r.Rows {
		for _, v := range append([]float64{row.Before}, row.After...) {
			if math.IsNaN(v) || v < 0 || v > 1 {
				t.Errorf("K=%d: AP50 %v outside [0, 1]", row.Shots, v)
			}
		}
		for j := range row.After {
			before, after = before+row.LossBefore[j], after+row.LossAfter[j]
			if math.IsNaN(row.LossAfter[j]) || math.IsInf(row.LossAfter[j], 0) {
				t.Errorf("K=%d %s: support loss %.4f → %.4f", row.Shots, r.Methods[j], row.LossBefore[j], row.LossAfter[j])
			} else if c.Model != ModelFasterRCNN && !(row.LossAfter[j] < row.LossBefore[j]) {
				t.Errorf("K=%d %s: support loss %.4f → %.4f, want a decrease", row.Shots, r.Methods[j], row.LossBefore[j], row.LossAfter[j])
			}
		}
	}
	if c.Model == ModelFasterRCNN && !(after < 0.9*before) {
		t.Errorf("support losses %.4f → %.4f in all, want a drop of 10%%", before, after)
	}
	want = []string{"pre-train step  200/200", "FO-MAML step", "MAML    step", "central difference", "AP50 on the novel digits"}
	if c.Model == ModelFasterRCNN {
		want = append(want, "Faster R-CNN, ResNet stem", "the check's graphs keep none")
	}
	for _, s := range want {
		if !strings.Contains(log, s) {
			t.Errorf("progress lines lack %q:\n%s", s, log)
		}
	}
	f, err := os.Open(r.Figure)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// K = 2 of 4 digits, 4 to a canvas: 2 query canvases; 4 rows.
	cell := c.Scene.Canvas*zoom + pad
	if b := img.Bounds(); b.Dx() != 2*cell+pad || b.Dy() != 4*cell+pad {
		t.Errorf("figure %v, want %dx%d", b, 2*cell+pad, 4*cell+pad)
	}
}

// TestFlags: the defaults validate, lists parse, bad values are refused.
func TestFlags(t *testing.T) {
	parse := func(args ...string) (Config, error) {
		fs := flag.NewFlagSet("fewshot", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return parseFlags(fs, args)
	}
	c, err := parse()
	if err != nil || len(c.Shots) != 3 || c.Shots[2] != 5 {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	if c, err := parse("-shots", "3, 10", "-pretrain", "10"); err != nil || len(c.Shots) != 2 || c.Shots[1] != 10 || c.Steps != 10 {
		t.Errorf("-shots 3,10: %v %v", c.Shots, err)
	}
	if c.Model != ModelFCOS {
		t.Errorf("default -model %q", c.Model)
	}
	// -model fasterrcnn takes its own defaults where no flag is given.
	want := defaultConfigFor(ModelFasterRCNN)
	if c, err := parse("-model", "fasterrcnn"); err != nil || c.Model != ModelFasterRCNN || c.Steps != want.Steps || c.MetaSteps != want.MetaSteps ||
		c.InnerLR != want.InnerLR || c.AdaptSteps != want.AdaptSteps || c.AdaptLR != want.AdaptLR || c.PNG != want.PNG {
		t.Errorf("-model fasterrcnn: %+v, %v; want %+v", c, err, want)
	}
	if c, err := parse("-pretrain", "7", "-model", "fasterrcnn", "-adapt-lr", "0.2"); err != nil || c.Steps != 7 || c.AdaptLR != 0.2 || c.MetaSteps != want.MetaSteps {
		t.Errorf("-model fasterrcnn with flags: %+v, %v", c, err)
	}
	for _, bad := range [][]string{{"-shots", "0"}, {"-shots", "x"}, {"-canvas", "16"}, {"-meta-batch", "0"}, {"-digit-max", "80"}, {"-model", "retinanet"}} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestFirstOrderMetaGradient: first-order MAML's meta-gradient is the
// plain gradient of the query loss at the weights one SGD step on the
// support loss gave (the inner gradient taken as a constant), computed
// here by two runs of a plain training graph. Faster R-CNN's samplers
// replay one draw in each graph (replay), so both graphs sample alike.
func TestFirstOrderMetaGradient(t *testing.T) {
	for _, model := range []string{ModelFCOS, ModelFasterRCNN} {
		t.Run(model, func(t *testing.T) { testFirstOrderMetaGradient(t, model) })
	}
}

func testFirstOrderMetaGradient(t *testing.T, model string) {
	c, m, train, _, rng := tinyDetector(t, model)
	defer m.Close()
	task, err := sampleMetaTask(c, rng, train)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := NewMetaGraph(c, m, true)
	if err != nil {
		t.Fatal(err)
	}
	defer mg.Close()
	mg.replay(9)
	q, s, err := mg.Run(task)
	if err != nil {
		t.Fatal(err)
	}
	var fo [][]float64
	for _, g := range mg.Grads() {
		fo = append(fo, append([]float64(nil), g.Data().([]float64)...))
	}
	lg, err := NewLossGraph(m, task.support.Canvas.Shape()[0], c.Scene.Canvas, c.Scene.PerCanvas)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	lg.replay(9)
	ls, err := lg.Run(task.support, novelLabel(task.support))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range m.Weights().Params.Values() {
		if err := addScaled(p, lg.Grads()[i], -c.InnerLR); err != nil {
			t.Fatal(err)
		}
	}
	lg.replay(9)
	lq, err := lg.Run(task.query, novelLabel(task.query))
	if err != nil {
		t.Fatal(err)
	}
	if relErr(ls, s) > 1e-12 || relErr(lq, q) > 1e-12 {
		t.Errorf("MAML graph: support %.15g, query %.15g; plain graph: %.15g, %.15g", s, q, ls, lq)
	}
	names := m.Weights().Params.Names()
	for i, g := range lg.Grads() {
		for j, v := range g.Data().([]float64) {
			if math.Abs(v-fo[i][j]) > 1e-9*(1e-8+math.Abs(v)) {
				t.Fatalf("%s[%d]: first-order meta-gradient %.15g, query gradient at the adapted weights %.15g", names[i], j, fo[i][j], v)
			}
		}
	}
}

// TestFasterRCNNDigits: Faster R-CNN's detections come back labelled by
// digit (its classes 1..10 less one), and its ground truth is refused
// without the offset (class 0 is its background).
func TestFasterRCNNDigits(t *testing.T) {
	c, m, _, test, rng := tinyDetector(t, ModelFasterRCNN)
	defer m.Close()
	if m.Offset != 1 {
		t.Fatalf("Faster R-CNN's offset %d, want 1", m.Offset)
	}
	sc, err := scenes.SampleScene(rng, test, []int{0}, 4, c.Scene)
	if err != nil {
		t.Fatal(err)
	}
	dets, gts, err := Detect(m, sc)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, d := range dets {
		for _, l := range d.Labels {
			if l < 0 || l >= NumClasses {
				t.Errorf("detection labelled %d, want a digit", l)
			}
			seen[l] = true
		}
	}
	// An untrained detector scores its 11 classes alike (≈ 1/11, above
	// the 0.05 threshold): digit 0 (class 1) shows up, the background not.
	if !seen[0] {
		t.Errorf("no detection of digit 0 among labels %v", seen)
	}
	for _, g := range gts {
		for _, l := range g.Labels {
			if l != 0 {
				t.Errorf("ground truth labelled %d, want the digit 0", l)
			}
		}
	}
	lg, err := NewLossGraph(m, 1, c.Scene.Canvas, c.Scene.PerCanvas)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	if _, err := lg.Run(sc, byDigit(sc)); err != nil {
		t.Errorf("digit 0 as class 1: %v", err)
	}
	m.Offset = 0
	if _, err := lg.Run(sc, byDigit(sc)); err == nil || !strings.Contains(err.Error(), "background") {
		t.Errorf("digit 0 as class 0: %v, want Set's refusal", err)
	}
}

// tinyDetector is a float64 detector of tinyConfigFor(model) drawn from
// rng (PCG 5, 6, returned for the test's further draws), with its config
// and the MNIST digits' training and test splits.
func tinyDetector(t *testing.T, model string) (Config, *Model, *scenes.Digits, *scenes.Digits, *rand.Rand) {
	t.Helper()
	c := tinyConfigFor(model, t.TempDir())
	dir, _, err := scenes.FindMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	train, test, err := scenes.LoadDigits(dir)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	m, err := NewDetector(c, tensor.Float64, rng)
	if err != nil {
		t.Fatal(err)
	}
	return c, m, train, test, rng
}
