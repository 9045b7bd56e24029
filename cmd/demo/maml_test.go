package main

import (
	"bytes"
	"errors"
	"flag"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var (
	mnistOnce             sync.Once
	mnistTrain, mnistTest *scenes.Digits
	mnistErr              error
)

// loadMNIST reads the MNIST files once for all tests, through the module
// system as the demo does.
func loadMNIST(t *testing.T) (*scenes.Digits, *scenes.Digits) {
	t.Helper()
	mnistOnce.Do(func() {
		dir, _, err := scenes.FindMNIST("")
		if err != nil {
			mnistErr = err
			return
		}
		mnistTrain, mnistTest, mnistErr = scenes.LoadDigits(dir)
	})
	if mnistErr != nil {
		t.Fatal(mnistErr)
	}
	return mnistTrain, mnistTest
}

// tinyConfig is the demo at a size a test can afford.
func tinyConfig(steps int) Config {
	c := defaultConfig()
	c.Steps = steps
	c.MetaBatch = 3
	c.EvalTasks = 20
	c.Ways, c.Shots, c.Queries = 2, 2, 2
	c.InnerLR, c.MetaLR = 0.4, 0.02
	c.Scene = scenes.Opts{Canvas: 32, PerCanvas: 3, MinSize: 14, MaxSize: 18}
	c.Arch = Arch{Ways: 2, Canvas: 32, Feat: 3, Crop: 6, Deform: 6}
	return c
}

// TestMAMLPipeline runs the demo's whole pipeline at a tiny size, both
// variants: the second-order meta-gradient must agree with finite
// differences of the MAML objective, meta-training must lower the loss,
// and the figure must be written.
func TestMAMLPipeline(t *testing.T) {
	train, test := loadMNIST(t)
	steps := 60
	if testing.Short() {
		steps = 20
	}
	cfg := tinyConfig(steps)
	dir := filepath.Join(t.TempDir(), "nested", "out")
	var buf bytes.Buffer
	res, err := RunMAML(cfg, RunOpts{Out: dir, Variants: []Variant{SecondOrder, FirstOrder}, Train: train, Test: test}, &buf)
	if err != nil {
		t.Fatalf("RunMAML: %v\noutput:\n%s", err, buf.String())
	}
	out := buf.String()

	// The meta-gradient against finite differences, direction by direction.
	if len(res.Check.Rows) != numParams+1 {
		t.Fatalf("%d check rows, want %d", len(res.Check.Rows), numParams+1)
	}
	for _, r := range res.Check.Rows {
		if !(r.RelErr < 1e-6 || r.AbsErr < 1e-9) {
			t.Errorf("meta-gradient along %s: ad.Grad %.10g, %s difference %.10g, relative error %.1e", r.Name, r.Analytic, r.Scheme, r.Numeric, r.RelErr)
		}
		if r.Analytic == 0 {
			t.Errorf("meta-gradient along %s is exactly 0: the check would be vacuous", r.Name)
		}
	}
	// The first-order approximation must differ measurably somewhere: else
	// the second-order terms would not be tested at all.
	var foErr float64
	for _, r := range res.Check.Rows {
		foErr = math.Max(foErr, r.FORelErr)
	}
	if !(foErr > 1e-3) {
		t.Errorf("FOMAML's gradient agrees with the second-order one to %.1e: the second-order part is not exercised", foErr)
	}
	if !res.Check.Pass || !strings.Contains(out, "absolute for tiny derivatives): OK") {
		t.Errorf("output does not report the check as OK:\n%s", out)
	}

	// The loss goes down: the meta-loss of the last steps below that of the
	// first ones, and the held-out query loss after below before.
	for i, v := range []Variant{SecondOrder, FirstOrder} {
		logs := res.Logs[i]
		if len(logs) != steps {
			t.Fatalf("%s: %d logs, want %d", v, len(logs), steps)
		}
		n := steps / 3
		var first, last float64
		for j := 0; j < n; j++ {
			first += logs[j].MetaLoss / float64(n)
			last += logs[steps-n+j].MetaLoss / float64(n)
		}
		t.Logf("%s: meta-loss %.4f (first %d steps) -> %.4f (last %d); held-out query loss %.4f -> %.4f, accuracy %.3f -> %.3f",
			v, first, n, last, n, res.Before.Loss, res.After[i].Loss, res.Before.Acc, res.After[i].Acc)
		// The meta-loss is measured on fresh tasks at every step, so it is
		// noisy: the second-order variant must gain a clear margin.
		if v == SecondOrder && !(last < first-0.02) {
			t.Errorf("%s: meta-loss did not go down: %.4f over the first %d steps, %.4f over the last %d", v, first, n, last, n)
		}
		if !(res.After[i].Loss < res.Before.Loss) {
			t.Errorf("%s: held-out query loss did not go down: %.4f -> %.4f", v, res.Before.Loss, res.After[i].Loss)
		}
	}

	// The box refinement through RoIAlign w.r.t. the boxes: the gradient
	// steps on the classifier's log-probability must raise the confidence of
	// most jittered boxes.
	if res.Refine == nil || len(res.Refine.Boxes) != cfg.Ways*cfg.Queries {
		t.Fatalf("refinement: %+v, want %d boxes", res.Refine, cfg.Ways*cfg.Queries)
	}
	up := 0
	for k, b := range res.Refine.Boxes {
		t.Logf("box %d: IoU %.3f -> %.3f, confidence %.3f -> %.3f", k+1, b.IoUBefore, b.IoUAfter, b.ConfBefore, b.ConfAfter)
		if b.Before == b.True || b.After == b.Before {
			t.Errorf("box %d: jittered %v, refined %v, true %v: not jittered or not moved", k+1, b.Before, b.After, b.True)
		}
		if b.ConfAfter > b.ConfBefore {
			up++
		}
	}
	if 2*up <= len(res.Refine.Boxes) {
		t.Errorf("refinement raised the confidence of only %d of %d boxes", up, len(res.Refine.Boxes))
	}

	// The picture.
	f, err := os.Open(res.PNGPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding %s: %v", res.PNGPath, err)
	}
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 300 {
		t.Errorf("PNG is only %dx%d", b.Dx(), b.Dy())
	}
	for _, want := range []string{"1. Held-out accuracy before", "2. Meta-training", "3. Held-out accuracy", "4. Finite-difference check", "5. Box refinement", "6. Wrote"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestMAMLDeterministic: two runs with one seed print the same numbers.
func TestMAMLDeterministic(t *testing.T) {
	train, test := loadMNIST(t)
	cfg := tinyConfig(3)
	cfg.EvalTasks = 4
	run := func(seed uint64) *MAMLResult {
		c := cfg
		c.Seed = seed
		res, err := RunMAML(c, RunOpts{Variants: []Variant{SecondOrder, FirstOrder}, Train: train, Test: test}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, c := run(5), run(5), run(6)
	strip := func(r *MAMLResult) [][]StepLog {
		out := make([][]StepLog, len(r.Logs))
		for i, l := range r.Logs {
			for _, s := range l {
				s.StepTime, s.TotalTime = 0, 0
				out[i] = append(out[i], s)
			}
		}
		return out
	}
	if !reflect.DeepEqual(strip(a), strip(b)) || a.Before != b.Before || !reflect.DeepEqual(a.After, b.After) || !reflect.DeepEqual(a.Check, b.Check) {
		t.Errorf("two runs with seed 5 differ")
	}
	if reflect.DeepEqual(strip(a), strip(c)) {
		t.Errorf("seeds 5 and 6 give the same run")
	}
}

// TestModelDerivatives checks the model's loss at orders 1 and 2 w.r.t.
// every parameter against finite differences (graphtest, which also
// catches the TapeMachine overwriting an input), and the TapeMachine
// against the LispMachine at order 1. Order 2 of the loss is what the
// meta-gradient differentiates.
func TestModelDerivatives(t *testing.T) {
	train, _ := loadMNIST(t)
	a := Arch{Ways: 2, Canvas: 22, Feat: 2, Crop: 4, Deform: 2}
	so := scenes.Opts{Canvas: 22, PerCanvas: 2, MinSize: 10, MaxSize: 12}
	rng := rand.New(rand.NewPCG(3, 4))
	task, err := scenes.SampleTask(rng, train, []int{3, 5}, 2, 1, 1, so)
	if err != nil {
		t.Fatal(err)
	}
	p := a.InitParams(rng)
	// Larger offsets than at the start, so the check sees the offset
	// derivatives away from integer sample positions.
	for j := range p[pOffB] {
		p[pOffB][j] = 0.6 * rng.NormFloat64()
	}
	shapes := a.ParamShapes()
	var inputs []*tensor.Dense
	for i, s := range shapes {
		inputs = append(inputs, tensor.New(tensor.WithShape(s...), tensor.WithBacking(p[i])))
	}
	sc := task.Support
	inputs = append(inputs, sc.Canvas, sc.Boxes)
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		// The class-index target is no float input of graphtest's: a
		// named node of the graph f builds.
		target := gorgonia.NewVector(in[0].Graph(), tensor.Int, gorgonia.WithShape(len(sc.Labels)), gorgonia.WithName("target"),
			gorgonia.WithValue(sc.Target.Clone()))
		fw, err := a.BuildModel(in[:numParams], in[numParams], in[numParams+1], target)
		if err != nil {
			return nil, err
		}
		return fw.Loss, nil
	}
	wrt := make([]int, numParams)
	for i := range wrt {
		wrt[i] = i
	}
	order := 2
	if testing.Short() {
		order = 1
	}
	o := graphtest.Options{Order: order, Wrt: wrt, Seed: 11, RTol: 1e-5, ATol: 1e-8}
	if err := graphtest.Check(f, inputs, o); err != nil {
		t.Error(err)
	}
	if err := graphtest.CheckVMs(f, inputs, graphtest.Options{Wrt: wrt, Seed: 11}); err != nil {
		t.Error(err)
	}
}

// TestMetaGraphRepeatable runs the compiled second-order graph at θ, at
// another θ, and at θ again: the two runs at θ must agree bit for bit (the
// TapeMachine must not overwrite parameters or scenes in place), and agree
// with the first-order graphs on the losses; the support loss must be the
// cross-entropy of the support logits at the scene's labels.
func TestMetaGraphRepeatable(t *testing.T) {
	cfg, l, rng, task := tinyLearnerAndTask(t, 8, 9)
	defer l.Close()
	p := cfg.Arch.InitParams(rng)
	// All runs on one replica of the graphs: the same machines.
	var a, b *MetaValues
	var s *LossGradValues
	err := l.one(func(g *taskGraphs) error {
		var err error
		if a, err = g.meta.Eval(p, task); err != nil {
			return err
		}
		if _, err := g.meta.Eval(p.AddScaled(0.3, a.MetaGrad), task); err != nil {
			return err
		}
		if b, err = g.meta.Eval(p, task); err != nil {
			return err
		}
		s, err = g.sup.Eval(p, task.Support)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("second run at the same θ differs: query loss %v vs %v", a.QueryLoss, b.QueryLoss)
	}
	obj, _, err := l.Objective(p, task)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(obj-a.QueryLoss) > 1e-12*math.Abs(obj) {
		t.Errorf("query loss at θ': second-order graph %.15g, first-order graphs %.15g", a.QueryLoss, obj)
	}
	if s.Loss != a.SupportLoss || !reflect.DeepEqual(s.Grad, a.InnerGrad) {
		t.Errorf("support loss or inner gradient differ between the graphs")
	}
	// The loss is the mean of log Σ exp(z) − z[label] over the boxes: the
	// scene's labels reach nn.CrossEntropy as its class indices.
	ways := cfg.Arch.Ways
	var want float64
	for k, label := range task.Support.Labels {
		row := s.Logits[k*ways : (k+1)*ways]
		var sum float64
		for _, z := range row {
			sum += math.Exp(z)
		}
		want += (math.Log(sum) - row[label]) / float64(len(task.Support.Labels))
	}
	if math.Abs(s.Loss-want) > 1e-12*math.Abs(want) {
		t.Errorf("support loss %.15g, want the cross-entropy of its logits %.15g", s.Loss, want)
	}
}

// TestFlags: defaults validate, -h is ErrHelp, class lists parse, bad
// values are refused.
func TestFlags(t *testing.T) {
	parse := func(args ...string) (*options, error) {
		fs := flag.NewFlagSet("demo", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return parseFlags(fs, args)
	}
	o, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.cfg.TrainClasses, []int{0, 1, 2, 3, 4, 5}) || !reflect.DeepEqual(o.cfg.TestClasses, []int{6, 7, 8, 9}) || !o.compare || o.firstOrder {
		t.Errorf("defaults: %+v", o)
	}
	if _, err := parse("-h"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h gives %v", err)
	}
	o, err = parse("-ways", "2", "-train-digits", "1,3,5", "-test-digits", "79", "-first-order", "-compare=false", "-seed", "9")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.cfg.TrainClasses, []int{1, 3, 5}) || !reflect.DeepEqual(o.cfg.TestClasses, []int{7, 9}) || !o.firstOrder || o.compare || o.cfg.Seed != 9 || o.cfg.Arch.Ways != 2 {
		t.Errorf("parsed %+v", o)
	}
	for _, bad := range [][]string{
		{"-ways", "5"}, {"-ways", "1"}, {"-shots", "0"}, {"-train-digits", "0-a"}, {"-test-digits", "77"},
		{"-digit-min", "60"}, {"-crop", "1"}, {"-meta-lr", "0"}, {"extra"},
	} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for s, want := range map[string]string{"0-5": "0-5", "6789": "6-9", "0,2,4": "0,2,4", "1-2,5": "1,2,5"} {
		cs, err := parseClasses(s)
		if err != nil || classString(cs) != want {
			t.Errorf("parseClasses(%q) = %v, %v; classString %q, want %q", s, cs, err, classString(cs), want)
		}
	}
}

// TestMetaGradientNearKinks puts every support sampling point 3e-7 past a
// pixel boundary (zero offset weights, offset biases 3e-7), so that the
// default finite-difference step would straddle the kinks of bilinear
// sampling: the check must notice, difference on a smooth side or with a
// smaller step, and still agree with ad.Grad.
func TestMetaGradientNearKinks(t *testing.T) {
	cfg, l, rng, task := tinyLearnerAndTask(t, 4, 4)
	defer l.Close()
	p := cfg.Arch.InitParams(rng)
	clear(p[pOffW])
	for j := range p[pOffB] {
		p[pOffB][j] = 3e-7
	}
	chk, err := l.CheckMetaGradient(p, task, rand.New(rand.NewPCG(1, 1)), 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	adjusted := false
	for _, r := range chk.Rows {
		t.Logf("%-16s %s h=%g: ad.Grad %+.10e, difference %+.10e, rel. err %.1e", r.Name, r.Scheme, r.Step, r.Analytic, r.Numeric, r.RelErr)
		if r.Name == paramNames[pOffB] && r.Scheme == "central" && r.Step == 1e-5 {
			t.Errorf("the offset-bias direction straddles kinks at h = 1e-5, but the check took the central difference")
		}
		adjusted = adjusted || r.Scheme != "central" || r.Step != 1e-5
	}
	if !adjusted || !chk.Pass {
		t.Errorf("check near kinks: adjusted %t, pass %t, max relative error %.1e", adjusted, chk.Pass, chk.MaxRelErr)
	}
}

// tinyLearnerAndTask builds the learner of tinyConfig(0) and samples one
// training task with the seeds given; the caller closes the learner.
func tinyLearnerAndTask(t *testing.T, seed1, seed2 uint64) (Config, *Learner, *rand.Rand, *scenes.Task) {
	t.Helper()
	train, _ := loadMNIST(t)
	cfg := tinyConfig(0)
	cfg.Arch.Ways, cfg.Arch.Canvas = cfg.Ways, cfg.Scene.Canvas
	l, err := NewLearner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed1, seed2))
	task, err := scenes.SampleTask(rng, train, cfg.TrainClasses, cfg.Ways, cfg.Shots, cfg.Queries, cfg.Scene)
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	return cfg, l, rng, task
}

// TestConcurrentTasksBitwise runs two meta-steps of both variants, the
// held-out evaluation and the finite-difference check with the tasks one
// after another (one replica of the graphs) and side by side (four), at
// GOMAXPROCS 1, 2 and 4: every number must be the same bit for bit.
func TestConcurrentTasksBitwise(t *testing.T) {
	train, test := loadMNIST(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	cfg := tinyConfig(2)
	cfg.MetaBatch = 4
	cfg.Arch.Ways, cfg.Arch.Canvas = cfg.Ways, cfg.Scene.Canvas
	type outcome struct {
		params []Params
		logs   [][]StepLog
		eval   EvalResult
		check  *FDCheck
	}
	run := func(replicas int) outcome {
		t.Helper()
		l, err := newLearner(cfg, replicas)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if l.graphs.Len() != replicas {
			t.Fatalf("newLearner(cfg, %d) built %d replicas", replicas, l.graphs.Len())
		}
		p0 := cfg.Arch.InitParams(rand.New(rand.NewPCG(7, 7)))
		var o outcome
		o.params, o.logs, err = l.MetaTrain([]Variant{SecondOrder, FirstOrder}, p0, train, rand.New(rand.NewPCG(8, 8)), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range o.logs {
			for j := range o.logs[i] {
				o.logs[i][j].StepTime, o.logs[i][j].TotalTime = 0, 0
			}
		}
		erng := rand.New(rand.NewPCG(9, 9))
		held := make([]*scenes.Task, 6)
		for i := range held {
			if held[i], err = scenes.SampleTask(erng, test, cfg.TestClasses, cfg.Ways, cfg.Shots, cfg.Queries, cfg.Scene); err != nil {
				t.Fatal(err)
			}
		}
		if o.eval, err = l.Evaluate(o.params[0], held); err != nil {
			t.Fatal(err)
		}
		if o.check, err = l.CheckMetaGradient(o.params[0], held[0], rand.New(rand.NewPCG(10, 10)), cfg.FDStep); err != nil {
			t.Fatal(err)
		}
		return o
	}
	bits := func(o outcome) []uint64 {
		var b []uint64
		for _, p := range o.params {
			for _, x := range p {
				for _, v := range x {
					b = append(b, math.Float64bits(v))
				}
			}
		}
		for _, l := range o.logs {
			for _, s := range l {
				b = append(b, math.Float64bits(s.MetaLoss), math.Float64bits(s.QueryAcc), math.Float64bits(s.GradNorm))
			}
		}
		b = append(b, math.Float64bits(o.eval.Acc), math.Float64bits(o.eval.AccCI95), math.Float64bits(o.eval.Loss))
		for _, r := range o.check.Rows {
			b = append(b, math.Float64bits(r.Step), math.Float64bits(r.Analytic), math.Float64bits(r.Numeric), math.Float64bits(r.FirstOrder))
		}
		return b
	}
	runtime.GOMAXPROCS(1)
	ref := run(1)
	want := bits(ref)
	if len(ref.logs) != 2 || len(ref.logs[0]) != 2 || len(ref.check.Rows) != numParams+1 {
		t.Fatalf("reference run: %d variants, %d steps, %d check rows", len(ref.logs), len(ref.logs[0]), len(ref.check.Rows))
	}
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		for _, replicas := range []int{1, 4} {
			got := run(replicas)
			if b := bits(got); !slices.Equal(b, want) {
				i := 0
				for i < min(len(b), len(want)) && b[i] == want[i] {
					i++
				}
				t.Errorf("GOMAXPROCS %d, %d replicas: value %d of %d differs from one replica at GOMAXPROCS 1", procs, replicas, i, len(want))
			}
			if !reflect.DeepEqual(got.logs, ref.logs) {
				t.Errorf("GOMAXPROCS %d, %d replicas: logs %v, want %v", procs, replicas, got.logs, ref.logs)
			}
		}
	}
}
