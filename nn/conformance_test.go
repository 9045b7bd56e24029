package nn_test

import (
	"math"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/graphtest/conformance"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The conformance table of package nn: every op, in every configuration
// listed, is a row that conformance.Run puts through the checks of gops'
// table (gops/conformance_test.go): derivatives of orders 1–3 w.r.t. every
// differentiable input against finite differences (float64), TapeMachine
// == LispMachine in float32 and float64, values and gradients bitwise the
// same for GOMAXPROCS 1, 2, 3 and 8, and (once per op) batch 0.

func TestConformance(t *testing.T) { conformance.Run(t, conformanceCases()) }

// smoothTensor is a float64 tensor with smooth, distinct values, scaled.
func smoothTensor(scale float64, shape ...int) *tensor.Dense {
	d := make([]float64, tensor.Shape(shape).TotalSize())
	for i := range d {
		d[i] = scale * (math.Sin(0.37*float64(i)+0.1) + 0.05*float64(i%7))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
}

// emptyTensor is a float64 tensor with a zero-size dimension.
func emptyTensor(shape ...int) *tensor.Dense {
	return tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(shape...))
}

// cubeOf is op(sin(in[0]), in[1:]...)³: nonlinear before and after, so
// derivatives of every order are non-zero and pass through every member
// of the op's family.
func cubeOf(op func(in gorgonia.Nodes) (*gorgonia.Node, error)) graphtest.Func {
	return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		s, err := gorgonia.Sin(in[0])
		if err != nil {
			return nil, err
		}
		y, err := op(append(gorgonia.Nodes{s}, in[1:]...))
		if err != nil {
			return nil, err
		}
		return gorgonia.Cube(y)
	}
}

func conformanceCases() []conformance.Row {
	var cs []conformance.Row
	for i, c := range []struct {
		name          string
		n, cin, h, w  int
		cout, kh, kw  int
		opts          nn.Conv2dOpts
		bias          bool
		transpose     bool
		outputPadding [2]int
	}{
		{name: "3x3/pad1/bias", n: 2, cin: 2, h: 5, w: 4, cout: 3, kh: 3, kw: 3, opts: nn.Conv2dOpts{Padding: [2]int{1, 1}}, bias: true},
		{name: "stride2/dilation2", n: 1, cin: 2, h: 7, w: 6, cout: 2, kh: 2, kw: 3, opts: nn.Conv2dOpts{Stride: [2]int{2, 1}, Dilation: [2]int{2, 2}, Padding: [2]int{1, 0}}},
		{name: "depthwise", n: 1, cin: 3, h: 4, w: 4, cout: 3, kh: 3, kw: 3, opts: nn.Conv2dOpts{Groups: 3, Padding: [2]int{1, 1}}, bias: true},
		{name: "pointwise", n: 2, cin: 3, h: 3, w: 2, cout: 2, kh: 1, kw: 1, bias: true},
		{name: "stride>kernel", n: 1, cin: 1, h: 7, w: 7, cout: 2, kh: 2, kw: 2, opts: nn.Conv2dOpts{Stride: [2]int{3, 3}}},
		{name: "transpose/stride2/outpad1", n: 1, cin: 2, h: 3, w: 3, cout: 2, kh: 3, kw: 3, opts: nn.Conv2dOpts{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}, bias: true, transpose: true, outputPadding: [2]int{1, 1}},
		{name: "transpose/groups2", n: 2, cin: 4, h: 2, w: 3, cout: 2, kh: 2, kw: 2, opts: nn.Conv2dOpts{Groups: 2}, transpose: true},
	} {
		op := "Conv2d"
		groups := max(c.opts.Groups, 1)
		wshape := []int{c.cout, c.cin / groups, c.kh, c.kw}
		if c.transpose {
			op, wshape = "ConvTranspose2d", []int{c.cin, c.cout / groups, c.kh, c.kw}
		}
		apply := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			var b *gorgonia.Node
			if len(in) > 2 {
				b = in[2]
			}
			if c.transpose {
				return nn.ConvTranspose2d(in[0], in[1], b, nn.ConvTranspose2dOpts{Stride: c.opts.Stride, Padding: c.opts.Padding,
					OutputPadding: c.outputPadding, Dilation: c.opts.Dilation, Groups: c.opts.Groups})
			}
			return nn.Conv2d(in[0], in[1], b, c.opts)
		}
		in := []*tensor.Dense{smoothTensor(1, c.n, c.cin, c.h, c.w), smoothTensor(0.3, wshape...)}
		if c.bias {
			in = append(in, smoothTensor(0.2, c.cout))
		}
		row := conformance.Row{Op: op, Name: c.name, F: cubeOf(apply), In: in, Check: graphtest.Options{Seed: 5, Eps: 1e-6, RTol: 2e-5, ATol: 1e-6}, Tol32: 2e-5}
		for j := range in {
			row.Wrt = append(row.Wrt, j)
		}
		if i == 0 || c.transpose && c.bias {
			row.Bare, row.Empty = apply, append([]*tensor.Dense{emptyTensor(0, c.cin, c.h, c.w)}, in[1:]...)
		}
		cs = append(cs, row)
	}
	cs = append(cs, poolRows()...)
	cs = append(cs, gridRows()...)
	cs = append(cs, matMulRows()...)
	cs = append(cs, linearRows()...)
	return append(cs, lossRows()...)
}

