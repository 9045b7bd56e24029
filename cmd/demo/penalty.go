package main

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Model is the small learnable pipeline of the second-order demo: a per-pixel
// 3x3 colour mixing z = W·x + b, then y = RoIAlign(tanh(z), boxes), then
// L = (1/K) Σ_k ||y_k - Target||² (sum over channels and bins of each crop,
// mean over the K crops).
type Model struct {
	W      [9]float64 // row-major [3, 3]: z_c = Σ_d W[c, d] x_d + b_c
	B      [3]float64
	Target float64
	Opts   gops.RoIAlignOpts
}

// BuildLoss adds the model's loss L to x's graph and returns it. x is the
// [1, 3, H, W] image, w the [3, 3] mixing matrix, b the [3] bias and boxes
// the [K, 5] boxes (K > 0). Every op on the way is right at every derivative
// order: Reshape, Mul matrix·matrix, BroadcastAdd, Tanh, gops.RoIAlign, Sub
// and Mul with a scalar, Square, Sum.
func (md *Model) BuildLoss(x, w, b, boxes *gorgonia.Node) (*gorgonia.Node, error) {
	s := x.Shape()
	if len(s) != 4 || s[0] != 1 || s[1] != 3 {
		return nil, fmt.Errorf("image must be [1, 3, H, W], got %v", s)
	}
	k := boxes.Shape()[0]
	if k == 0 {
		return nil, fmt.Errorf("no boxes")
	}
	g := x.Graph()
	h, wd := s[2], s[3]
	xr, err := gorgonia.Reshape(x, tensor.Shape{3, h * wd})
	if err != nil {
		return nil, err
	}
	z, err := gorgonia.Mul(w, xr) // [3, H*W]
	if err != nil {
		return nil, err
	}
	bc, err := gorgonia.Reshape(b, tensor.Shape{3, 1})
	if err != nil {
		return nil, err
	}
	if z, err = gorgonia.BroadcastAdd(z, bc, nil, []byte{1}); err != nil {
		return nil, err
	}
	if z, err = gorgonia.Reshape(z, tensor.Shape{1, 3, h, wd}); err != nil {
		return nil, err
	}
	a, err := gorgonia.Tanh(z)
	if err != nil {
		return nil, err
	}
	y, err := gops.RoIAlign(a, boxes, md.Opts) // [K, 3, PH, PW]
	if err != nil {
		return nil, err
	}
	d, err := gorgonia.Sub(y, g.Constant(gorgonia.NewF64(md.Target)))
	if err != nil {
		return nil, err
	}
	sq, err := gorgonia.Square(d)
	if err != nil {
		return nil, err
	}
	sum, err := gorgonia.Sum(sq)
	if err != nil {
		return nil, err
	}
	return gorgonia.Mul(sum, g.Constant(gorgonia.NewF64(1/float64(k))))
}

// Penalty is the compiled graph of the gradient-norm penalty
// P = ||∂L/∂x||² and its gradient ∂P/∂W (gops.Grad applied to a gops.Grad
// result: a second derivative through RoIAlign), on a TapeMachine. Eval runs
// it at any W; the image, bias and boxes stay fixed.
type Penalty struct {
	m             gorgonia.VM
	w             *gorgonia.Node
	hw            int // H*W, to sum the input gradient over channels
	lossV, penV   gorgonia.Value
	gradXV, dPdWV gorgonia.Value
}

// PenaltyValues is one evaluation of a Penalty.
type PenaltyValues struct {
	Loss    float64    // L
	P       float64    // ||∂L/∂x||²
	DPdW    [9]float64 // ∂P/∂W, row-major [3, 3]
	GradMag []float64  // Σ_c |∂L/∂x_c| per pixel, [H*W] row-major
}

// NewPenalty builds the penalty graph of md for the image x ([1, 3, H, W])
// and boxes ([K, 5]). Call Close when done.
func NewPenalty(md *Model, x, boxes *tensor.Dense) (*Penalty, error) {
	g := gorgonia.NewGraph()
	xn := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(x.Shape()...), gorgonia.WithName("x"), gorgonia.WithValue(x.Clone()))
	wn := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 3), gorgonia.WithName("W"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(3, 3), tensor.WithBacking(append([]float64(nil), md.W[:]...)))))
	bn := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("b"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking(append([]float64(nil), md.B[:]...)))))
	boxn := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(boxes.Shape()...), gorgonia.WithName("boxes"), gorgonia.WithValue(boxes.Clone()))

	loss, err := md.BuildLoss(xn, wn, bn, boxn)
	if err != nil {
		return nil, fmt.Errorf("building L: %w", err)
	}
	gx, err := gops.Grad(loss, xn)
	if err != nil {
		return nil, fmt.Errorf("∂L/∂x: %w", err)
	}
	sq, err := gorgonia.Square(gx[0])
	if err != nil {
		return nil, err
	}
	pen, err := gorgonia.Sum(sq)
	if err != nil {
		return nil, err
	}
	dw, err := gops.Grad(pen, wn)
	if err != nil {
		return nil, fmt.Errorf("∂P/∂W: %w", err)
	}

	p := &Penalty{w: wn, hw: x.Shape()[2] * x.Shape()[3]}
	// Read before running: a node's Value() may be overwritten after RunAll.
	gorgonia.Read(loss, &p.lossV)
	gorgonia.Read(pen, &p.penV)
	gorgonia.Read(gx[0], &p.gradXV)
	gorgonia.Read(dw[0], &p.dPdWV)
	p.m = gorgonia.NewTapeMachine(g)
	return p, nil
}

