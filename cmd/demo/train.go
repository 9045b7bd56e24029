package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"github.com/gops-dev/gops/replica"
)

// Config is everything a MAML run depends on; the flags fill it.
type Config struct {
	Seed      uint64
	Steps     int     // meta-steps
	MetaBatch int     // tasks per meta-step
	EvalTasks int     // held-out tasks for the accuracy before and after
	Ways      int     // N
	Shots     int     // K: support digits per class
	Queries   int     // query digits per class
	InnerLR   float64 // α of the inner step θ' = θ - α∇Ls(θ)
	MetaLR    float64 // Adam step size of the meta-update
	Scene     scenes.Opts
	Arch      Arch // Ways and Canvas are copied from the fields above
	// TrainClasses are the digits meta-training draws tasks from (training
	// split); TestClasses those of the held-out tasks (test split).
	TrainClasses, TestClasses []int
	FDStep                    float64 // finite-difference step of the meta-gradient check
}

// Variant is one way to meta-train.
type Variant int

const (
	SecondOrder Variant = iota // MAML: the meta-gradient differentiates through the inner gradient
	FirstOrder                 // FOMAML: the inner gradient is a constant
)

// String is the variant's name in the demo's headings and errors.
func (v Variant) String() string {
	if v == FirstOrder {
		return "first-order MAML (FOMAML)"
	}
	return "second-order MAML"
}

// Short names for tables.
func (v Variant) Short() string {
	if v == FirstOrder {
		return "first-order"
	}
	return "second-order"
}

// Learner holds the compiled graphs of one configuration, one replica of
// them per task run side by side.
type Learner struct {
	cfg    Config
	graphs *replica.Pool[*taskGraphs]
	shape  [4]int // bs, ks, bq, kq
}

// taskGraphs is one replica of the compiled graphs: what one task needs.
type taskGraphs struct {
	meta *MetaGraph // second order, support and query shapes
	sup  *LossGrad  // first order on support scenes
	qry  *LossGrad  // first order on query scenes
}

// Close releases the machines built.
func (g *taskGraphs) Close() {
	if g.meta != nil {
		g.meta.Close()
	}
	if g.sup != nil {
		g.sup.Close()
	}
	if g.qry != nil {
		g.qry.Close()
	}
}

// sceneShape is the (canvases, boxes) of a scene of n digits.
func sceneShape(n int, so scenes.Opts) (int, int) {
	per := max(so.PerCanvas, 1)
	return (n + per - 1) / per, n
}

// NewLearner builds the graphs: one replica per processor, at most one
// per task of a meta-step (replica.DefaultSize).
func NewLearner(cfg Config) (*Learner, error) {
	return newLearner(cfg, replica.DefaultSize(cfg.MetaBatch))
}

