// Command boxrefine refines a box on a photograph by gradient ascent
// through RoIAlign w.r.t. the box coordinates, which torchvision's
// roi_align cannot do (it gives boxes no gradient).
//
// A tracker knows what the object looks like (its template: the RoIAlign
// crop of the object's box in an earlier frame) and has a rough box for it
// now. The score of a box b is how well its crop matches the template,
// S(b) = −mean((RoIAlign(x, b) − T)²), and gradient ascent on S moves the
// box's four coordinates, through ad.Grad, until the crop matches: the box
// slides and resizes onto the object (Lucas–Kanade alignment with RoIAlign
// as the warp). Here the object is the gopher of the photograph, its box
// jittered by several pixels on every side.
//
//	go run ./examples/boxrefine [-steps 40] [-lr 1000]
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/examples/internal/photo"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// object is the gopher's box (x1, y1, x2, y2) in pixels; start is it
// jittered: shifted right and down, too narrow and too short.
var (
	object = [4]float64{58, 6, 131, 97}
	start  = [4]float64{65, 13, 127, 88}
)

// crops are the crops compared: 8×8 bins of 4×4 samples each, so that each
// bin averages (blurs) the pixels it covers and the score is smooth.
var crops = gops.RoIAlignOpts{OutputSize: [2]int{8, 8}, SamplingRatio: 4, Aligned: true}

func main() {
	steps := flag.Int("steps", 40, "gradient steps")
	lr := flag.Float64("lr", 1000, "learning rate (pixels per unit of score gradient)")
	flag.Parse()
	if _, err := run(*steps, *lr, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "boxrefine:", err)
		os.Exit(1)
	}
}

// score builds S(b) = −mean((RoIAlign(x, b) − T)²) for the image x
// [1, C, H, W], the box b [1, 4] (x1, y1, x2, y2) and the template t
// [1, C, PH, PW].
func score(x, b, t *gorgonia.Node, opts gops.RoIAlignOpts) (*gorgonia.Node, error) {
	rois, err := gops.BoxesToRoIs([]*gorgonia.Node{b}) // [1, 5]: (0, x1, y1, x2, y2)
	if err != nil {
		return nil, err
	}
	y, err := gops.RoIAlign(x, rois, opts)
	if err != nil {
		return nil, err
	}
	f := ad.NewBuilder(y)
	sq := f.Square(f.Sub(y, t))
	m := f.Do(func() (*gorgonia.Node, error) { return gorgonia.Mean(sq) })
	return f.Node(f.Neg(m))
}

// refiner is the compiled graph of S(b) and ∂S/∂b on a TapeMachine; box
// holds b's value, which Eval reads.
type refiner struct {
	m       gorgonia.VM
	box     []float64
	s, grad gorgonia.Value
}

// newRefiner compiles the score of boxes on the image x [1, C, H, W]
// against the template t [1, C, PH, PW].
func newRefiner(x, t *tensor.Dense, opts gops.RoIAlignOpts) (*refiner, error) {
	g := gorgonia.NewGraph()
	xn := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(x.Shape()...), gorgonia.WithName("x"), gorgonia.WithValue(x))
	tn := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(t.Shape()...), gorgonia.WithName("template"), gorgonia.WithValue(t))
	bn := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(1, 4), gorgonia.WithName("box"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 4), tensor.WithBacking(make([]float64, 4)))))
	s, err := score(xn, bn, tn, opts)
	if err != nil {
		return nil, err
	}
	gs, err := ad.Grad(s, bn)
	if err != nil {
		return nil, err
	}
	r := &refiner{box: bn.Value().Data().([]float64)}
	gorgonia.Read(s, &r.s)
	gorgonia.Read(gs[0], &r.grad)
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		return nil, err
	}
	r.m = vm
	return r, nil
}

// Eval sets the box to b and returns S(b) and ∂S/∂b.
func (r *refiner) Eval(b [4]float64) (float64, [4]float64, error) {
	copy(r.box, b[:])
	r.m.Reset()
	if err := r.m.RunAll(); err != nil {
		return 0, [4]float64{}, err
	}
	var g [4]float64
	copy(g[:], r.grad.Data().([]float64))
	return r.s.Data().(float64), g, nil
}

// crop is RoIAlign(x, b) as a tensor [1, C, PH, PW].
func crop(x *tensor.Dense, b [4]float64, opts gops.RoIAlignOpts) (*tensor.Dense, error) {
	g := gorgonia.NewGraph()
	xn := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(x.Shape()...), gorgonia.WithName("x"), gorgonia.WithValue(x))
	bn := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(1, 5), gorgonia.WithName("box"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 5), tensor.WithBacking([]float64{0, b[0], b[1], b[2], b[3]}))))
	y, err := gops.RoIAlign(xn, bn, opts)
	if err != nil {
		return nil, err
	}
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return nil, err
	}
	return y.Value().(*tensor.Dense).Clone().(*tensor.Dense), nil
}

// result is what run measured: the box and its score and IoU with the
// object before and after refinement.
type result struct {
	before, after           [4]float64
	scoreBefore, scoreAfter float64
	iouBefore, iouAfter     float64
}

func run(steps int, lr float64, out io.Writer) (result, error) {
	res := result{before: start}
	x, err := photo.Gopher()
	if err != nil {
		return res, err
	}
	t, err := crop(x, object, crops)
	if err != nil {
		return res, err
	}
	r, err := newRefiner(x, t, crops)
	if err != nil {
		return res, err
	}
	defer r.m.Close()

	fmt.Fprintf(out, "object  %v\nstep   box (x1, y1, x2, y2)              score         IoU\n", object)
	b := start
	for s := 0; ; s++ {
		sc, g, err := r.Eval(b)
		if err != nil {
			return res, err
		}
		if s == 0 {
			res.scoreBefore, res.iouBefore = sc, iou(b, object)
		}
		res.after, res.scoreAfter, res.iouAfter = b, sc, iou(b, object)
		if s%10 == 0 || s == steps {
			fmt.Fprintf(out, "%4d   (%6.2f, %6.2f, %6.2f, %6.2f)  %.6e  %.3f\n", s, b[0], b[1], b[2], b[3], sc, iou(b, object))
		}
		if s == steps {
			return res, nil
		}
		for i := range b {
			b[i] += lr * g[i]
		}
	}
}

// iou is the intersection over union of boxes a and b.
func iou(a, b [4]float64) float64 {
	w := math.Max(0, math.Min(a[2], b[2])-math.Max(a[0], b[0]))
	h := math.Max(0, math.Min(a[3], b[3])-math.Max(a[1], b[1]))
	area := func(c [4]float64) float64 { return (c[2] - c[0]) * (c[3] - c[1]) }
	return w * h / (area(a) + area(b) - w*h)
}
