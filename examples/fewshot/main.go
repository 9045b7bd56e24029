// Command fewshot is few-shot object detection on MNIST digits pasted
// onto 64×64 canvases (datasets/mnist/scenes): torchvision's FCOS, or
// with -model fasterrcnn its Faster R-CNN, on a small ResNet-FPN (package
// detection, its training losses) is pre-trained to detect and classify
// the digits 0–5 (a class per digit; Faster R-CNN's class of digit d is
// d+1, its class 0 being the background), then adapted to detect the
// digits 6–9 from K = 1, 2, 5 examples of each (the support canvases of a
// task, from MNIST's test split) by
//
//	(a) fine-tuning the pre-trained detector (SGD on the support loss),
//	(b) the same fine-tuning from the weights first-order MAML learned,
//	(c) the same from the weights second-order MAML learned,
//
// each from the same pre-trained start, on the same tasks, and scored by
// COCO's AP50 (detection.Evaluate) on the tasks' query canvases.
// Meta-training (detection.NewMAMLTask, package meta) draws tasks from
// the base digits, giving 4 of them the novel labels 6–9 in random order,
// so that the weights learn to pick up new classes in a few SGD steps:
// one inner SGD step on the support scene, the query scene's loss at the
// adapted weights, and its gradient w.r.t. the weights before the step —
// for second-order MAML through the inner gradient, a second derivative
// through the whole detector, checked against central differences of the
// MAML objective along random directions. A PNG shows one task's query
// canvases (columns) before adaptation and after each method (rows), each
// object's best detection scoring ≥ 0.3 with its label (grey: a base
// digit; 6 red, 7 yellow, 8 green, 9 blue).
//
//	go run ./examples/fewshot                     # the default run, FCOS, ~3 min on 2 cores
//	go run ./examples/fewshot -model fasterrcnn   # Faster R-CNN, about 1.3 times as long
//	go run ./examples/fewshot -pretrain 6000 -meta-steps 1000 -tasks 50
//
// A default run gave (2 shared cores, 111–208 s; the check's relative
// errors 1.5e-7, 1.0e-7, 5.0e-8):
//
//	pre-trained: AP50 0.874 on base digits 0–5 (test split)
//	AP50 on the novel digits 6–9 (15 tasks a K; "before": the pre-trained detector unadapted)
//	K     before  fine-tune    FO-MAML       MAML
//	1      0.146      0.374      0.301      0.305
//	2      0.166      0.369      0.306      0.306
//	5      0.160      0.387      0.305      0.321
//
// At this size the meta-learned weights start the tasks at a lower
// support loss (0.99 against 1.96) and a higher AP50, but 20 fine-tuning
// steps from the pre-trained detector end higher; with the small inner
// step (0.02) first- and second-order MAML train alike. Larger inner steps
// (-inner-lr 0.05 or more) made first-order MAML diverge (its support loss
// at θ grew past 60) where second-order MAML did not.
//
// Faster R-CNN (fasterRCNNConfig: the same ResNet, stages 1–4 into a
// 32-channel FPN with a max-pooled level, anchors of 8 to 128 pixels, 300
// proposals a level before NMS and 100 after, a 64-wide box head on 64
// samples an image) has defaults of its own (defaultConfigFor): 1500
// pre-training and 150 meta-training steps, an inner step of 0.01, and 25
// fine-tuning steps at 0.03. A default run gave (2 shared cores, 141 s,
// where FCOS's took 111 s; the check's relative errors 9.0e-10, 3.8e-7,
// 8.9e-8):
//
//	pre-trained: AP50 0.979 on base digits 0–5 (test split)
//	AP50 on the novel digits 6–9 (15 tasks a K; "before": the pre-trained detector unadapted)
//	K     before  fine-tune    FO-MAML       MAML
//	1      0.000      0.135      0.286      0.291
//	2      0.000      0.249      0.289      0.308
//	5      0.000      0.260      0.326      0.334
//
// The pre-trained Faster R-CNN finds none of the novel digits (AP50 0.000,
// FCOS's 0.15), so fine-tuning starts from nothing, and both meta-learned
// starts end above it at every K, second-order MAML 0.005–0.02 ahead of
// first-order (within the noise of 15 tasks). The meta-learned starts score
// 0.27–0.37 before adaptation (boxes on every digit, the novel labels
// spread over them); 25 steps lower the support loss from both, and raise
// first-order MAML's AP50 but lower second-order MAML's. Its support loss,
// on sampled anchors and proposals, is noisy from step to step, and its
// training is less stable: first-order MAML diverged at FCOS's inner step
// 0.02 (its support loss at θ past 200), plain SGD on some tasks at a rate
// of 0.05 over 40 steps, and at 0.07 from every start but second-order
// MAML's. Its meta-gradient check keeps the proposals out: the derivatives
// treat them as constants (detached, as in torchvision), while the central
// differences of the whole objective see them move, which gave relative
// errors of 0.49, 0.77 and 1.1.
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"github.com/gops-dev/gops/detection"
	"gorgonia.org/tensor"
)

