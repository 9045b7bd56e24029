package detection

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestFasterRCNNVMsAndProcs: the training loss of the tiny Faster R-CNN
// (proposals and samples made in the graph) and its gradient w.r.t. the
// images agree between the TapeMachine and the LispMachine, and are
// bitwise the same for GOMAXPROCS 1, 2 and 4; Forward's detections too.
func TestFasterRCNNVMsAndProcs(t *testing.T) {
	m := tinyRCNN(t, tensor.Float64, 100, 50, 32)
	defer m.Close()
	m.Config.Randperm = identityRandperm
	tb := padded(t, 2, []Targets{
		{Boxes: newValue([]float64{2, 3, 40, 45, 10, 4, 60, 50}, 2, 4), Labels: []int{1, 2}},
		{Boxes: newValue([]float64{0, 0, 100, 70}, 1, 4), Labels: []int{3}},
	})
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		lin, losses, err := m.Loss(in[0])
		if err != nil {
			return nil, err
		}
		if err := lin.Set(tb); err != nil {
			return nil, err
		}
		return losses.Total, nil
	}
	img := randomBatch(9, 2, 64, 96)
	if err := graphtest.CheckVMs(f, []*tensor.Dense{img}, graphtest.Options{Order: 1}); err != nil {
		t.Error(err)
	}
	if err := graphtest.CheckDeterministic(f, []*tensor.Dense{img}, []int{0}, 1, 2, 4); err != nil {
		t.Error(err)
	}
	g := loadRCNNGoldens(t)[0]
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var ref string
	for _, p := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(p)
		dets, err := m.Forward(g.images(tensor.Float64))
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, d := range dets {
			for _, v := range append(f64s(d.Boxes), f64s(d.Scores)...) {
				got += fmt.Sprint(math.Float64bits(v), " ")
			}
			got += fmt.Sprint(d.Labels)
		}
		if ref == "" {
			ref = got
		} else if got != ref {
			t.Errorf("GOMAXPROCS=%d: detections differ from GOMAXPROCS=1's", p)
		}
	}
}

// TestFasterRCNNConfigAfterForward: changing Config.RPN after a Forward
// takes effect on the next (the graph holds the RPN's settings, so a
// new one is built): an RPN score threshold above every probability
// leaves no proposals, hence no detections; back to the old settings,
// the first graph gives the first detections again.
func TestFasterRCNNConfigAfterForward(t *testing.T) {
	g := loadRCNNGoldens(t)[0]
	m := g.load(t, tensor.Float64)
	defer m.Close()
	first, err := m.Forward(g.images(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	old := m.Config.RPN
	m.Config.RPN.ScoreThresh = 1.5
	dets, err := m.Forward(g.images(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range dets {
		if len(d.Labels) != 0 {
			t.Errorf("image %d: %d detections with no proposals", i, len(d.Labels))
		}
	}
	m.Config.RPN = old
	again, err := m.Forward(g.images(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	for i := range first {
		if fmt.Sprint(f64s(again[i].Scores), again[i].Labels) != fmt.Sprint(f64s(first[i].Scores), first[i].Labels) {
			t.Errorf("image %d: detections differ after restoring Config.RPN", i)
		}
	}
}
