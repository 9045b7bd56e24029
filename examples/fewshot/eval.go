package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"github.com/gops-dev/gops/detection"
	"github.com/gops-dev/gops/optim"
)

// FewShotTask is one K-shot detection task on the novel digits: K
// canvases' worth of support digits (K of each novel digit) and the query
// digits to detect after adaptation, from MNIST's test split.
type FewShotTask struct {
	Shots          int
	Support, Query *scenes.Scene
}

// SampleFewShot draws n K-shot tasks of the novel digits (queries of each
// digit in the query scene) from test.
func SampleFewShot(rng *rand.Rand, test *scenes.Digits, k, queries, n int, so scenes.Opts) ([]FewShotTask, error) {
	tasks := make([]FewShotTask, n)
	for i := range tasks {
		t, err := scenes.SampleTask(rng, test, NovelClasses, len(NovelClasses), k, queries, so)
		if err != nil {
			return nil, err
		}
		tasks[i] = FewShotTask{Shots: k, Support: t.Support, Query: t.Query}
	}
	return tasks, nil
}

// Adapter fine-tunes the detector on a support scene: plain SGD on the
// model's losses, the digits as labels, one loss graph per support batch
// size.
type Adapter struct {
	m      *Model
	c      Config
	graphs map[int]*LossGraph
}

// NewAdapter returns an Adapter of m with c's AdaptSteps and AdaptLR.
func NewAdapter(c Config, m *Model) *Adapter {
	return &Adapter{m: m, c: c, graphs: map[int]*LossGraph{}}
}

// Adapt takes c.AdaptSteps SGD steps of rate c.AdaptLR on the support
// scene's loss, from m's current weights (changed in place); it returns
// the support loss before and after (the latter at the last step's
// weights, before its update).
func (a *Adapter) Adapt(support *scenes.Scene) (before, after float64, err error) {
	b := support.Canvas.Shape()[0]
	lg := a.graphs[b]
	if lg == nil {
		if lg, err = NewLossGraph(a.m, b, a.c.Scene.Canvas, a.c.Scene.PerCanvas); err != nil {
			return 0, 0, err
		}
		a.graphs[b] = lg
	}
	sgd, err := optim.NewSGD(a.m.Weights().Params.Values(), optim.SGDOpts{LR: a.c.AdaptLR})
	if err != nil {
		return 0, 0, err
	}
	for s := 0; s < a.c.AdaptSteps; s++ {
		loss, err := lg.Run(support, byDigit(support))
		if err != nil {
			return 0, 0, err
		}
		if s == 0 {
			before = loss
		}
		after = loss
		if err := sgd.Step(lg.Grads()); err != nil {
			return 0, 0, err
		}
	}
	return before, after, nil
}

// Close releases the loss graphs.
func (a *Adapter) Close() error {
	for _, lg := range a.graphs {
		if err := lg.Close(); err != nil {
			return err
		}
	}
	return nil
}

// Detect runs m on a scene's canvases: its detections and ground truth
// (labelled by digit), canvas by canvas.
func Detect(m *Model, sc *scenes.Scene) ([]detection.Detections, []detection.GroundTruth, error) {
	dets, err := m.Forward(images(sc, m.Weights().Dtype()))
	if err != nil {
		return nil, nil, err
	}
	return dets, groundTruth(targets(sc, byDigit(sc))), nil
}

// AP50 is COCO's AP at IoU 0.5 of the detections over the given digit
// classes.
func AP50(dets []detection.Detections, gts []detection.GroundTruth, classes []int) (float64, error) {
	e, err := detection.Evaluate(dets, gts, detection.WithCatIDs(classes...))
	if err != nil {
		return 0, err
	}
	return e.Stats[1], nil
}

// BaseAP50 is the AP50 of m on n fresh scenes of the base digits of test:
// how well the pre-trained detector knows its own classes.
func BaseAP50(c Config, m *Model, test *scenes.Digits, rng *rand.Rand, n int) (float64, error) {
	var dets []detection.Detections
	var gts []detection.GroundTruth
	for i := 0; i < n; i++ {
		sc, err := scenes.SampleScene(rng, test, BaseClasses, c.Scene.PerCanvas, c.Scene)
		if err != nil {
			return 0, err
		}
		d, g, err := Detect(m, sc)
		if err != nil {
			return 0, err
		}
		dets, gts = append(dets, d...), append(gts, g...)
	}
	return AP50(dets, gts, BaseClasses)
}

// Outcome is one start's result on a set of tasks: the AP50 of the query
// detections before and after adaptation, and the mean support loss
// before and after.
type Outcome struct {
	Before, After         float64
	LossBefore, LossAfter float64
	DetsBefore, DetsAfter [][]detection.Detections // per task, per query canvas
}

// EvalStart adapts the detector from the weights start on each task's
// support and detects its query: AP50 over all tasks' query canvases
// before and after adaptation. It leaves m at the last task's adapted
// weights.
func EvalStart(a *Adapter, start snapshot, tasks []FewShotTask) (*Outcome, error) {
	o := &Outcome{}
	var before, after []detection.Detections
	var gts []detection.GroundTruth
	for i, t := range tasks {
		if err := restore(a.m, start); err != nil {
			return nil, err
		}
		d0, g, err := Detect(a.m, t.Query)
		if err != nil {
			return nil, fmt.Errorf("task %d: %w", i, err)
		}
		l0, l1, err := a.Adapt(t.Support)
		if err != nil {
			return nil, fmt.Errorf("task %d: adapting: %w", i, err)
		}
		d1, _, err := Detect(a.m, t.Query)
		if err != nil {
			return nil, fmt.Errorf("task %d: %w", i, err)
		}
		before, after, gts = append(before, d0...), append(after, d1...), append(gts, g...)
		o.DetsBefore, o.DetsAfter = append(o.DetsBefore, d0), append(o.DetsAfter, d1)
		o.LossBefore += l0 / float64(len(tasks))
		o.LossAfter += l1 / float64(len(tasks))
	}
	var err error
	if o.Before, err = AP50(before, gts, NovelClasses); err != nil {
		return nil, err
	}
	if o.After, err = AP50(after, gts, NovelClasses); err != nil {
		return nil, err
	}
	return o, nil
}