// Config is one run's settings (the flags).
type Config struct {
	Model string // ModelFCOS or ModelFasterRCNN
	Scene scenes.Opts
	Width int // the backbone's stem width
	Seed  uint64
	Data  string // MNIST folder; "" finds the GoMNIST module

	// Pre-training on the base digits.
	Steps, Batch, Warmup, Every int
	LR                          float64

	// Meta-training (first- and second-order MAML) on base-digit tasks.
	MetaSteps, MetaBatch, MetaShots, Queries, InnerSteps int
	InnerLR, MetaLR                                      float64
	FDDirections                                         int // directional derivatives checked

	// Evaluation on novel-digit tasks.
	Shots              []int
	Tasks, EvalQueries int
	AdaptSteps         int
	AdaptLR            float64
	PNG                string // "" draws no figure
}

// defaultConfig is the default run: a few minutes on 2 cores.
func defaultConfig() Config {
	return Config{
		Model: ModelFCOS,
		Scene: scenes.Opts{Canvas: 64, PerCanvas: 4, MinSize: 16, MaxSize: 24},
		Width: 8, Seed: 1,
		Steps: 2500, Batch: 4, Warmup: 100, Every: 500, LR: 0.02,
		MetaSteps: 300, MetaBatch: 4, MetaShots: 2, Queries: 2, InnerSteps: 1, InnerLR: 0.02, MetaLR: 0.001,
		FDDirections: 3,
		Shots:        []int{1, 2, 5}, Tasks: 15, EvalQueries: 4, AdaptSteps: 20, AdaptLR: 0.1,
		PNG: "fewshot.png",
	}
}

// defaultConfigFor is the default run of a model: defaultConfig for
// FCOS; for Faster R-CNN, whose steps cost more, fewer pre-training and
// meta-training steps (it learns the base digits faster), a smaller inner
// step (first-order MAML diverged at 0.02), and more fine-tuning steps at
// a lower rate (its plain SGD diverged on some tasks at 0.05 and above).
func defaultConfigFor(model string) Config {
	c := defaultConfig()
	c.Model = model
	if model == ModelFasterRCNN {
		c.Steps, c.MetaSteps, c.InnerLR, c.AdaptSteps, c.AdaptLR = 1500, 150, 0.01, 25, 0.03
		c.PNG = "fewshot_fasterrcnn.png"
	}
	return c
}

