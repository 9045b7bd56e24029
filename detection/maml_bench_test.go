package detection

import (
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/meta"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// mamlBenchBoxes are the ground truth of BenchmarkMAMLStep's images, as
// bench_torchvision.py's MAML_BOXES: per image (x1, y1, x2, y2, label).
var mamlBenchBoxes = [][][5]float64{
	{{20, 30, 120, 140, 1}, {150, 60, 230, 200, 5}},
	{{10, 10, 250, 250, 3}},
	{{40, 40, 90, 80, 7}, {100, 120, 200, 240, 2}, {5, 180, 60, 250, 1}},
	{{60, 20, 180, 160, 4}},
}

// mamlBenchTargets are the padded targets of mamlBenchBoxes[from:from+2].
func mamlBenchTargets(b *testing.B, from int) TargetBatch {
	ts := make([]Targets, 2)
	for i := range ts {
		var flat []float64
		var labels []int
		for _, x := range mamlBenchBoxes[from+i] {
			flat = append(flat, x[:4]...)
			labels = append(labels, int(x[4]))
		}
		ts[i] = Targets{Boxes: newValue(flat, len(labels), 4), Labels: labels}
	}
	tb, err := PadTargets(ts, 3)
	if err != nil {
		b.Fatal(err)
	}
	return tb
}

// BenchmarkMAMLStep times one second-order MAML step on a random-init
// detector on a ResNet-18 FPN (benchDetector, float32, 256×256): one
// inner SGD step (α 0.01) on a support batch of two images, the query
// loss of two other images at the adapted parameters and its
// meta-gradient w.r.t. every trainable parameter through the inner
// gradient; one run of the compiled graph (ad.ReuseResults), as
// bench_torchvision.py's MAMLStep/KIND/resnet18 (torch.autograd.grad
// with create_graph=True, then the meta-gradient's backward). KIND
// fcos, retinanet or fasterrcnn (mamlBenchBoxes' labels are all >= 1, as
// Faster R-CNN needs; torch's side replaces torchvision's roi_align,
// which has no double backward, by a pure-torch one).
func BenchmarkMAMLStep(b *testing.B) {
	for _, kind := range []string{"fcos", "retinanet", "fasterrcnn"} {
		b.Run(kind+"/resnet18", func(b *testing.B) {
			m := benchDetector(b, kind, "resnet18", 256)
			defer m.Close()
			g := gorgonia.NewGraph()
			ad.ReuseResults(g, true)
			rng := rand.New(rand.NewPCG(1, 1))
			batch := func(name string) *gorgonia.Node {
				data := make([]float32, 2*3*256*256)
				for i := range data {
					data[i] = rng.Float32()
				}
				x := tensor.New(tensor.WithShape(2, 3, 256, 256), tensor.WithBacking(data))
				return gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(2, 3, 256, 256), gorgonia.WithValue(x), gorgonia.WithName(name))
			}
			task, err := NewMAMLTask(m.(Trainable), batch("support"), batch("query"), meta.MAMLOpts{InnerLR: 0.01})
			if err != nil {
				b.Fatal(err)
			}
			if err := task.SetTargets(mamlBenchTargets(b, 0), mamlBenchTargets(b, 2)); err != nil {
				b.Fatal(err)
			}
			vm, err := ad.NewTapeMachine(g)
			if err != nil {
				b.Fatal(err)
			}
			defer vm.Close()
			step := func() error {
				defer vm.Reset()
				return ad.RunAll(vm)
			}
			timeSteps(b, step)
		})
	}
}
