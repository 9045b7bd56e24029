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
