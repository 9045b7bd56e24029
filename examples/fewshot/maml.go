package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"github.com/gops-dev/gops/detection"
	"github.com/gops-dev/gops/meta"
	"github.com/gops-dev/gops/optim"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MetaGraph is one MAML task's graph on the detector
// (detection.NewMAMLTask): an inner SGD step (or several) on a support
// scene, the query scene's loss at the adapted weights and its
// meta-gradient w.r.t. the detector's trainable weights, first or second
// order.
type MetaGraph struct {
	m              *Model
	c              Config
	task           *detection.MAMLTask
	support, query *gorgonia.Node
	queryLoss      gorgonia.Value
	supportLoss    gorgonia.Value
	metaGrads      []gorgonia.Value // read by gorgonia.Read: a node's Value may be reused memory
	vm             gorgonia.VM
}

// NewMetaGraph builds the MAML graph of m for the meta-training tasks of
// c (support and query canvases of c.MetaShots and c.Queries digits of
// each of 4 classes).
func NewMetaGraph(c Config, m *Model, firstOrder bool) (*MetaGraph, error) {
	dt, s := m.Weights().Dtype(), c.Scene.Canvas
	ways := len(NovelClasses)
	bs := (ways*c.MetaShots + c.Scene.PerCanvas - 1) / c.Scene.PerCanvas
	bq := (ways*c.Queries + c.Scene.PerCanvas - 1) / c.Scene.PerCanvas
	g := gorgonia.NewGraph()
	ad.ReuseResults(g, true)
	mg := &MetaGraph{m: m, c: c,
		support: gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(bs, 3, s, s), gorgonia.WithName("support")),
		query:   gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(bq, 3, s, s), gorgonia.WithName("query")),
	}
	var err error
	mg.task, err = detection.NewMAMLTask(m.Detector, mg.support, mg.query,
		meta.MAMLOpts{InnerLR: c.InnerLR, InnerSteps: c.InnerSteps, FirstOrder: firstOrder})
	if err != nil {
		return nil, err
	}
	gorgonia.Read(mg.task.Step.QueryLoss, &mg.queryLoss)
	gorgonia.Read(mg.task.Step.SupportLosses[0], &mg.supportLoss)
	mg.metaGrads = make([]gorgonia.Value, len(mg.task.Step.MetaGrads))
	for i, n := range mg.task.Step.MetaGrads {
		gorgonia.Read(n, &mg.metaGrads[i])
	}
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		return nil, err
	}
	mg.vm = vm
	return mg, nil
}

// metaTask is a meta-training task: 4 base digits as the novel labels.
type metaTask struct{ support, query *scenes.Scene }

// sampleMetaTask draws a task of 4 base digits from train, the digits
// taking the labels 6–9 in random order (SampleTask's label order).
func sampleMetaTask(c Config, rng *rand.Rand, train *scenes.Digits) (metaTask, error) {
	t, err := scenes.SampleTask(rng, train, BaseClasses, len(NovelClasses), c.MetaShots, c.Queries, c.Scene)
	if err != nil {
		return metaTask{}, err
	}
	return metaTask{t.Support, t.Query}, nil
}

// novelLabel labels box i of sc with the novel class of its task label.
func novelLabel(sc *scenes.Scene) func(int) int {
	return func(i int) int { return NovelClasses[sc.Labels[i]] }
}

// Run computes the task's query loss at the adapted weights, its support
// loss at the start, and the meta-gradients (Grads), at the detector's
// current weights.
func (mg *MetaGraph) Run(t metaTask) (query, support float64, err error) {
	var tbs [2]detection.TargetBatch
	for i, sc := range []*scenes.Scene{t.support, t.query} {
		x := []*gorgonia.Node{mg.support, mg.query}[i]
		if n := sc.Canvas.Shape()[0]; n != x.Shape()[0] {
			return 0, 0, fmt.Errorf("a scene of %d canvases for a batch of %d", n, x.Shape()[0])
		}
		il, err := mg.m.Transform.Transform(images(sc, x.Dtype()))
		if err != nil {
			return 0, 0, err
		}
		if err := gorgonia.Let(x, il.Tensors); err != nil {
			return 0, 0, err
		}
		if tbs[i], err = detection.PadTargets(targets(sc, mg.m.classes(novelLabel(sc))), mg.c.Scene.PerCanvas); err != nil {
			return 0, 0, err
		}
	}
	if err := mg.task.SetTargets(tbs[0], tbs[1]); err != nil {
		return 0, 0, err
	}
	mg.vm.Reset()
	if err := ad.RunAll(mg.vm); err != nil {
		return 0, 0, err
	}
	if query, err = scalar(mg.queryLoss); err != nil {
		return 0, 0, err
	}
	support, err = scalar(mg.supportLoss)
	return query, support, err
}