// parseFlags reads the flags into a Config: defaultConfigFor(-model)'s
// settings where a flag is not given.
func parseFlags(fs *flag.FlagSet, args []string) (Config, error) {
	c := defaultConfig()
	frcnn := defaultConfigFor(ModelFasterRCNN)
	alt := func(usage string, v any) string {
		return fmt.Sprintf("%s (%v for -model %s)", usage, v, ModelFasterRCNN)
	}
	shots := joinInts(c.Shots)
	fs.StringVar(&c.Model, "model", c.Model, "the detector: "+ModelFCOS+" or "+ModelFasterRCNN)
	fs.IntVar(&c.Scene.Canvas, "canvas", c.Scene.Canvas, "canvas side in pixels")
	fs.IntVar(&c.Scene.PerCanvas, "per-canvas", c.Scene.PerCanvas, "digits on a canvas, at most")
	fs.IntVar(&c.Scene.MinSize, "digit-min", c.Scene.MinSize, "smallest pasted size of a 28x28 digit")
	fs.IntVar(&c.Scene.MaxSize, "digit-max", c.Scene.MaxSize, "largest pasted size of a digit")
	fs.IntVar(&c.Width, "width", c.Width, "the backbone's stem width (stages w, w, 2w, 2w)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the initialisation and the scenes")
	fs.StringVar(&c.Data, "data", "", "read the MNIST files from folder `DIR` instead of the GoMNIST module")
	fs.IntVar(&c.Steps, "pretrain", c.Steps, alt("pre-training steps", frcnn.Steps))
	fs.IntVar(&c.Batch, "batch", c.Batch, "pre-training canvases a step")
	fs.Float64Var(&c.LR, "lr", c.LR, "pre-training learning rate")
	fs.IntVar(&c.Every, "every", c.Every, "progress line every this many steps")
	fs.IntVar(&c.MetaSteps, "meta-steps", c.MetaSteps, alt("meta-training steps of each MAML", frcnn.MetaSteps))
	fs.IntVar(&c.MetaBatch, "meta-batch", c.MetaBatch, "tasks a meta-training step")
	fs.IntVar(&c.MetaShots, "meta-shots", c.MetaShots, "shots of the meta-training tasks")
	fs.IntVar(&c.InnerSteps, "inner-steps", c.InnerSteps, "MAML's inner SGD steps")
	fs.Float64Var(&c.InnerLR, "inner-lr", c.InnerLR, alt("MAML's inner learning rate", frcnn.InnerLR))
	fs.Float64Var(&c.MetaLR, "meta-lr", c.MetaLR, "MAML's meta learning rate (Adam)")
	fs.IntVar(&c.FDDirections, "fd", c.FDDirections, "directions of the meta-gradient's finite-difference check (0: none)")
	fs.StringVar(&shots, "shots", shots, "comma-separated K of the evaluation tasks")
	fs.IntVar(&c.Tasks, "tasks", c.Tasks, "evaluation tasks a K")
	fs.IntVar(&c.EvalQueries, "queries", c.EvalQueries, "query digits of each class in an evaluation task")
	fs.IntVar(&c.AdaptSteps, "adapt-steps", c.AdaptSteps, alt("fine-tuning SGD steps on a task's support", frcnn.AdaptSteps))
	fs.Float64Var(&c.AdaptLR, "adapt-lr", c.AdaptLR, alt("fine-tuning learning rate (also MAML's, at test time)", frcnn.AdaptLR))
	fs.StringVar(&c.PNG, "png", c.PNG, alt("write the figure to this file (\"\": none)", frcnn.PNG))
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.Model == ModelFasterRCNN {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		// Faster R-CNN's defaults, for the flags not given.
		for name, apply := range map[string]func(){
			"pretrain":    func() { c.Steps = frcnn.Steps },
			"meta-steps":  func() { c.MetaSteps = frcnn.MetaSteps },
			"inner-lr":    func() { c.InnerLR = frcnn.InnerLR },
			"adapt-steps": func() { c.AdaptSteps = frcnn.AdaptSteps },
			"adapt-lr":    func() { c.AdaptLR = frcnn.AdaptLR },
			"png":         func() { c.PNG = frcnn.PNG },
		} {
			if !set[name] {
				apply()
			}
		}
	}
	var err error
	if c.Shots, err = parseInts(shots); err != nil {
		return c, fmt.Errorf("-shots: %w", err)
	}
	return c, c.check()
}

// check refuses settings the run cannot use.
func (c Config) check() error {
	switch {
	case c.Model != ModelFCOS && c.Model != ModelFasterRCNN:
		return fmt.Errorf("-model %q: want %s or %s", c.Model, ModelFCOS, ModelFasterRCNN)
	case c.Scene.Canvas < 32 || c.Scene.PerCanvas < 1 || c.Scene.MinSize < 8 || c.Scene.MaxSize < c.Scene.MinSize || c.Scene.MaxSize > c.Scene.Canvas:
		return fmt.Errorf("bad scene settings %+v", c.Scene)
	case c.Width < 1 || c.Batch < 1 || c.Steps < 0 || c.MetaSteps < 0 || c.MetaBatch < 1 || c.MetaShots < 1 ||
		c.Queries < 1 || c.InnerSteps < 1 || c.Tasks < 1 || c.EvalQueries < 1 || c.AdaptSteps < 0 || len(c.Shots) == 0:
		return fmt.Errorf("sizes and counts must be positive")
	}
	for _, k := range c.Shots {
		if k < 1 {
			return fmt.Errorf("-shots %v: each K must be at least 1", c.Shots)
		}
	}
	return nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

func main() {
	c, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		log.Fatal(err)
	}
	if _, err := Run(c, func(s string) { fmt.Println(s) }); err != nil {
		log.Fatal(err)
	}
}

// Method is one way of adapting to a novel task: fine-tuning from a start
// that the method's training gave.
type Method struct {
	Name  string
	Start snapshot
}

// Result is a run's numbers.
type Result struct {
	// PretrainFirst and PretrainLast are the mean loss of the first and
	// the last progress report of pre-training; BaseAP50 the pre-trained
	// detector's AP50 on scenes of the base digits.
	PretrainFirst, PretrainLast, BaseAP50 float64
	// Methods are the columns of Rows' After: fine-tune, FO-MAML, MAML.
	Methods []string
	Rows    []Row
	Tasks   int       // tasks a K
	FD      *FDReport // the meta-gradient check; nil if not run
	Figure  string    // the PNG written, "" if none
	Elapsed time.Duration
}