// lossRows are Softmax's, LogSoftmax's and the losses' rows.
func lossRows() []conformance.Row {
	x := smoothTensor(2, 3, 4)
	y := smoothTensor(0.5, 3, 4)
	target := []int{2, 0, 3}
	ce := func(opts nn.CrossEntropyOpts) func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			tn := gorgonia.NewTensor(in[0].Graph(), tensor.Int, 1, gorgonia.WithShape(3), gorgonia.WithName("target"),
				gorgonia.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking(append([]int(nil), target...)))))
			if len(in) > 1 {
				opts.Weight = in[1]
			}
			return nn.CrossEntropy(in[0], tn, opts)
		}
	}
	ignore := 0
	var cs []conformance.Row
	for _, c := range []struct {
		op, name string
		f        graphtest.Func
		in       []*tensor.Dense
	}{
		{"Softmax", "axis1", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Softmax(in[0], 1) }, []*tensor.Dense{x}},
		{"Softmax", "axis0", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Softmax(in[0], 0) }, []*tensor.Dense{x}},
		{"LogSoftmax", "axis-1", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.LogSoftmax(in[0], -1) }, []*tensor.Dense{x}},
		{"CrossEntropy", "mean", ce(nn.CrossEntropyOpts{}), []*tensor.Dense{x}},
		{"CrossEntropy", "weight/smoothing/ignore", ce(nn.CrossEntropyOpts{IgnoreIndex: &ignore, LabelSmoothing: 0.2}),
			[]*tensor.Dense{x, smoothTensor(0.3, 4)}},
		{"CrossEntropy", "none", ce(nn.CrossEntropyOpts{Reduction: "none", LabelSmoothing: 0.1}), []*tensor.Dense{x}},
		{"MSELoss", "mean", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.MSELoss(in[0], in[1], "") }, []*tensor.Dense{x, y}},
		{"SmoothL1Loss", "beta5", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.SmoothL1Loss(in[0], in[1], 5, "sum") }, []*tensor.Dense{x, y}},
		{"BinaryCrossEntropyWithLogits", "weight/pos", func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.BinaryCrossEntropyWithLogits(in[0], in[1], nn.BCEWithLogitsOpts{Weight: in[2], PosWeight: in[3]})
		}, []*tensor.Dense{x, smoothTensor(0.4, 3, 4), smoothTensor(0.5, 4), smoothTensor(0.6, 4)}},
		{"LeakyReLU", "0.1", cubeOf(func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.LeakyReLU(in[0], 0.1) }), []*tensor.Dense{x}},
		{"SiLU", "", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.SiLU(in[0]) }, []*tensor.Dense{x}},
		{"GELU", "none", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.GELU(in[0], "none") }, []*tensor.Dense{x}},
		{"GELU", "tanh", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.GELU(in[0], "tanh") }, []*tensor.Dense{x}},
		{"Concat", "axis1", cubeOf(func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Concat(1, in[0], in[1]) }),
			[]*tensor.Dense{x, smoothTensor(0.7, 3, 2)}},
		{"Narrow", "axis1", cubeOf(func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Narrow(in[0], 1, 1, 2) }), []*tensor.Dense{x}},
		{"Permute", "021", cubeOf(func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Permute(in[0], 0, 2, 1) }),
			[]*tensor.Dense{smoothTensor(0.9, 2, 3, 2)}},
		{"Flatten", "0", cubeOf(func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Flatten(in[0], 0) }), []*tensor.Dense{x}},
		{"GroupNorm", "groups2/affine", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.GroupNorm(in[0], 2, in[1], in[2], 0) },
			[]*tensor.Dense{smoothTensor(1.5, 2, 4, 2, 2), smoothTensor(0.5, 4), smoothTensor(0.3, 4)}},
		{"BatchNorm", "training/affine", func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.BatchNorm(in[0], in[1], in[2], nil, nil, nn.BatchNormOpts{Training: true})
		}, []*tensor.Dense{smoothTensor(1.5, 3, 2, 2, 2), smoothTensor(0.5, 2), smoothTensor(0.3, 2)}},
		{"BatchNorm", "training/affine/mask", func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			m := gorgonia.NewTensor(in[0].Graph(), in[0].Dtype(), 1, gorgonia.WithShape(3), gorgonia.WithName("mask"),
				gorgonia.WithValue(maskOf(in[0].Dtype(), 1, 0, 1)))
			return nn.BatchNorm(in[0], in[1], in[2], nil, nil, nn.BatchNormOpts{Training: true, Mask: m})
		}, []*tensor.Dense{smoothTensor(1.5, 3, 2, 2, 2), smoothTensor(0.5, 2), smoothTensor(0.3, 2)}},
		{"FrozenBatchNorm2d", "eps1e-5/all", func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.FrozenBatchNorm2d(in[0], in[1], in[2], in[3], gorgonia.Must(gorgonia.Exp(in[4])), 1e-5) // (a positive variance)
		}, []*tensor.Dense{smoothTensor(1.5, 2, 3, 2, 2), smoothTensor(0.5, 3), smoothTensor(0.3, 3), smoothTensor(0.4, 3), smoothTensor(0.6, 3)}},
		{"LayerNorm", "last/affine", func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.LayerNorm(in[0], []int{4}, in[1], in[2], 0.01)
		},
			[]*tensor.Dense{x, smoothTensor(0.5, 4), smoothTensor(0.3, 4)}},
	} {
		row := conformance.Row{Op: c.op, Name: c.name, F: c.f, In: c.in, Check: graphtest.Options{Seed: 7}, Tol32: 2e-5}
		for j := range c.in {
			row.Wrt = append(row.Wrt, j)
		}
		cs = append(cs, row)
	}
	return cs
}