// replay gives the task's samplers (Faster R-CNN's: the RPN's anchors and
// the box head's proposals; FCOS draws nothing) fresh sources seeded by
// seed, so that the runs after each replay draw alike.
func (mg *MetaGraph) replay(seed uint64) {
	for _, in := range append([]*detection.LossInputs{mg.task.Query}, mg.task.Support...) {
		in.SetRandperm(rand.New(rand.NewPCG(seed, 8)).Perm)
	}
}

// Grads are the meta-gradients of the last Run, in Weights().Params'
// order.
func (mg *MetaGraph) Grads() []tensor.Tensor {
	out := make([]tensor.Tensor, len(mg.metaGrads))
	for i, v := range mg.metaGrads {
		out[i], _ = v.(tensor.Tensor)
	}
	return out
}

// Close releases the machine.
func (mg *MetaGraph) Close() error { return mg.vm.Close() }

// MetaTrain meta-trains m from its current weights by MAML (first order
// or second) for c.MetaSteps steps of Adam (rate c.MetaLR) on the mean
// meta-gradient of c.MetaBatch base-digit tasks (drawn by rng), reporting
// the mean query and support losses five times in the run.
func MetaTrain(c Config, m *Model, firstOrder bool, train *scenes.Digits, rng *rand.Rand, report func(string)) error {
	mg, err := NewMetaGraph(c, m, firstOrder)
	if err != nil {
		return err
	}
	defer mg.Close()
	params := m.Weights().Params.Values()
	opts := optim.DefaultAdamOpts()
	opts.LR = c.MetaLR
	adam, err := optim.NewAdam(params, opts)
	if err != nil {
		return err
	}
	mean := make([]tensor.Tensor, len(params))
	for i, p := range params {
		mean[i] = tensor.New(tensor.Of(p.Dtype()), tensor.WithShape(p.Shape().Clone()...))
	}
	name := map[bool]string{true: "FO-MAML", false: "MAML"}[firstOrder]
	every := max(c.MetaSteps/5, 1)
	start := time.Now()
	var qSum, sSum float64
	n := 0
	for step := 1; step <= c.MetaSteps; step++ {
		for _, t := range mean {
			t.Zero()
		}
		for b := 0; b < c.MetaBatch; b++ {
			task, err := sampleMetaTask(c, rng, train)
			if err != nil {
				return err
			}
			q, s, err := mg.Run(task)
			if err != nil {
				return fmt.Errorf("%s step %d: %w", name, step, err)
			}
			qSum, sSum, n = qSum+q, sSum+s, n+1
			for i, g := range mg.Grads() {
				if err := addScaled(mean[i], g, 1/float64(c.MetaBatch)); err != nil {
					return err
				}
			}
		}
		if err := adam.Step(mean); err != nil {
			return err
		}
		if step%every == 0 || step == c.MetaSteps {
			report(fmt.Sprintf("%-7s step %4d/%d  query loss %.3f (support %.3f before the inner step)  %5.1fs",
				name, step, c.MetaSteps, qSum/float64(n), sSum/float64(n), time.Since(start).Seconds()))
			qSum, sSum, n = 0, 0, 0
		}
	}
	return nil
}

// addScaled adds a·src to dst (float64 tensors of one shape).
func addScaled(dst, src tensor.Tensor, a float64) error {
	if dst == nil || src == nil {
		return fmt.Errorf("addScaled: a nil tensor")
	}
	d, ok1 := dst.Data().([]float64)
	s, ok2 := src.Data().([]float64)
	if !ok1 || !ok2 || len(d) != len(s) {
		return fmt.Errorf("addScaled: %v %v and %v %v", dst.Dtype(), dst.Shape(), src.Dtype(), src.Shape())
	}
	for i := range d {
		d[i] += a * s[i]
	}
	return nil
}

// FDReport is the finite-difference check of the second-order
// meta-gradient: for random unit directions d of all trainable weights,
// the directional derivative ⟨∇θ L_q(θ − α∇L_s(θ)), d⟩ of the
// meta-gradient against the central difference (f(θ+hd) − f(θ−hd))/2h of
// the query loss f at the adapted weights, and the first-order
// meta-gradient's ⟨∂L_q/∂θ', d⟩, which leaves out the inner step's
// second derivatives.
type FDReport struct {
	H                 float64
	Analytic, Numeric []float64
	FirstOrder        []float64
	MaxRelErr         float64
	// Note says how the checked objective differs from meta-training's
	// ("": it does not).
	Note string
}

// String is the report, a line per direction.
func (r *FDReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "meta-gradient check (h = %g): directional derivatives of the query loss at the adapted weights\n", r.H)
	if r.Note != "" {
		fmt.Fprintf(&b, "  (%s)\n", r.Note)
	}
	for i := range r.Analytic {
		fmt.Fprintf(&b, "  direction %d: second order %+.9e, central difference %+.9e, rel. error %.1e; first order %+.6e\n",
			i, r.Analytic[i], r.Numeric[i], relErr(r.Analytic[i], r.Numeric[i]), r.FirstOrder[i])
	}
	return b.String()
}

