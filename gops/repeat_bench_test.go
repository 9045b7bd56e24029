package gops_test

import (
	"github.com/gops-dev/gops/ad"
	"slices"
	"testing"
	"time"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BenchmarkRoIAlignRepeated runs RoIAlign's forward at the Mask R-CNN
// box-head size (BenchmarkRoIAlign's data: [2, 256, 50, 68] input, 512
// boxes, a [512, 256, 7, 7] float32 result of 25 MB) again and again on
// one TapeMachine, the graph's result read with Value() and dropped, as a
// training loop does, and reports the distribution of a run's time
// (p10-ms, p50-ms, p90-ms, max-ms): a run that allocates its result afresh
// pays Go's zeroing and, when the heap grows, the page faults of 25 MB.
// default: as built; reuse: with ad.ReuseResults(g, true).
func BenchmarkRoIAlignRepeated(b *testing.B) {
	b.Run("default", func(b *testing.B) { benchRoIAlignRepeated(b, false) })
	b.Run("reuse", func(b *testing.B) { benchRoIAlignRepeated(b, true) })
}

func benchRoIAlignRepeated(b *testing.B, reuse bool) {
	d := newRoIAlignBenchData[float32]()
	g := gorgonia.NewGraph()
	xs := []int{benchN, benchC, benchH, benchW}
	x := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(xs...), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(xs...), tensor.WithBacking(d.x))))
	boxes := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(benchK, 5), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(benchK, 5), tensor.WithBacking(d.boxes))))
	out, err := gops.RoIAlign(x, boxes, benchOpts)
	if err != nil {
		b.Fatal(err)
	}
	if reuse {
		ad.ReuseResults(g, true)
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	var runs []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		m.Reset()
		if err := m.RunAll(); err != nil {
			b.Fatal(err)
		}
		if out.Value() == nil {
			b.Fatal("no result")
		}
		runs = append(runs, time.Since(start))
	}
	slices.Sort(runs)
	at := func(q float64) float64 { return float64(runs[int(q*float64(len(runs)-1))]) / 1e6 }
	b.ReportMetric(at(0.1), "p10-ms")
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.9), "p90-ms")
	b.ReportMetric(at(1), "max-ms")
}
