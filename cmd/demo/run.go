package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"github.com/gops-dev/gops/openblas"
)

// Settings of the report.
const (
	pngName = "maml_demo.png" // written into the -out folder
	// The meta-gradient check accepts a row within this relative error, or
	// within this absolute error (for tiny derivatives).
	metaFDRelTol = 1e-6
	metaFDAbsTol = 1e-9
)

// RunOpts are the parts of a run that do not change its numbers.
type RunOpts struct {
	Out      string    // folder of the PNG; "" writes none
	Data     string    // MNIST folder; "" finds the GoMNIST module
	Variants []Variant // the first one is checked and drawn; the others are compared
	// Train and Test, if set, are used instead of reading the MNIST files.
	Train, Test *scenes.Digits
}

// MAMLResult is what RunMAML computed.
type MAMLResult struct {
	Before  EvalResult   // held-out accuracy at the initial parameters
	After   []EvalResult // per variant, after meta-training
	Logs    [][]StepLog  // per variant
	Check   *FDCheck     // at the first variant's trained parameters
	Refine  *Refinement  // held-out task 1's query boxes, jittered and refined
	PNGPath string
	Elapsed time.Duration
}

// errMetaCheckFailed is returned by RunMAML when the meta-gradient
// disagrees with finite differences.
var errMetaCheckFailed = errors.New("finite-difference check of the meta-gradient failed")

// Independent random streams of a run, so that each part depends only on
// the seed: the initial parameters, the meta-training tasks, the held-out
// tasks and the directions of the gradient check.
const (
	streamInit = iota + 1
	streamTrain
	streamEval
	streamCheck
	streamRefine
)

func stream(seed uint64, s int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(s)*0x9e3779b97f4a7c15))
}