// relErr is |a − b| / max(|a|, |b|, 1e-12).
func relErr(a, b float64) float64 {
	return math.Abs(a-b) / math.Max(math.Max(math.Abs(a), math.Abs(b)), 1e-12)
}

// CheckMetaGradient compares the second-order meta-gradient at m's
// current weights on one base-digit task with central differences of the
// MAML objective along n random directions (step h), and reports the
// first-order meta-gradient along the same directions. m's weights are
// left as they were.
func CheckMetaGradient(c Config, m *Model, train *scenes.Digits, rng *rand.Rand, n int, h float64) (*FDReport, error) {
	task, err := sampleMetaTask(c, rng, train)
	if err != nil {
		return nil, err
	}
	start := save(m)
	defer restore(m, start)
	r := &FDReport{H: h}
	if f, ok := m.Detector.(*detection.FasterRCNN); ok {
		// Faster R-CNN's proposals are constants of the derivative
		// (detached, as torchvision's) but move with θ under finite
		// differences: the check's graphs keep no proposal (an RPN score
		// threshold above every probability), so the box head samples
		// the ground-truth boxes alone, which torchvision appends to the
		// proposals. The samplers replay one draw (MetaGraph.replay).
		rpn := f.Config.RPN
		f.Config.RPN.ScoreThresh = 2
		defer func() { f.Config.RPN = rpn }()
		r.Note = "Faster R-CNN: its proposals are detached but would move under finite differences, so the check's graphs keep none " +
			"(RPN score threshold 2) and the box head samples the ground-truth boxes alone; the samplers replay one draw"
	}
	for _, fo := range []bool{false, true} {
		mg, err := NewMetaGraph(c, m, fo)
		if err != nil {
			return nil, err
		}
		defer mg.Close()
		mg.replay(c.Seed)
		if _, _, err := mg.Run(task); err != nil {
			return nil, err
		}
		grads := mg.Grads()
		dirs := rand.New(rand.NewPCG(c.Seed, 7)) // the same directions for both orders
		for k := 0; k < n; k++ {
			d := direction(dirs, grads)
			dot := 0.0
			for i, g := range grads {
				for j, v := range g.Data().([]float64) {
					dot += v * d[i][j]
				}
			}
			if fo {
				r.FirstOrder = append(r.FirstOrder, dot)
				continue
			}
			r.Analytic = append(r.Analytic, dot)
			var f [2]float64
			for s, sign := range []float64{1, -1} {
				if err := restore(m, start); err != nil {
					return nil, err
				}
				for i, p := range m.Weights().Params.Values() {
					if err := addScaled(p, tensor.New(tensor.WithShape(p.Shape().Clone()...), tensor.WithBacking(d[i])), sign*h); err != nil {
						return nil, err
					}
				}
				mg.replay(c.Seed)
				if f[s], _, err = mg.Run(task); err != nil {
					return nil, err
				}
			}
			if err := restore(m, start); err != nil {
				return nil, err
			}
			num := (f[0] - f[1]) / (2 * h)
			r.Numeric = append(r.Numeric, num)
			r.MaxRelErr = math.Max(r.MaxRelErr, relErr(dot, num))
		}
	}
	return r, nil
}

// direction is a random unit vector shaped as grads (a slice per tensor).
func direction(rng *rand.Rand, grads []tensor.Tensor) [][]float64 {
	d := make([][]float64, len(grads))
	norm := 0.0
	for i, g := range grads {
		d[i] = make([]float64, g.Shape().TotalSize())
		for j := range d[i] {
			d[i][j] = rng.NormFloat64()
			norm += d[i][j] * d[i][j]
		}
	}
	norm = math.Sqrt(norm)
	for _, x := range d {
		for j := range x {
			x[j] /= norm
		}
	}
	return d
}

// metaTrain meta-trains first- and second-order MAML from the
// pre-trained weights start, after the finite-difference check of the
// meta-gradient at start, and returns the two methods' starts.
func metaTrain(c Config, m *Model, start snapshot, train *scenes.Digits, rng *rand.Rand, report func(string)) ([]Method, *FDReport, error) {
	var fd *FDReport
	if c.FDDirections > 0 {
		var err error
		if fd, err = CheckMetaGradient(c, m, train, rng, c.FDDirections, 1e-6); err != nil {
			return nil, nil, fmt.Errorf("meta-gradient check: %w", err)
		}
		report(strings.TrimSuffix(fd.String(), "\n"))
	}
	var methods []Method
	for _, fo := range []bool{true, false} {
		if err := restore(m, start); err != nil {
			return nil, nil, err
		}
		tasks := rand.New(rand.NewPCG(c.Seed, 3)) // the same tasks for both orders
		if err := MetaTrain(c, m, fo, train, tasks, report); err != nil {
			return nil, nil, err
		}
		methods = append(methods, Method{Name: map[bool]string{true: "FO-MAML", false: "MAML"}[fo], Start: save(m)})
	}
	return methods, fd, restore(m, start)
}
