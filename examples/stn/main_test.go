package main

import (
	"io"
	"math"
	"math/rand"
	"testing"

	"github.com/gops-dev/gops/datasets/mnist"
)

// A short run: ∂P w.r.t. the localisation parameters (through GridSample's
// grid) agrees with central differences and is not trivially zero, and
// training on L + λP lowers the loss on the training digits.
func TestRun(t *testing.T) {
	c := config{steps: 40, lambda: 1, lr: 0.01, train: 256, test: 128, batch: 32, seed: 1}
	res, err := run(c, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !(res.maxRelErr < 1e-4) {
		t.Errorf("∂P vs central differences: max relative error %g, want < 1e-4", res.maxRelErr)
	}
	for i, a := range res.dP {
		if a == 0 {
			t.Errorf("∂P[%d] is exactly 0: the check would be vacuous", i)
		}
	}
	if !(res.lossAfter < 0.9*res.lossBefore) {
		t.Errorf("training loss went from %g to %g, want at least 10%% lower", res.lossBefore, res.lossAfter)
	}
	if math.IsNaN(res.pLast) || res.pFirst <= 0 {
		t.Errorf("penalty %g at the first step, %g at the last", res.pFirst, res.pLast)
	}
	t.Logf("loss %.4f → %.4f, held-out accuracy %.1f%% → %.1f%%, P %.3g → %.3g, ∂P max rel. err %.1e",
		res.lossBefore, res.lossAfter, 100*res.accBefore, 100*res.accAfter, res.pFirst, res.pLast, res.maxRelErr)
}

// The identity θ (the localisation head's initial bias, with its weight
// zeroed) makes the transformer an O×O resampling of the whole digit: the
// graph's θ is exactly the identity for every image.
func TestIdentityStart(t *testing.T) {
	ps := newParams(rand.New(rand.NewSource(3)))
	for i := range ps[locFCW].data {
		ps[locFCW].data[i] = 0
	}
	gr, err := newGraph(ps, 2, false, 0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gr.m.Close()
	for i := range gr.x {
		gr.x[i] = float64(i%7) / 7
	}
	if err := gr.Eval(); err != nil {
		t.Fatal(err)
	}
	theta := (*gr.vals["theta"]).Data().([]float64)
	for i, want := range []float64{1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0} {
		if theta[i] != want {
			t.Fatalf("θ = %v, want the identity for both images", theta)
		}
	}
}

// distort keeps the ink inside the frame for most digits and labels
// unchanged.
func TestDistort(t *testing.T) {
	set := &mnist.Dataset{Pixels: make([]byte, S*S), Labels: []int{7}}
	for i := 10; i < 18; i++ {
		for j := 10; j < 18; j++ {
			set.Pixels[i*S+j] = 255
		}
	}
	d := distort(set, 1, rand.New(rand.NewSource(5)))
	ink := 0.0
	for _, v := range d.images[0] {
		ink += v
	}
	// the 8×8 square scaled by 1/s ∈ [1/1.1, 1/0.75]: area 64/1.21 to 64/0.5625
	if d.labels[0] != 7 || ink < 64/1.21*0.9 || ink > 64/0.5625*1.1 {
		t.Errorf("label %d, ink %g", d.labels[0], ink)
	}
}
