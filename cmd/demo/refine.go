package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Settings of the box refinement.
const (
	refineJitter = 4.0  // each coordinate of a query box moves by up to this many pixels
	refineMinBox = 8.0  // a jittered or refined box keeps at least this side
	refineSteps  = 10   // gradient-ascent steps
	refineStep   = 1.5  // pixels, the first step along each box's normalised gradient
	refineDecay  = 0.75 // the step shrinks by this factor every step
)

// RefinedBox is one query box before and after refinement.
type RefinedBox struct {
	Canvas                int        // canvas index
	Digit, Label          int        // MNIST class and task label
	True, Before, After   [4]float64 // (x1, y1, x2, y2): the pasted box, jittered, refined
	IoUBefore, IoUAfter   float64    // IoU with True
	ConfBefore, ConfAfter float64    // softmax probability of the true label
}

// Refinement is the result of RefineBoxes.
type Refinement struct {
	Boxes []RefinedBox
	Steps int
}

// RefineBoxes jitters every query box of t (deterministically from rng) and
// tightens the boxes by gradient ascent on the classifier's log-probability
// of each box's true label, log softmax(logits)[label], w.r.t. the box
// coordinates: ad.Grad of the model's loss w.r.t. the boxes node, through
// RoIAlign. The parameters p are used as given (pass the adapted ones).
// Each box moves along its own normalised gradient (its log-probability
// depends on its row only), by refineStep pixels, shrinking every step.
func (l *Learner) RefineBoxes(p Params, t *scenes.Task, rng *rand.Rand) (*Refinement, error) {
	a := l.cfg.Arch
	sc := t.Query
	bq, kq := sc.Canvas.Shape()[0], len(sc.Labels)
	g := newReuseGraph()
	theta := newParamNodes(g, a)
	in := newSceneInputs(g, "refine", bq, kq, a.Canvas)
	fw, gb, err := in.lossGrad(a, theta, gorgonia.Nodes{in.boxes})
	if err != nil {
		return nil, fmt.Errorf("boxes: %w", err)
	}
	var logitV, gradV gorgonia.Value
	gorgonia.Read(fw.Logits, &logitV)
	gorgonia.Read(gb[0], &gradV)
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if err := setParams(theta, p); err != nil {
		return nil, err
	}
	if err := in.set(sc); err != nil {
		return nil, err
	}
	// eval returns the confidence of each box's label and the gradient of
	// its log-probability w.r.t. its coordinates (x1, y1, x2, y2).
	eval := func(boxes []float64) ([]float64, [][4]float64, error) {
		if err := gorgonia.Let(in.boxes, tensor.New(tensor.WithShape(kq, 5), tensor.WithBacking(append([]float64(nil), boxes...)))); err != nil {
			return nil, nil, err
		}
		m.Reset()
		if err := m.RunAll(); err != nil {
			return nil, nil, fmt.Errorf("running the box-gradient graph: %w", err)
		}
		logits, err := values(logitV)
		if err != nil {
			return nil, nil, err
		}
		grad, err := values(gradV)
		if err != nil {
			return nil, nil, err
		}
		conf := make([]float64, kq)
		dir := make([][4]float64, kq)
		for k := 0; k < kq; k++ {
			conf[k] = softmaxAt(logits[k*a.Ways:(k+1)*a.Ways], sc.Labels[k])
			// The loss is the mean of -log p over the boxes, so
			// ∂log p_k/∂b_k = -K ∂loss/∂b_k.
			for c := 0; c < 4; c++ {
				dir[k][c] = -float64(kq) * grad[5*k+1+c]
			}
		}
		return conf, dir, nil
	}

	truth := sc.Boxes.Data().([]float64)
	s := float64(a.Canvas)
	boxes := append([]float64(nil), truth...)
	res := &Refinement{Steps: refineSteps, Boxes: make([]RefinedBox, kq)}
	for k := range res.Boxes {
		r := &res.Boxes[k]
		r.Canvas, r.Digit, r.Label = int(truth[5*k]), sc.Digits[k], sc.Labels[k]
		copy(r.True[:], truth[5*k+1:5*k+5])
		var b [4]float64
		for c := range b {
			b[c] = r.True[c] + refineJitter*(2*rng.Float64()-1)
		}
		r.Before = fitBox(b, s)
		copy(boxes[5*k+1:5*k+5], r.Before[:])
	}
	step := refineStep
	for i := 0; ; i++ {
		conf, dir, err := eval(boxes)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			for k := range res.Boxes {
				res.Boxes[k].ConfBefore = conf[k]
			}
		}
		if i == refineSteps {
			for k := range res.Boxes {
				r := &res.Boxes[k]
				r.ConfAfter = conf[k]
				copy(r.After[:], boxes[5*k+1:5*k+5])
				r.IoUBefore, r.IoUAfter = boxIoU(r.Before, r.True), boxIoU(r.After, r.True)
			}
			return res, nil
		}
		for k := 0; k < kq; k++ {
			d := dir[k]
			n := math.Sqrt(d[0]*d[0] + d[1]*d[1] + d[2]*d[2] + d[3]*d[3])
			if n == 0 {
				continue
			}
			var b [4]float64
			for c := range b {
				b[c] = boxes[5*k+1+c] + step*d[c]/n
			}
			b = fitBox(b, s)
			copy(boxes[5*k+1:5*k+5], b[:])
		}
		step *= refineDecay
	}
}

// fitBox keeps box b inside a canvas of side s and at least refineMinBox
// wide and high.
func fitBox(b [4]float64, s float64) [4]float64 {
	for _, i := range []int{0, 1} {
		if b[i+2]-b[i] < refineMinBox {
			c := (b[i] + b[i+2]) / 2
			b[i], b[i+2] = c-refineMinBox/2, c+refineMinBox/2
		}
		if b[i] < 0 {
			b[i+2] -= b[i]
			b[i] = 0
		}
		if b[i+2] > s {
			b[i] -= b[i+2] - s
			b[i+2] = s
		}
	}
	return b
}

// softmaxAt is softmax(v)[i].
func softmaxAt(v []float64, i int) float64 {
	mx := v[0]
	for _, x := range v {
		mx = math.Max(mx, x)
	}
	var z float64
	for _, x := range v {
		z += math.Exp(x - mx)
	}
	return math.Exp(v[i]-mx) / z
}

// boxIoU is the intersection over union of boxes a and b (x1, y1, x2, y2).
func boxIoU(a, b [4]float64) float64 {
	w := math.Max(0, math.Min(a[2], b[2])-math.Max(a[0], b[0]))
	h := math.Max(0, math.Min(a[3], b[3])-math.Max(a[1], b[1]))
	area := func(c [4]float64) float64 { return (c[2] - c[0]) * (c[3] - c[1]) }
	return w * h / (area(a) + area(b) - w*h)
}
