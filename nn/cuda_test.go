//go:build cuda

package nn_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cuda/cudatest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GPU tests, as gops' (gops/cuda_test.go): run only on a machine with an
// NVIDIA GPU (gorgonia.org/cu's init exits the process where there is
// none); scripts/cuda-check bundles the binary with run.sh. Each case
// builds f, cost = Σ R ⊙ f, its gradient w.r.t. the inputs (order 1) and
// the gradient of Σ R2 ⊙ that gradient (order 2), runs the graph on
// Gorgonia's CUDA TapeMachine, and compares f and both orders with a CPU
// evaluation of the whole graph (each node's Do in topological order):
// float64 within 1e-10 relative, float32 within 1e-4.

// Gorgonia ships no PTX for its own elementwise kernels: the bundle holds
// them, found through GOPS_GORGONIA_PTX (cudatest.RegisterGorgoniaPTX).
func init() {
	if err := cudatest.RegisterGorgoniaPTX(); err != nil {
		panic(err) // a test binary without its kernels cannot run
	}
}

// gpu is the GPU check of a graph (cudatest.Checker).
var gpu = cudatest.Checker{Grad: ad.Grad, Floats: valueFloats}

// gpuCase builds f from the input nodes xs (their shapes are shapes) and
// differentiates w.r.t. all of them.
type gpuCase struct {
	name   string
	shapes []tensor.Shape
	f      func(xs gorgonia.Nodes) (*gorgonia.Node, error)
}

func gpuCases() []gpuCase {
	s4 := tensor.Shape{2, 4, 7, 6}
	one := func(f func(x *gorgonia.Node) (*gorgonia.Node, error)) func(gorgonia.Nodes) (*gorgonia.Node, error) {
		return func(xs gorgonia.Nodes) (*gorgonia.Node, error) { return f(xs[0]) }
	}
	return []gpuCase{
		{"Conv2d", []tensor.Shape{s4, {6, 2, 3, 2}, {6}}, func(xs gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.Conv2d(xs[0], xs[1], xs[2], nn.Conv2dOpts{Stride: [2]int{2, 1}, Padding: [2]int{1, 1}, Dilation: [2]int{1, 2}, Groups: 2})
		}},
		{"Conv2dPointwise", []tensor.Shape{s4, {3, 4, 1, 1}}, func(xs gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.Conv2d(xs[0], xs[1], nil, nn.Conv2dOpts{})
		}},
		{"ConvTranspose2d", []tensor.Shape{s4, {4, 3, 3, 3}, {3}}, func(xs gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.ConvTranspose2d(xs[0], xs[1], xs[2], nn.ConvTranspose2dOpts{Stride: [2]int{2, 2}, Padding: [2]int{1, 0}, OutputPadding: [2]int{1, 0}})
		}},
		{"Linear", []tensor.Shape{{5, 7}, {3, 7}, {3}}, func(xs gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Linear(xs[0], xs[1], xs[2]) }},
		{"Linear3d/nobias", []tensor.Shape{{2, 3, 4}, {6, 4}}, func(xs gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Linear(xs[0], xs[1], nil) }},
		{"MaxPool2d", []tensor.Shape{s4}, one(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return nn.MaxPool2d(x, nn.MaxPool2dOpts{KernelSize: [2]int{3, 2}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, Dilation: [2]int{1, 2}, CeilMode: true})
		})},
		{"AdaptiveMaxPool2d", []tensor.Shape{s4}, one(func(x *gorgonia.Node) (*gorgonia.Node, error) { return nn.AdaptiveMaxPool2d(x, [2]int{3, 4}) })},
		{"AvgPool2d", []tensor.Shape{s4}, one(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return nn.AvgPool2d(x, nn.AvgPool2dOpts{KernelSize: [2]int{3, 3}, Stride: [2]int{2, 1}, Padding: [2]int{1, 1}, CeilMode: true, ExcludePad: true})
		})},
		{"AdaptiveAvgPool2d", []tensor.Shape{s4}, one(func(x *gorgonia.Node) (*gorgonia.Node, error) { return nn.AdaptiveAvgPool2d(x, [2]int{4, 4}) })},
		{"InterpolateBilinear", []tensor.Shape{s4}, one(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return nn.Interpolate(x, nn.InterpolateOpts{Size: [2]int{10, 5}, Mode: "bilinear"})
		})},
		{"InterpolateNearest", []tensor.Shape{s4}, one(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return nn.Interpolate(x, nn.InterpolateOpts{ScaleFactor: [2]float64{2, 1.5}})
		})},
		// Softmax and LogSoftmax's gradients run SoftmaxGrad and LogSoftmaxGrad
		// (order 1 and 2), along a strided axis and a contiguous one.
		{"Softmax", []tensor.Shape{{3, 5, 4}}, one(func(x *gorgonia.Node) (*gorgonia.Node, error) { return nn.Softmax(x, 1) })},
		{"LogSoftmax", []tensor.Shape{{3, 5, 4}}, one(func(x *gorgonia.Node) (*gorgonia.Node, error) { return nn.LogSoftmax(x, -1) })},
		{"SmoothL1Loss", []tensor.Shape{{4, 5}, {4, 5}}, func(xs gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.SmoothL1Loss(xs[0], xs[1], 0.5, "none")
		}},
		{"BCEWithLogits", []tensor.Shape{{4, 5}, {4, 5}, {5}}, func(xs gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.BinaryCrossEntropyWithLogits(xs[0], xs[1], nn.BCEWithLogitsOpts{PosWeight: xs[2], Reduction: "none"})
		}},
		{"LeakyReLU", []tensor.Shape{{3, 7}}, one(func(x *gorgonia.Node) (*gorgonia.Node, error) { return nn.LeakyReLU(x, 0.1) })},
		{"SiLU", []tensor.Shape{{3, 7}}, one(nn.SiLU)},
		{"GELU", []tensor.Shape{{3, 7}}, one(func(x *gorgonia.Node) (*gorgonia.Node, error) { return nn.GELU(x, "") })},
		{"Concat", []tensor.Shape{{2, 3, 4}, {2, 2, 4}}, func(xs gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Concat(1, xs...) }},
		{"Narrow", []tensor.Shape{{2, 5, 3}}, one(func(x *gorgonia.Node) (*gorgonia.Node, error) { return nn.Narrow(x, 1, 1, 3) })},
		{"GroupNorm", []tensor.Shape{s4, {4}, {4}}, func(xs gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.GroupNorm(xs[0], 2, xs[1], xs[2], 0)
		}},
		{"BatchNorm", []tensor.Shape{s4, {4}, {4}}, func(xs gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.BatchNorm(xs[0], xs[1], xs[2], nil, nil, nn.BatchNormOpts{Training: true})
		}},
	}
}

