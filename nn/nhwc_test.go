package nn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestNHWCHint: an NHWC input of the convolutions, BatchNorm and the
// poolings gets a layout hint naming the node and the NCHW shape; an
// NCHW input with wrong channels gets none.
func TestNHWCHint(t *testing.T) {
	g := gorgonia.NewGraph()
	node := func(name string, shape ...int) *gorgonia.Node {
		return gorgonia.NewTensor(g, tensor.Float64, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name))
	}
	vec := func(name string, n int) *gorgonia.Node {
		return gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(n), gorgonia.WithName(name))
	}
	img := node("img", 2, 28, 28, 1)   // grey NHWC
	rgb := node("rgb", 2, 16, 16, 3)   // colour NHWC
	nchw := node("nchw", 2, 5, 28, 28) // NCHW, 5 channels
	w1 := node("w1", 8, 1, 3, 3)       // Conv2d weight for 1 channel
	w3 := node("w3", 8, 3, 3, 3)       // for 3
	wt3 := node("wt3", 3, 4, 3, 3)     // ConvTranspose2d weight for 3
	stats := tensor.New(tensor.WithShape(3), tensor.Of(tensor.Float64))
	const hint = "looks NHWC [N, H, W, C]; nn takes NCHW [N, C, H, W]"
	cases := []struct {
		name string
		f    func() (*gorgonia.Node, error)
		want []string // all in the message
		no   bool     // no hint
	}{
		{"Conv2d grey", func() (*gorgonia.Node, error) { return nn.Conv2d(img, w1, nil, nn.Conv2dOpts{}) },
			[]string{"nn: Conv2d: weight.shape[1] 1, want input channels", "input img (2, 28, 28, 1) " + hint, "(2, 1, 28, 28)", "gorgonia.Transpose(x, 0, 3, 1, 2)"}, false},
		{"Conv2d rgb", func() (*gorgonia.Node, error) { return nn.Conv2d(rgb, w3, nil, nn.Conv2dOpts{}) },
			[]string{"nn: Conv2d:", "input rgb (2, 16, 16, 3) " + hint, "(2, 3, 16, 16)"}, false},
		{"Conv2d groups", func() (*gorgonia.Node, error) { return nn.Conv2d(rgb, w1, nil, nn.Conv2dOpts{Groups: 3}) },
			[]string{"nn: Conv2d:", "input rgb", hint}, false},
		{"ConvTranspose2d", func() (*gorgonia.Node, error) {
			return nn.ConvTranspose2d(rgb, wt3, nil, nn.ConvTranspose2dOpts{})
		}, []string{"nn: ConvTranspose2d: weight.shape[0] 3 differs from the input channels 16", "input rgb", hint}, false},
		{"BatchNorm weight", func() (*gorgonia.Node, error) {
			return nn.BatchNorm(rgb, vec("bn.weight", 3), vec("bn.bias", 3), nil, nil, nn.BatchNormOpts{Training: true})
		}, []string{"nn: BatchNorm: weight shape (3), want (16)", "input rgb", hint}, false},
		{"BatchNorm bias only", func() (*gorgonia.Node, error) {
			return nn.BatchNorm(rgb, nil, vec("bn.bias2", 3), nil, nil, nn.BatchNormOpts{Training: true})
		}, []string{"nn: BatchNorm: bias shape (3)", "input rgb", hint}, false},
		{"BatchNorm running stats", func() (*gorgonia.Node, error) {
			return nn.BatchNorm(rgb, nil, nil, stats, stats, nn.BatchNormOpts{})
		}, []string{"nn: BatchNorm: runningMean", "input rgb", hint}, false},
		{"MaxPool2d", func() (*gorgonia.Node, error) {
			return nn.MaxPool2d(img, nn.MaxPool2dOpts{KernelSize: [2]int{2, 2}})
		}, []string{"nn: MaxPool2d: output size 14x0 too small", "input img", hint}, false},
		{"AvgPool2d", func() (*gorgonia.Node, error) {
			return nn.AvgPool2d(rgb, nn.AvgPool2dOpts{KernelSize: [2]int{4, 4}})
		}, []string{"nn: AvgPool2d: output size", "input rgb", hint}, false},
		{"Conv2d NCHW wrong channels", func() (*gorgonia.Node, error) { return nn.Conv2d(nchw, w3, nil, nn.Conv2dOpts{}) },
			[]string{"nn: Conv2d: weight.shape[1] 3, want input channels / Groups = 5"}, true},
		{"MaxPool2d NCHW too small", func() (*gorgonia.Node, error) {
			return nn.MaxPool2d(nchw, nn.MaxPool2dOpts{KernelSize: [2]int{30, 30}})
		}, []string{"nn: MaxPool2d: output size"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.f()
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			t.Log(msg)
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q: %v", w, msg)
				}
			}
			if c.no == strings.Contains(msg, "NHWC") {
				t.Errorf("hint present: %v, want %v: %v", !c.no, !c.no, msg)
			}
		})
	}
}