// newLearner builds n replicas of the graphs; n = 1 runs the tasks one
// after another on the caller's goroutine.
func newLearner(cfg Config, n int) (*Learner, error) {
	bs, ks := sceneShape(cfg.Ways*cfg.Shots, cfg.Scene)
	bq, kq := sceneShape(cfg.Ways*cfg.Queries, cfg.Scene)
	l := &Learner{cfg: cfg, shape: [4]int{bs, ks, bq, kq}}
	var err error
	l.graphs, err = replica.NewPool(n, func(int) (*taskGraphs, error) {
		g := &taskGraphs{}
		var err error
		if g.meta, err = NewMetaGraph(cfg.Arch, bs, ks, bq, kq, cfg.InnerLR); err == nil {
			if g.sup, err = NewLossGrad(cfg.Arch, bs, ks); err == nil {
				g.qry, err = NewLossGrad(cfg.Arch, bq, kq)
			}
		}
		if err != nil {
			g.Close()
			return nil, err
		}
		return g, nil
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Close releases the machines.
func (l *Learner) Close() { l.graphs.Close() }

// one runs f on one replica of the graphs.
func (l *Learner) one(f func(g *taskGraphs) error) error {
	return l.graphs.Run(1, func(g *taskGraphs, _ int) error { return f(g) })
}

// Adapt takes the inner step on t's support set: θ' = θ - α∇Ls(θ).
func (l *Learner) Adapt(p Params, t *scenes.Task) (ad Params, s *LossGradValues, err error) {
	err = l.one(func(g *taskGraphs) error {
		ad, s, err = l.adapt(g, p, t)
		return err
	})
	return ad, s, err
}

// adapt is Adapt on the replica g.
func (l *Learner) adapt(g *taskGraphs, p Params, t *scenes.Task) (Params, *LossGradValues, error) {
	s, err := g.sup.Eval(p, t.Support)
	if err != nil {
		return Params{}, nil, err
	}
	return p.AddScaled(-l.cfg.InnerLR, s.Grad), s, nil
}

// Objective is the MAML objective of task t at θ, Lq(θ - α∇Ls(θ)),
// evaluated with the first-order graphs only (no derivative of a gradient
// is involved), with the query evaluation at the adapted parameters.
func (l *Learner) Objective(p Params, t *scenes.Task) (f float64, q *LossGradValues, err error) {
	err = l.one(func(g *taskGraphs) error {
		f, q, _, err = l.objective(g, p, t)
		return err
	})
	return f, q, err
}

// objective is Objective, also returning the cells of the deformable
// sampling points: floor of every offset, support ones at θ then query ones
// at θ'. The objective is smooth in θ as long as no offset crosses an
// integer (the bilinear interpolation has kinks at pixel boundaries, and
// torchvision's boundary rule switches there too). It runs on the replica g.
func (l *Learner) objective(g *taskGraphs, p Params, t *scenes.Task) (float64, *LossGradValues, []float64, error) {
	ad, s, err := l.adapt(g, p, t)
	if err != nil {
		return 0, nil, nil, err
	}
	q, err := g.qry.Eval(ad, t.Query)
	if err != nil {
		return 0, nil, nil, err
	}
	cells := make([]float64, 0, len(s.Offset)+len(q.Offset))
	for _, o := range append(append([]float64(nil), s.Offset...), q.Offset...) {
		cells = append(cells, math.Floor(o))
	}
	return q.Loss, q, cells, nil
}

// TaskStep is what one task contributes to a meta-step.
type TaskStep struct {
	QueryLoss float64 // Lq(θ')
	QueryAcc  float64 // accuracy on the query set at θ'
	Grad      Params  // meta-gradient (second order or first-order approximation)
}

// Step evaluates the meta-gradient of task t at θ with variant v.
func (l *Learner) Step(v Variant, p Params, t *scenes.Task) (ts *TaskStep, err error) {
	err = l.one(func(g *taskGraphs) error {
		ts, err = l.step(g, v, p, t)
		return err
	})
	return ts, err
}

// step is Step on the replica g.
func (l *Learner) step(g *taskGraphs, v Variant, p Params, t *scenes.Task) (*TaskStep, error) {
	if v == SecondOrder {
		m, err := g.meta.Eval(p, t)
		if err != nil {
			return nil, err
		}
		return &TaskStep{QueryLoss: m.QueryLoss, QueryAcc: accuracy(m.Logits, t.Query.Labels, l.cfg.Ways), Grad: m.MetaGrad}, nil
	}
	// FOMAML: evaluate the inner gradient, feed θ' as a value, and take the
	// query gradient w.r.t. θ' as the meta-gradient.
	ad, _, err := l.adapt(g, p, t)
	if err != nil {
		return nil, err
	}
	q, err := g.qry.Eval(ad, t.Query)
	if err != nil {
		return nil, err
	}
	return &TaskStep{QueryLoss: q.Loss, QueryAcc: accuracy(q.Logits, t.Query.Labels, l.cfg.Ways), Grad: q.Grad}, nil
}

// EvalResult is the held-out accuracy of one parameter vector.
type EvalResult struct {
	Acc, AccCI95 float64 // mean query accuracy after one inner step, ± 1.96·SE
	Loss         float64 // mean query loss after one inner step
}

// Evaluate adapts p to each task with one inner step on its support set
// and measures the query accuracy. The tasks run side by side on the
// replicas; their results are combined in task order.
func (l *Learner) Evaluate(p Params, tasks []*scenes.Task) (EvalResult, error) {
	accs := make([]float64, len(tasks))
	losses := make([]float64, len(tasks))
	var r EvalResult
	err := l.graphs.Run(len(tasks), func(g *taskGraphs, j int) error {
		loss, q, _, err := l.objective(g, p, tasks[j])
		if err != nil {
			return err
		}
		accs[j], losses[j] = accuracy(q.Logits, tasks[j].Query.Labels, l.cfg.Ways), loss
		return nil
	})
	if err != nil {
		return r, err
	}
	for _, loss := range losses {
		r.Loss += loss / float64(len(tasks))
	}
	r.Acc, r.AccCI95 = meanCI(accs)
	return r, nil
}

func meanCI(x []float64) (mean, ci float64) {
	n := float64(len(x))
	if n == 0 {
		return 0, 0
	}
	for _, v := range x {
		mean += v
	}
	mean /= n
	if n < 2 {
		return mean, 0
	}
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, 1.96 * math.Sqrt(ss/(n-1)/n)
}

// StepLog is one line of training progress.
type StepLog struct {
	Step      int
	MetaLoss  float64 // mean query loss after adaptation over the meta-batch
	QueryAcc  float64 // mean query accuracy after adaptation
	GradNorm  float64 // norm of the averaged meta-gradient
	StepTime  time.Duration
	TotalTime time.Duration
}

// adam is the meta-optimizer.
type adam struct {
	lr, b1, b2, eps float64
	t               int
	m, v            Params
}

func newAdam(lr float64, like Params) *adam {
	a := &adam{lr: lr, b1: 0.9, b2: 0.999, eps: 1e-8}
	for i := range like {
		a.m[i] = make([]float64, len(like[i]))
		a.v[i] = make([]float64, len(like[i]))
	}
	return a
}

func (a *adam) update(p *Params, g Params) {
	a.t++
	c1 := 1 - math.Pow(a.b1, float64(a.t))
	c2 := 1 - math.Pow(a.b2, float64(a.t))
	for i := range p {
		for j := range p[i] {
			a.m[i][j] = a.b1*a.m[i][j] + (1-a.b1)*g[i][j]
			a.v[i][j] = a.b2*a.v[i][j] + (1-a.b2)*g[i][j]*g[i][j]
			p[i][j] -= a.lr * (a.m[i][j] / c1) / (math.Sqrt(a.v[i][j]/c2) + a.eps)
		}
	}
}

// MetaTrain runs cfg.Steps meta-steps from p0 for each variant, in
// lockstep: at every step the variants see the same tasks, drawn with rng
// from the training split. It calls report after each step with one log
// per variant and returns the trained parameters and the logs.
func (l *Learner) MetaTrain(variants []Variant, p0 Params, data *scenes.Digits, rng *rand.Rand, report func([]StepLog)) ([]Params, [][]StepLog, error) {
	cfg := l.cfg
	ps := make([]Params, len(variants))
	opts := make([]*adam, len(variants))
	logs := make([][]StepLog, len(variants))
	total := make([]time.Duration, len(variants))
	for i := range variants {
		ps[i] = p0.Clone()
		opts[i] = newAdam(cfg.MetaLR, p0)
	}
	for step := 1; step <= cfg.Steps; step++ {
		tasks := make([]*scenes.Task, cfg.MetaBatch)
		for b := range tasks {
			t, err := scenes.SampleTask(rng, data, cfg.TrainClasses, cfg.Ways, cfg.Shots, cfg.Queries, cfg.Scene)
			if err != nil {
				return ps, logs, err
			}
			tasks[b] = t
		}
		line := make([]StepLog, len(variants))
		for i, v := range variants {
			t0 := time.Now()
			p := ps[i]
			sum := zerosLike(p)
			var loss, acc float64
			// The tasks run side by side; their sums are taken in task
			// order, so the numbers do not depend on the replicas.
			steps := make([]*TaskStep, len(tasks))
			err := l.graphs.Run(len(tasks), func(g *taskGraphs, j int) error {
				var err error
				steps[j], err = l.step(g, v, p, tasks[j])
				return err
			})
			if err != nil {
				return ps, logs, err
			}
			for _, ts := range steps {
				loss += ts.QueryLoss / float64(len(tasks))
				acc += ts.QueryAcc / float64(len(tasks))
				for a := range sum {
					for j := range sum[a] {
						sum[a][j] += ts.Grad[a][j] / float64(len(tasks))
					}
				}
			}
			if math.IsNaN(loss) || math.IsInf(loss, 0) {
				return ps, logs, fmt.Errorf("%s, meta-step %d: meta-loss is %v (lower -meta-lr or -inner-lr)", v, step, loss)
			}
			opts[i].update(&ps[i], sum)
			dt := time.Since(t0)
			total[i] += dt
			line[i] = StepLog{Step: step, MetaLoss: loss, QueryAcc: acc, GradNorm: sum.Norm(), StepTime: dt, TotalTime: total[i]}
			logs[i] = append(logs[i], line[i])
		}
		if report != nil {
			report(line)
		}
	}
	return ps, logs, nil
}

// FDCheck compares the second-order meta-gradient from ad.Grad with
// central differences of the MAML objective F(θ) = Lq(θ - α∇Ls(θ)), along
// one random unit direction per parameter tensor and one along all of
// them. F is evaluated through the first-order graphs (the inner step
// taken in Go), so the check is independent of how the second-order graph
// was built. The first-order approximation is shown beside it.
type FDCheck struct {
	Rows      []FDRow
	MaxRelErr float64 // over the second-order rows
	// Pass: every row within metaFDRelTol relative or metaFDAbsTol
	// absolute error (a tiny derivative is only known to the rounding error
	// of F, about 1e-15, over h).
	Pass bool
}

// FDRow is one directional derivative.
type FDRow struct {
	Name              string
	Step              float64 // h
	Scheme            string  // "central", "forward" or "backward" difference
	Analytic, Numeric float64 // <∇F, d> from ad.Grad, and the difference quotient
	FirstOrder        float64 // <∇θ'Lq, d>: FOMAML's approximation
	RelErr            float64 // |analytic - numeric| / max(|analytic|, |numeric|)
	AbsErr            float64 // |analytic - numeric|
	FORelErr          float64 // the same for the first-order approximation
}

// CheckMetaGradient runs the check at θ = p on task t, the directions
// side by side on the replicas.
func (l *Learner) CheckMetaGradient(p Params, t *scenes.Task, rng *rand.Rand, h float64) (*FDCheck, error) {
	var m *MetaValues
	var fo *TaskStep
	err := l.one(func(g *taskGraphs) error {
		var err error
		if m, err = g.meta.Eval(p, t); err != nil {
			return err
		}
		fo, err = l.step(g, FirstOrder, p, t)
		return err
	})
	if err != nil {
		return nil, err
	}
	// Directions: one per tensor, then all at once.
	var dirs []Params
	var names []string
	all := zerosLike(p)
	for i := range p {
		d := zerosLike(p)
		var n2 float64
		for j := range d[i] {
			d[i][j] = rng.NormFloat64()
			n2 += d[i][j] * d[i][j]
		}
		for j := range d[i] {
			d[i][j] /= math.Sqrt(n2)
			all[i][j] = d[i][j] / math.Sqrt(numParams)
		}
		dirs = append(dirs, d)
		names = append(names, paramNames[i])
	}
	dirs = append(dirs, all)
	names = append(names, "all parameters")
	res := &FDCheck{Pass: true, Rows: make([]FDRow, len(dirs))}
	err = l.graphs.Run(len(dirs), func(g *taskGraphs, k int) error {
		num, step, scheme, err := l.directional(g, p, dirs[k], t, h)
		res.Rows[k] = FDRow{Name: names[k], Step: step, Scheme: scheme, Analytic: m.MetaGrad.Dot(dirs[k]), Numeric: num, FirstOrder: fo.Grad.Dot(dirs[k])}
		return err
	})
	if err != nil {
		return nil, err
	}
	for k := range res.Rows {
		r := &res.Rows[k]
		r.RelErr = relErr(r.Analytic, r.Numeric)
		r.AbsErr = math.Abs(r.Analytic - r.Numeric)
		r.FORelErr = relErr(r.FirstOrder, r.Numeric)
		if !(r.RelErr <= res.MaxRelErr) {
			res.MaxRelErr = r.RelErr
		}
		if !(r.RelErr <= metaFDRelTol || r.AbsErr <= metaFDAbsTol) {
			res.Pass = false
		}
	}
	return res, nil
}

// directional differentiates F along d numerically. F is smooth except
// where a sampling point of the deformable convolution crosses a pixel
// boundary (the bilinear interpolation's kinks), so the difference must
// not straddle such a point: it takes the central difference
// (F(θ+hd) - F(θ-hd)) / 2h when no offset changes its integer part
// between θ-hd and θ+hd, else the one-sided second-order difference on a
// side where none does, (∓3F(θ) ± 4F(θ±hd) ∓ F(θ±2hd)) / 2h, else tries
// again with h/10. It runs on the replica g.
func (l *Learner) directional(g *taskGraphs, p Params, d Params, t *scenes.Task, h float64) (float64, float64, string, error) {
	type point struct {
		f     float64
		cells []float64
	}
	at := func(s float64) (point, error) {
		f, _, cells, err := l.objective(g, p.AddScaled(s, d), t)
		return point{f, cells}, err
	}
	p0, err := at(0)
	if err != nil {
		return 0, 0, "", err
	}
	for try := 0; try < 4; try++ {
		var pts [5]point // at -2h, -h, 0, h, 2h
		pts[2] = p0
		for _, i := range []int{1, 3} {
			if pts[i], err = at(float64(i-2) * h); err != nil {
				return 0, 0, "", err
			}
		}
		same := func(i, j int) bool { return slices.Equal(pts[i].cells, pts[j].cells) }
		if same(1, 2) && same(2, 3) {
			return (pts[3].f - pts[1].f) / (2 * h), h, "central", nil
		}
		for _, side := range []int{1, -1} {
			near, far := 2+side, 2+2*side
			if !same(2, near) {
				continue
			}
			if pts[far], err = at(float64(2*side) * h); err != nil {
				return 0, 0, "", err
			}
			if same(near, far) {
				num := float64(side) * (-3*pts[2].f + 4*pts[near].f - pts[far].f) / (2 * h)
				if side > 0 {
					return num, h, "forward", nil
				}
				return num, h, "backward", nil
			}
		}
		h /= 10
	}
	return 0, h, "", fmt.Errorf("finite differences: a sampling point crosses a pixel boundary within %g of θ along every side", 10*h)
}

func relErr(a, b float64) float64 {
	den := math.Max(math.Abs(a), math.Abs(b))
	if den == 0 {
		return 0
	}
	return math.Abs(a-b) / den
}

func zerosLike(p Params) Params {
	var z Params
	for i := range p {
		z[i] = make([]float64, len(p[i]))
	}
	return z
}
