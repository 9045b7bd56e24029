// Command fewshot is few-shot object detection on MNIST digits pasted
// onto 64×64 canvases (datasets/mnist/scenes): torchvision's FCOS on a
// small ResNet-FPN (package detection, its training losses) is
// pre-trained to detect and classify the digits 0–5 (a class per digit),
// then adapted to detect the digits 6–9 from K = 1, 2, 5 examples of each
// (the support canvases of a task, from MNIST's test split) by
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
//	go run ./examples/fewshot              # the default run, ~3 min on 2 cores
//	go run ./examples/fewshot -pretrain 6000 -meta-steps 1000 -tasks 50
//
// A default run gave (2 shared cores, 166–214 s; the check's relative
// errors 2.9e-8, 2.0e-7, 1.7e-8):
//
//	pre-trained: AP50 0.840 on base digits 0–5 (test split)
//	AP50 on the novel digits 6–9 (15 tasks a K; "before": the pre-trained detector unadapted)
//	K     before  fine-tune    FO-MAML       MAML
//	1      0.168      0.365      0.317      0.314
//	2      0.184      0.376      0.310      0.304
//	5      0.160      0.380      0.296      0.312
//
// At this size the meta-learned weights start the tasks at a lower
// support loss (1.0 against 1.96) and a higher AP50, but 20 fine-tuning
// steps from the pre-trained detector end higher; with the small inner
// step (0.02) first- and second-order MAML train alike. Larger inner steps
// (-inner-lr 0.05 or more) made first-order MAML diverge (its support loss
// at θ grew past 60) where second-order MAML did not.
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
		Scene: scenes.Opts{Canvas: 64, PerCanvas: 4, MinSize: 16, MaxSize: 24},
		Width: 8, Seed: 1,
		Steps: 2500, Batch: 4, Warmup: 100, Every: 500, LR: 0.02,
		MetaSteps: 300, MetaBatch: 4, MetaShots: 2, Queries: 2, InnerSteps: 1, InnerLR: 0.02, MetaLR: 0.001,
		FDDirections: 3,
		Shots:        []int{1, 2, 5}, Tasks: 15, EvalQueries: 4, AdaptSteps: 20, AdaptLR: 0.1,
		PNG: "fewshot.png",
	}
}

// parseFlags reads the flags into a Config.
func parseFlags(fs *flag.FlagSet, args []string) (Config, error) {
	c := defaultConfig()
	shots := joinInts(c.Shots)
	fs.IntVar(&c.Scene.Canvas, "canvas", c.Scene.Canvas, "canvas side in pixels")
	fs.IntVar(&c.Scene.PerCanvas, "per-canvas", c.Scene.PerCanvas, "digits on a canvas, at most")
	fs.IntVar(&c.Scene.MinSize, "digit-min", c.Scene.MinSize, "smallest pasted size of a 28x28 digit")
	fs.IntVar(&c.Scene.MaxSize, "digit-max", c.Scene.MaxSize, "largest pasted size of a digit")
	fs.IntVar(&c.Width, "width", c.Width, "the backbone's stem width (stages w, w, 2w, 2w)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the initialisation and the scenes")
	fs.StringVar(&c.Data, "data", "", "read the MNIST files from folder `DIR` instead of the GoMNIST module")
	fs.IntVar(&c.Steps, "pretrain", c.Steps, "pre-training steps")
	fs.IntVar(&c.Batch, "batch", c.Batch, "pre-training canvases a step")
	fs.Float64Var(&c.LR, "lr", c.LR, "pre-training learning rate")
	fs.IntVar(&c.Every, "every", c.Every, "progress line every this many steps")
	fs.IntVar(&c.MetaSteps, "meta-steps", c.MetaSteps, "meta-training steps of each MAML")
	fs.IntVar(&c.MetaBatch, "meta-batch", c.MetaBatch, "tasks a meta-training step")
	fs.IntVar(&c.MetaShots, "meta-shots", c.MetaShots, "shots of the meta-training tasks")
	fs.IntVar(&c.InnerSteps, "inner-steps", c.InnerSteps, "MAML's inner SGD steps")
	fs.Float64Var(&c.InnerLR, "inner-lr", c.InnerLR, "MAML's inner learning rate")
	fs.Float64Var(&c.MetaLR, "meta-lr", c.MetaLR, "MAML's meta learning rate (Adam)")
	fs.IntVar(&c.FDDirections, "fd", c.FDDirections, "directions of the meta-gradient's finite-difference check (0: none)")
	fs.StringVar(&shots, "shots", shots, "comma-separated K of the evaluation tasks")
	fs.IntVar(&c.Tasks, "tasks", c.Tasks, "evaluation tasks a K")
	fs.IntVar(&c.EvalQueries, "queries", c.EvalQueries, "query digits of each class in an evaluation task")
	fs.IntVar(&c.AdaptSteps, "adapt-steps", c.AdaptSteps, "fine-tuning SGD steps on a task's support")
	fs.Float64Var(&c.AdaptLR, "adapt-lr", c.AdaptLR, "fine-tuning learning rate (also MAML's, at test time)")
	fs.StringVar(&c.PNG, "png", c.PNG, "write the figure to this file (\"\": none)")
	if err := fs.Parse(args); err != nil {
		return c, err
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
	report(fmt.Sprintf("FCOS, ResNet stem %d, FPN 32: %d trainable tensors; %dx%d canvases of ≤ %d digits",
		c.Width, m.Weights().Params.Len(), c.Scene.Canvas, c.Scene.Canvas, c.Scene.PerCanvas))
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