// Close releases the machine.
func (p *Penalty) Close() { p.m.Close() }

// Eval sets W (row-major [3, 3]), runs the graph and returns L, P, ∂P/∂W and
// the input-gradient magnitude.
func (p *Penalty) Eval(w [9]float64) (PenaltyValues, error) {
	var out PenaltyValues
	wt := tensor.New(tensor.WithShape(3, 3), tensor.WithBacking(append([]float64(nil), w[:]...)))
	if err := gorgonia.Let(p.w, wt); err != nil {
		return out, err
	}
	p.m.Reset()
	if err := p.m.RunAll(); err != nil {
		return out, fmt.Errorf("running the penalty graph: %w", err)
	}
	var err error
	if out.Loss, err = scalar(p.lossV); err != nil {
		return out, fmt.Errorf("L: %w", err)
	}
	if out.P, err = scalar(p.penV); err != nil {
		return out, fmt.Errorf("P: %w", err)
	}
	dw, err := floats(p.dPdWV, 9)
	if err != nil {
		return out, fmt.Errorf("∂P/∂W: %w", err)
	}
	copy(out.DPdW[:], dw)
	gx, err := floats(p.gradXV, 3*p.hw)
	if err != nil {
		return out, fmt.Errorf("∂L/∂x: %w", err)
	}
	out.GradMag = make([]float64, p.hw)
	for c := 0; c < 3; c++ {
		for i, v := range gx[c*p.hw : (c+1)*p.hw] {
			out.GradMag[i] += math.Abs(v)
		}
	}
	return out, nil
}

// scalar reads a float64 scalar value.
func scalar(v gorgonia.Value) (float64, error) {
	switch s := v.(type) {
	case *gorgonia.F64:
		return float64(*s), nil
	case *tensor.Dense:
		if d, ok := s.Data().([]float64); ok && len(d) == 1 {
			return d[0], nil
		}
		if d, ok := s.Data().(float64); ok {
			return d, nil
		}
	}
	return 0, fmt.Errorf("value %v (%T) is not a float64 scalar", v, v)
}

// floats copies a float64 tensor value with n elements.
func floats(v gorgonia.Value, n int) ([]float64, error) {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("value is %T, want *tensor.Dense", v)
	}
	data, ok := d.Data().([]float64)
	if !ok || len(data) != n {
		return nil, fmt.Errorf("value %v has %d float64 elements, want %d", d.Shape(), len(data), n)
	}
	return append([]float64(nil), data...), nil
}

// FDResult compares ∂P/∂W from gops.Grad with central finite differences of
// P computed through the same graph.
type FDResult struct {
	Step      float64    // h: each W entry is perturbed by ±h
	Analytic  [9]float64 // ∂P/∂W from gops.Grad
	Numeric   [9]float64 // (P(W + h·e_i) - P(W - h·e_i)) / 2h
	RelErr    [9]float64 // |analytic - numeric| / max(|analytic|, |numeric|)
	MaxRelErr float64
}

// FiniteDifferences evaluates p at w, then at w ± step along each of W's
// nine entries, and compares.
func FiniteDifferences(p *Penalty, w [9]float64, step float64) (FDResult, error) {
	r := FDResult{Step: step}
	v, err := p.Eval(w)
	if err != nil {
		return r, err
	}
	r.Analytic = v.DPdW
	for i := range w {
		wp, wm := w, w
		wp[i] += step
		wm[i] -= step
		vp, err := p.Eval(wp)
		if err != nil {
			return r, err
		}
		vm, err := p.Eval(wm)
		if err != nil {
			return r, err
		}
		r.Numeric[i] = (vp.P - vm.P) / (2 * step)
		a, n := r.Analytic[i], r.Numeric[i]
		if den := math.Max(math.Abs(a), math.Abs(n)); den > 0 {
			r.RelErr[i] = math.Abs(a-n) / den
		}
		// NaN must fail the check, so compare with !(x <= max).
		if !(r.RelErr[i] <= r.MaxRelErr) {
			r.MaxRelErr = r.RelErr[i]
		}
	}
	return r, nil
}