// poolRows are the poolings' rows, w.r.t. the input.
func poolRows() []conformance.Row {
	var cs []conformance.Row
	for _, c := range []struct {
		op, name string
		f        func(x *gorgonia.Node) (*gorgonia.Node, error)
	}{
		{"MaxPool2d", "k3s2p1/ceil", func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return nn.MaxPool2d(x, nn.MaxPool2dOpts{KernelSize: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, CeilMode: true})
		}},
		{"MaxPool2d", "k2/dilation2", func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return nn.MaxPool2d(x, nn.MaxPool2dOpts{KernelSize: [2]int{2, 2}, Stride: [2]int{1, 2}, Dilation: [2]int{2, 1}})
		}},
		{"AvgPool2d", "k3s2p1/ceil/exclude", func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return nn.AvgPool2d(x, nn.AvgPool2dOpts{KernelSize: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, CeilMode: true, ExcludePad: true})
		}},
		{"AvgPool2d", "k2/divisor3", func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return nn.AvgPool2d(x, nn.AvgPool2dOpts{KernelSize: [2]int{2, 2}, DivisorOverride: 3})
		}},
		{"AdaptiveMaxPool2d", "5x6->3x4", func(x *gorgonia.Node) (*gorgonia.Node, error) { return nn.AdaptiveMaxPool2d(x, [2]int{3, 4}) }},
		{"AdaptiveAvgPool2d", "5x6->3x4", func(x *gorgonia.Node) (*gorgonia.Node, error) { return nn.AdaptiveAvgPool2d(x, [2]int{3, 4}) }},
		{"Interpolate", "nearest/x2", func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return nn.Interpolate(x, nn.InterpolateOpts{ScaleFactor: [2]float64{2, 2}})
		}},
		{"Interpolate", "bilinear/7x4/align", func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return nn.Interpolate(x, nn.InterpolateOpts{Size: [2]int{7, 4}, Mode: "bilinear", AlignCorners: true})
		}},
		{"Interpolate", "bilinear/x1.5", func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return nn.Interpolate(x, nn.InterpolateOpts{ScaleFactor: [2]float64{1.5, 1.5}, Mode: "bilinear"})
		}},
	} {
		bare := func(in gorgonia.Nodes) (*gorgonia.Node, error) { return c.f(in[0]) }
		cs = append(cs, conformance.Row{Op: c.op, Name: c.name, F: cubeOf(bare), Bare: bare, In: []*tensor.Dense{smoothTensor(1, 2, 2, 5, 6)},
			Wrt: []int{0}, Check: graphtest.Options{Seed: 6}, Tol32: 1e-6, Empty: []*tensor.Dense{emptyTensor(0, 2, 5, 6)}})
	}
	return cs
}