// TestGPUOps runs every case of gpuCases in float64 and float32.
func TestGPUOps(t *testing.T) {
	if n, err := cu.NumDevices(); err != nil || n == 0 {
		t.Skip("no CUDA device")
	}
	for _, c := range gpuCases() {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) { gpuCheck(t, dt, c) })
		}
	}
}

// TestGPUCrossEntropy: the picks by an integer target, an ignored row
// included, and label smoothing.
func TestGPUCrossEntropy(t *testing.T) {
	if n, err := cu.NumDevices(); err != nil || n == 0 {
		t.Skip("no CUDA device")
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			gpuCheck(t, dt, gpuCase{"CrossEntropy", []tensor.Shape{{4, 5}, {5}}, func(xs gorgonia.Nodes) (*gorgonia.Node, error) {
				tg := gorgonia.NewTensor(xs[0].Graph(), tensor.Int, 1, gorgonia.WithShape(4), gorgonia.WithName("target"),
					gorgonia.WithValue(tensor.New(tensor.WithShape(4), tensor.WithBacking([]int{1, 4, -100, 0}))))
				return nn.CrossEntropy(xs[0], tg, nn.CrossEntropyOpts{Weight: xs[1], LabelSmoothing: 0.1, Reduction: "none"})
			}})
		})
	}
}

// gpuCheck builds the case, its gradients of order 1 and 2, runs the graph
// on the GPU and compares f and the gradients with the CPU's.
func gpuCheck(t *testing.T, dt tensor.Dtype, c gpuCase) {
	t.Helper()
	rng := rand.New(rand.NewSource(7))
	g := gorgonia.NewGraph()
	xs := make(gorgonia.Nodes, len(c.shapes))
	for i, s := range c.shapes {
		xs[i] = cudatest.Input(g, fmt.Sprintf("x%d", i), cudatest.Random(rng, dt, s))
	}
	f, err := c.f(xs)
	if err != nil {
		t.Fatal(err)
	}
	g1, g2 := gpu.Grads(t, g, rng, dt, f, xs)
	gpu.Compare(t, dt, g, f, xs, g1, g2)
}
