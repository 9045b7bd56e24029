package main

import (
	"io"
	"math"
	"testing"

	"github.com/gops-dev/gops/examples/internal/photo"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A few steps raise the score and move every coordinate of the box toward
// the object's (the IoU rises, each coordinate's error shrinks).
func TestRun(t *testing.T) {
	res, err := run(12, 1000, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !(res.scoreAfter > res.scoreBefore) {
		t.Errorf("score went from %g to %g, want higher", res.scoreBefore, res.scoreAfter)
	}
	if !(res.iouAfter > res.iouBefore+0.15) {
		t.Errorf("IoU with the object went from %.3f to %.3f, want a rise of more than 0.15", res.iouBefore, res.iouAfter)
	}
	for i := range object {
		if e0, e1 := math.Abs(res.before[i]-object[i]), math.Abs(res.after[i]-object[i]); !(e1 < 0.5*e0) {
			t.Errorf("coordinate %d: error %.2f px before, %.2f px after, want it at least halved", i, e0, e1)
		}
	}
}

// The score's box gradient (through BoxesToRoIs and RoIAlign) agrees with
// finite differences at orders 1 and 2 on a patch of the photo, and the
// TapeMachine with the LispMachine.
func TestScoreDerivatives(t *testing.T) {
	x, err := photo.Gopher()
	if err != nil {
		t.Fatal(err)
	}
	opts := gops.RoIAlignOpts{OutputSize: [2]int{3, 3}, SamplingRatio: 2, Aligned: true}
	tmpl, err := crop(x, [4]float64{60, 8, 113, 31}, opts) // the goggles
	if err != nil {
		t.Fatal(err)
	}
	inputs := []*tensor.Dense{
		x, tmpl,
		tensor.New(tensor.WithShape(1, 4), tensor.WithBacking([]float64{62.13, 10.37, 110.71, 33.29})),
	}
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) { return score(in[0], in[2], in[1], opts) }
	o := graphtest.Options{Order: 2, Wrt: []int{2}, Seed: 3}
	if err := graphtest.Check(f, inputs, o); err != nil {
		t.Error(err)
	}
	if err := graphtest.CheckVMs(f, inputs, o); err != nil {
		t.Error(err)
	}
}