// gridRows are GridSample's rows, w.r.t. the input and the grid (sample
// points away from the kinks), and AffineGrid's, w.r.t. theta through
// GridSample.
func gridRows() []conformance.Row {
	var cs []conformance.Row
	for i, opts := range []nn.GridSampleOpts{{}, {PaddingMode: "border", AlignCorners: true}, {PaddingMode: "reflection"},
		{Mode: "nearest", PaddingMode: "reflection", AlignCorners: true}, {Mode: "bicubic", PaddingMode: "border"}} {
		bare := func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.GridSample(in[0], in[1], opts) }
		cs = append(cs, conformance.Row{Op: "GridSample", Name: gridName(opts), F: cubeOf(bare), Bare: bare,
			In:  []*tensor.Dense{smoothTensor(1, 2, 2, 4, 5), kinkFreeGrid(uint64(20+i), 2, 3, 2, 4, 5, opts)},
			Wrt: []int{0, 1}, Check: graphtest.Options{Seed: 8, RTol: 2e-5, ATol: 1e-6}, Tol32: 1e-5,
			Empty: []*tensor.Dense{emptyTensor(0, 2, 4, 5), emptyTensor(0, 3, 2, 2)}})
	}
	affine := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		grid, err := nn.AffineGrid(in[1], [4]int{2, 2, 3, 4}, false)
		if err != nil {
			return nil, err
		}
		return nn.GridSample(in[0], grid, nn.GridSampleOpts{PaddingMode: "border"})
	}
	theta := tensor.New(tensor.WithShape(2, 2, 3), tensor.WithBacking([]float64{0.77, -0.31, 0.113, 0.29, 0.81, -0.057, -0.93, 0.21, 0.071, -0.17, 1.13, 0.33}))
	return append(cs, conformance.Row{Op: "AffineGrid", Name: "into GridSample/border", F: cubeOf(affine), In: []*tensor.Dense{smoothTensor(1, 2, 2, 4, 5), theta},
		Wrt: []int{0, 1}, Check: graphtest.Options{Seed: 9, RTol: 2e-5, ATol: 1e-6}, Tol32: 1e-5})
}