// TestNHWCHintFix: the hint's in-graph fix, Conv2d of gorgonia.Transpose(x,
// 0, 3, 1, 2), is right at orders 1 and 2.
func TestNHWCHintFix(t *testing.T) {
	x := tensor.New(tensor.WithShape(1, 4, 5, 3), tensor.WithBacking(tensor.Range(tensor.Float64, 0, 60)))
	w := tensor.New(tensor.WithShape(2, 3, 2, 2), tensor.WithBacking([]float64{0.3, -0.2, 0.5, 0.1, -0.4, 0.7, 0.2, -0.1, 0.6, -0.3, 0.4, 0.05,
		-0.25, 0.15, 0.35, -0.45, 0.55, -0.05, 0.12, 0.22, -0.32, 0.42, -0.52, 0.62}))
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		b := ad.NewBuilder(in[0])
		nchw := b.Do(func() (*gorgonia.Node, error) { return gorgonia.Transpose(in[0], 0, 3, 1, 2) })
		y := b.Do(func() (*gorgonia.Node, error) { return nn.Conv2d(nchw, in[1], nil, nn.Conv2dOpts{}) })
		return b.Node(b.Square(y))
	}
	for i := range x.Float64s() {
		x.Float64s()[i] = 0.01 * float64(i*i%17)
	}
	if err := graphtest.Check(f, []*tensor.Dense{x, w}, graphtest.Options{Order: 2}); err != nil {
		t.Fatal(err)
	}
}

// TestRunErrorNamesNodeAndArgument: CrossEntropy's run-time check of a
// target through ad.RunAll: the op's words and the argument first, after
// the node and its inputs' names, without Gorgonia's VM prefix.
func TestRunErrorNamesNodeAndArgument(t *testing.T) {
	g := gorgonia.NewGraph()
	logits := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 3), gorgonia.WithName("logits"), gorgonia.WithInit(gorgonia.Zeroes()))
	labels := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(2), gorgonia.WithName("labels"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking([]int{1, 12}))))
	if _, err := nn.CrossEntropy(logits, labels, nn.CrossEntropyOpts{}); err != nil {
		t.Fatal(err)
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	err := ad.RunAll(m)
	var re *ad.RunError
	if !errors.As(err, &re) || re.Node == nil {
		t.Fatalf("ad.RunAll = %v, want an *ad.RunError with the node", err)
	}
	msg := err.Error()
	for _, w := range []string{"nn: CrossEntropy: target 12 at row 1 is outside [0, 3)", "labels", "ad: node " + re.Node.Name()} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q: %v", w, msg)
		}
	}
	if strings.Contains(msg, "Failed to") || strings.Contains(msg, "PC ") {
		t.Errorf("Gorgonia's prefix is still there: %v", msg)
	}
	t.Log(msg)
}