// RunMAML runs the MNIST demo: held-out accuracy at the start, meta-training
// of each variant, held-out accuracy after, the meta-gradient check and the
// picture, with a report on w.
func RunMAML(cfg Config, ro RunOpts, w io.Writer) (*MAMLResult, error) {
	start := time.Now()
	if len(ro.Variants) == 0 {
		return nil, fmt.Errorf("no variant to run")
	}
	cfg.Arch.Ways, cfg.Arch.Canvas = cfg.Ways, cfg.Scene.Canvas
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "gops demo: second-order MAML on MNIST digits through RoIAlign and DeformConv2d\n\n")

	train, test := ro.Train, ro.Test
	if train == nil || test == nil {
		dir, how, err := scenes.FindMNIST(ro.Data)
		if err != nil {
			return nil, err
		}
		if train, test, err = scenes.LoadDigits(dir); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "data    %s\n        (%s): %d training and %d test digits\n", dir, how, len(train.Images), len(test.Images))
	}
	fmt.Fprintf(w, "blas    %s (openblas.UseFromEnv(): matrix products; GOPS_BLAS=gonum for pure Go)\n", openblas.Describe())
	c := cfg
	a := c.Arch
	q := a.Q()
	fmt.Fprintf(w, "tasks   %d-way %d-shot, %d queries per class; meta-training on digits %s (training split),\n",
		c.Ways, c.Shots, c.Queries, classString(c.TrainClasses))
	fmt.Fprintf(w, "        held-out tasks on digits %s (test split); each task relabels its digits 0..%d at random\n",
		classString(c.TestClasses), c.Ways-1)
	bs, ks := sceneShape(c.Ways*c.Shots, c.Scene)
	bq, kq := sceneShape(c.Ways*c.Queries, c.Scene)
	fmt.Fprintf(w, "scenes  digits pasted at %d-%d px on %dx%d canvases, at most %d a canvas, boxes [K, 5]:\n",
		c.Scene.MinSize, c.Scene.MaxSize, c.Scene.Canvas, c.Scene.Canvas, c.Scene.PerCanvas)
	fmt.Fprintf(w, "        support [%d, 1, %d, %d] with %d boxes, query [%d, 1, %d, %d] with %d boxes\n",
		bs, c.Scene.Canvas, c.Scene.Canvas, ks, bq, c.Scene.Canvas, c.Scene.Canvas, kq)
	nparams := 0
	for _, s := range a.ParamShapes() {
		nparams += s.TotalSize()
	}
	fmt.Fprintf(w, "model   canvas -> tanh(conv 3x3) [B, %d, %d, %d]\n", a.Feat, a.Canvas, a.Canvas)
	fmt.Fprintf(w, "        -> RoIAlign %dx%d -> crops [K, %d, %d, %d]\n", a.Crop, a.Crop, a.Feat, a.Crop, a.Crop)
	fmt.Fprintf(w, "        -> offsets [K, 18, %d, %d] = conv 3x3/2 (crops), mask [K, 9, %d, %d] = sigmoid(conv 3x3/2 (crops))\n", q, q, q, q)
	fmt.Fprintf(w, "        -> tanh(DeformConv2d v2 3x3/2 (crops, offsets, mask)) [K, %d, %d, %d] -> linear -> logits [K, %d]\n", a.Deform, q, q, c.Ways)
	fmt.Fprintf(w, "        plain convs nn.Conv2d; loss nn.CrossEntropy, the mean log-softmax cross-entropy; %d parameters\n", nparams)
	fmt.Fprintf(w, "MAML    inner step θ' = θ - %g·∇θ Ls(θ) on the support boxes, meta-loss Lq(θ') on the query boxes;\n", c.InnerLR)
	fmt.Fprintf(w, "        second order: ∇θ Lq(θ - α∇θ Ls(θ)) by ad.Grad through the inner gradient, a second\n")
	fmt.Fprintf(w, "        derivative through RoIAlign and DeformConv2d (torchvision: \"double backwards ... not supported\");\n")
	fmt.Fprintf(w, "        first order (FOMAML): ∇θ' Lq(θ'), the inner gradient taken as a constant;\n")
	fmt.Fprintf(w, "        Adam (step %g) on the mean over %d tasks a meta-step; seed %d\n", c.MetaLR, c.MetaBatch, c.Seed)

	l, err := NewLearner(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the graphs: %w", err)
	}
	defer l.Close()
	p0 := cfg.Arch.InitParams(stream(cfg.Seed, streamInit))
	erng := stream(cfg.Seed, streamEval)
	held := make([]*scenes.Task, cfg.EvalTasks)
	for i := range held {
		if held[i], err = scenes.SampleTask(erng, test, cfg.TestClasses, cfg.Ways, cfg.Shots, cfg.Queries, cfg.Scene); err != nil {
			return nil, err
		}
	}
	res := &MAMLResult{}

	// 1. Before.
	if res.Before, err = l.Evaluate(p0, held); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "\n1. Held-out accuracy before meta-training (%d tasks, one inner step on each support set):\n", len(held))
	fmt.Fprintf(w, "   %.1f%% ± %.1f%% (chance %.1f%%), query loss %.4f\n", 100*res.Before.Acc, 100*res.Before.AccCI95, 100/float64(cfg.Ways), res.Before.Loss)

	// 2. Meta-training.
	fmt.Fprintf(w, "\n2. Meta-training, %d steps of %d tasks", cfg.Steps, cfg.MetaBatch)
	if len(ro.Variants) > 1 {
		fmt.Fprintf(w, "; the variants start from the same θ and see the same tasks")
	}
	fmt.Fprintf(w, ".\n   meta-loss = mean query loss at θ', acc = query accuracy at θ' (both over the step's tasks),\n")
	fmt.Fprintf(w, "   ms = time of the step\n")
	// Columns: "   step" then per variant " | meta-loss    acc    ms".
	const col = " | meta-loss    acc    ms"
	head1, head2 := "       ", "   step"
	for _, v := range ro.Variants {
		head1 += fmt.Sprintf(" | %-*s", len(col)-3, v.Short())
		head2 += col
	}
	fmt.Fprintln(w, strings.TrimRight(head1, " "))
	fmt.Fprintln(w, head2)
	report := func(line []StepLog) {
		s := fmt.Sprintf("   %4d", line[0].Step)
		for _, lg := range line {
			s += fmt.Sprintf(" |    %.4f  %5.1f%%  %4.0f", lg.MetaLoss, 100*lg.QueryAcc, float64(lg.StepTime.Microseconds())/1000)
		}
		fmt.Fprintln(w, s)
	}
	trained, logs, err := l.MetaTrain(ro.Variants, p0, train, stream(cfg.Seed, streamTrain), report)
	res.Logs = logs
	if err != nil {
		return res, err
	}
	tot := "  total"
	for i := range ro.Variants {
		var d time.Duration
		if n := len(logs[i]); n > 0 {
			d = logs[i][n-1].TotalTime
		}
		tot += fmt.Sprintf(" | %*.1f s", len(col)-5, d.Seconds())
	}
	fmt.Fprintln(w, tot)

	// 3. After.
	fmt.Fprintf(w, "\n3. Held-out accuracy (%d tasks on digits %s, test split; one inner step, then the query set):\n", len(held), classString(cfg.TestClasses))
	fmt.Fprintf(w, "   %-14s %-16s %-16s %s\n", "", "before", "after", "query loss before -> after")
	for i, v := range ro.Variants {
		r, err := l.Evaluate(trained[i], held)
		if err != nil {
			return res, err
		}
		res.After = append(res.After, r)
		fmt.Fprintf(w, "   %-14s %5.1f%% ± %4.1f%%   %5.1f%% ± %4.1f%%   %.4f -> %.4f\n", v.Short(),
			100*res.Before.Acc, 100*res.Before.AccCI95, 100*r.Acc, 100*r.AccCI95, res.Before.Loss, r.Loss)
	}

	// 4. The check.
	first := ro.Variants[0]
	fmt.Fprintf(w, "\n4. Finite-difference check of the second-order meta-gradient, at the %s parameters,\n", first.Short())
	fmt.Fprintf(w, "   on held-out task 1: F(θ) = Lq(θ - α∇θ Ls(θ)) evaluated with first-order graphs only;\n")
	fmt.Fprintf(w, "   <∇F, d> from ad.Grad vs (F(θ + h·d) - F(θ - h·d)) / 2h, d a random unit direction, h = %g\n", cfg.FDStep)
	fmt.Fprintf(w, "   (one-sided where a deformable sampling point would cross a pixel boundary: a kink of bilinear sampling)\n")
	fmt.Fprintf(w, "   %-16s %18s %18s  %-13s %7s   %s\n", "direction in", "ad.Grad", "difference", "scheme", "rel.err", "FOMAML's <∇θ'Lq, d> (rel.err)")
	chk, err := l.CheckMetaGradient(trained[0], held[0], stream(cfg.Seed, streamCheck), cfg.FDStep)
	if err != nil {
		return res, err
	}
	res.Check = chk
	for _, r := range chk.Rows {
		scheme := r.Scheme
		if r.Step != cfg.FDStep {
			scheme += fmt.Sprintf(" %.0e", r.Step)
		}
		fmt.Fprintf(w, "   %-16s %+18.10e %+18.10e  %-13s %7.1e   %+.4e (%.1e)\n", r.Name, r.Analytic, r.Numeric, scheme, r.RelErr, r.FirstOrder, r.FORelErr)
	}
	status := "OK"
	if !chk.Pass {
		status = "FAILED"
	}
	fmt.Fprintf(w, "   max relative error %.1e (tolerance %g, or %g absolute for tiny derivatives): %s\n", chk.MaxRelErr, metaFDRelTol, metaFDAbsTol, status)

	// 5. Box refinement through RoIAlign w.r.t. the boxes.
	adapted, _, err := l.Adapt(trained[0], held[0])
	if err != nil {
		return res, err
	}
	if res.Refine, err = l.RefineBoxes(adapted, held[0], stream(cfg.Seed, streamRefine)); err != nil {
		return res, fmt.Errorf("box refinement: %w", err)
	}
	printRefinement(w, res.Refine, first)

	// 6. The picture.
	if ro.Out != "" {
		fig, err := l.Figure(p0, trained[0], held[0], res.Refine)
		if err != nil {
			return res, fmt.Errorf("figure: %w", err)
		}
		if err := os.MkdirAll(ro.Out, 0o755); err != nil {
			return res, err
		}
		res.PNGPath = filepath.Join(ro.Out, pngName)
		if err := WritePNG(res.PNGPath, fig.Image); err != nil {
			return res, err
		}
		fmt.Fprintf(w, "\n6. Wrote %s (%dx%d):\n%s", res.PNGPath, fig.Image.Bounds().Dx(), fig.Image.Bounds().Dy(), fig.Caption)
	}
	res.Elapsed = time.Since(start)
	fmt.Fprintf(w, "\nTotal time %.1f s.\n", res.Elapsed.Seconds())
	if status != "OK" {
		return res, fmt.Errorf("%w: max relative error %.1e, tolerance %g (or %g absolute)", errMetaCheckFailed, chk.MaxRelErr, metaFDRelTol, metaFDAbsTol)
	}
	return res, nil
}