// Row is the evaluation at one K: AP50 on the novel digits of the
// pre-trained detector before adaptation and of each method after, and
// each method's mean support loss before and after adaptation.
type Row struct {
	Shots                 int
	Before                float64
	After                 []float64
	LossBefore, LossAfter []float64
}

// Run is the whole example: pre-training, meta-training, evaluation on
// novel-digit tasks, the finite-difference check and the figure; report
// receives the progress lines.
func Run(c Config, report func(string)) (*Result, error) {
	t0 := time.Now()
	dir, how, err := scenes.FindMNIST(c.Data)
	if err != nil {
		return nil, err
	}
	train, test, err := scenes.LoadDigits(dir)
	if err != nil {
		return nil, err
	}
	report(fmt.Sprintf("MNIST from %s (%s)", dir, how))
	rng := rand.New(rand.NewPCG(c.Seed, 1))
	m, err := NewDetector(c, tensor.Float64, rng)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	report(fmt.Sprintf("%s, ResNet stem %d, FPN 32: %d trainable tensors; %dx%d canvases of ≤ %d digits",
		m.Name, c.Width, m.Weights().Params.Len(), c.Scene.Canvas, c.Scene.Canvas, c.Scene.PerCanvas))
	res := &Result{Tasks: c.Tasks}
	if res.PretrainFirst, res.PretrainLast, err = Pretrain(c, m, train, rng, report); err != nil {
		return nil, fmt.Errorf("pre-training: %w", err)
	}
	if res.BaseAP50, err = BaseAP50(c, m, test, rand.New(rand.NewPCG(c.Seed, 2)), 25); err != nil {
		return nil, err
	}
	report(fmt.Sprintf("pre-trained: AP50 %.3f on base digits 0–5 (test split)", res.BaseAP50))
	pre := save(m)
	methods := []Method{{Name: "fine-tune", Start: pre}}
	more, fd, err := metaTrain(c, m, pre, train, rng, report)
	if err != nil {
		return nil, err
	}
	methods, res.FD = append(methods, more...), fd
	for _, me := range methods {
		res.Methods = append(res.Methods, me.Name)
	}
	a := NewAdapter(c, m)
	defer a.Close()
	var figTask FewShotTask
	var figDets [][]detection.Detections
	for i, k := range c.Shots {
		tasks, err := SampleFewShot(rand.New(rand.NewPCG(c.Seed, 100+uint64(k))), test, k, c.EvalQueries, c.Tasks, c.Scene)
		if err != nil {
			return nil, err
		}
		row := Row{Shots: k}
		last := i == len(c.Shots)-1
		for j, me := range methods {
			o, err := EvalStart(a, me.Start, tasks)
			if err != nil {
				return nil, fmt.Errorf("%s, K=%d: %w", me.Name, k, err)
			}
			if j == 0 {
				row.Before = o.Before
				if last {
					figTask, figDets = tasks[0], [][]detection.Detections{o.DetsBefore[0]}
				}
			}
			if last {
				figDets = append(figDets, o.DetsAfter[0])
			}
			row.After = append(row.After, o.After)
			row.LossBefore, row.LossAfter = append(row.LossBefore, o.LossBefore), append(row.LossAfter, o.LossAfter)
			report(fmt.Sprintf("K=%d %-9s AP50 %.3f → %.3f  support loss %.3f → %.3f  %5.1fs",
				k, me.Name, o.Before, o.After, o.LossBefore, o.LossAfter, time.Since(t0).Seconds()))
		}
		res.Rows = append(res.Rows, row)
	}
	if c.PNG != "" {
		rows := append([]string{"before"}, res.Methods...)
		if err := WriteFigure(c.PNG, figTask.Query, rows, figDets); err != nil {
			return nil, err
		}
		res.Figure = c.PNG
		report("wrote " + c.PNG)
	}
	res.Elapsed = time.Since(t0)
	report(res.Table())
	return res, nil
}

// Table is the AP50 table: a row per K, a column per method.
func (r *Result) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "AP50 on the novel digits 6–9 (%d tasks a K; \"before\": the pre-trained detector unadapted)\n%-3s %8s", r.Tasks, "K", "before")
	for _, m := range r.Methods {
		fmt.Fprintf(&b, " %10s", m)
	}
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "\n%-3d %8.3f", row.Shots, row.Before)
		for _, v := range row.After {
			fmt.Fprintf(&b, " %10.3f", v)
		}
	}
	fmt.Fprintf(&b, "\ntotal %.1fs", r.Elapsed.Seconds())
	return b.String()
}