// printRefinement reports the box refinement, one line per box.
func printRefinement(w io.Writer, r *Refinement, v Variant) {
	fmt.Fprintf(w, "\n5. Box refinement through RoIAlign, on held-out task 1's query boxes, with the %s\n", v.Short())
	fmt.Fprintf(w, "   parameters adapted to the task: each box coordinate jittered by up to %g px, then %d gradient-ascent\n", refineJitter, r.Steps)
	fmt.Fprintf(w, "   steps on log p(true digit) w.r.t. the box (ad.Grad w.r.t. the boxes node; each box moves %g px along\n", refineStep)
	fmt.Fprintf(w, "   its normalised gradient, the step x%g after each); IoU with the pasted box, confidence = p(true digit)\n", refineDecay)
	fmt.Fprintf(w, "   box  canvas  digit   IoU before -> after   confidence before -> after\n")
	var iouUp, confUp int
	var ib, ia, cb, ca float64
	for k, b := range r.Boxes {
		fmt.Fprintf(w, "   %3d  %6d  %5d        %.3f -> %.3f                %.3f -> %.3f\n",
			k+1, b.Canvas+1, b.Digit, b.IoUBefore, b.IoUAfter, b.ConfBefore, b.ConfAfter)
		if b.IoUAfter > b.IoUBefore {
			iouUp++
		}
		if b.ConfAfter > b.ConfBefore {
			confUp++
		}
		n := float64(len(r.Boxes))
		ib, ia, cb, ca = ib+b.IoUBefore/n, ia+b.IoUAfter/n, cb+b.ConfBefore/n, ca+b.ConfAfter/n
	}
	fmt.Fprintf(w, "   confidence up for %d of %d boxes (mean %.3f -> %.3f), IoU up for %d of %d (mean %.3f -> %.3f)\n",
		confUp, len(r.Boxes), cb, ca, iouUp, len(r.Boxes), ib, ia)
}
