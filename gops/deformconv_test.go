package gops_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/openblas"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// scaledTensor is rangeTensor times s plus shift.
func scaledTensor(s, shift float64, shape ...int) *tensor.Dense {
	t := rangeTensor(shape...)
	if t.Shape().TotalSize() == 0 {
		return t // Data() of an empty tensor panics
	}
	d := t.Data().([]float64)
	for i := range d {
		d[i] = s*d[i] + shift
	}
	return t
}

// deformCase is one configuration of DeformConv2d for the numeric checks.
type deformCase struct {
	name                   string
	n, cin, h, w           int
	cout, groups, kh, kw   int
	og                     int
	mask, bias             bool
	opts                   gops.DeformConv2dOpts
	offsetScale, maskShift float64
}

func (c deformCase) outSize() (int, int) {
	s, p, d := c.opts.Stride, c.opts.Padding, c.opts.Dilation
	for i := range s {
		s[i], d[i] = max(s[i], 1), max(d[i], 1)
	}
	return (c.h+2*p[0]-d[0]*(c.kh-1)-1)/s[0] + 1, (c.w+2*p[1]-d[1]*(c.kw-1)-1)/s[1] + 1
}

// inputs returns input, offset, weight[, bias][, mask] values.
func (c deformCase) inputs() []*tensor.Dense {
	ho, wo := c.outSize()
	K := c.kh * c.kw
	in := []*tensor.Dense{
		scaledTensor(1, 0, c.n, c.cin, c.h, c.w),
		scaledTensor(c.offsetScale, 0.13, c.n, 2*c.og*K, ho, wo),
		scaledTensor(0.5, 0, c.cout, c.cin/c.groups, c.kh, c.kw),
	}
	if c.bias {
		in = append(in, scaledTensor(0.3, 0.1, c.cout))
	}
	if c.mask {
		in = append(in, scaledTensor(0.4, c.maskShift, c.n, c.og*K, ho, wo))
	}
	return in
}

// f is sin ∘ DeformConv2d, so that every order is non-zero.
func (c deformCase) f(in gorgonia.Nodes) (*gorgonia.Node, error) {
	y, err := c.apply(in)
	if err != nil {
		return nil, err
	}
	return gorgonia.Sin(y)
}

// apply is DeformConv2d on the case's inputs (input, offset, weight, then
// bias and mask when the case has them).
func (c deformCase) apply(in gorgonia.Nodes) (*gorgonia.Node, error) {
	var bias, mask *gorgonia.Node
	i := 3
	if c.bias {
		bias = in[i]
		i++
	}
	if c.mask {
		mask = in[i]
	}
	return gops.DeformConv2d(in[0], in[1], in[2], bias, mask, c.opts)
}

var deformCases = []deformCase{
	{name: "v1", n: 1, cin: 2, h: 4, w: 5, cout: 2, groups: 1, kh: 2, kw: 2, og: 1, offsetScale: 0.7},
	{name: "v2/bias", n: 2, cin: 2, h: 4, w: 4, cout: 2, groups: 1, kh: 2, kw: 2, og: 1, mask: true, bias: true, offsetScale: 0.7, maskShift: 0.8},
	{name: "v2/groups2/og2/stride/pad/dil", n: 1, cin: 4, h: 5, w: 6, cout: 2, groups: 2, kh: 2, kw: 3, og: 2, mask: true,
		opts: gops.DeformConv2dOpts{Stride: [2]int{2, 1}, Padding: [2]int{1, 0}, Dilation: [2]int{1, 2}}, offsetScale: 1.3, maskShift: 0.6},
	{name: "v1/outside", n: 1, cin: 1, h: 3, w: 3, cout: 1, groups: 1, kh: 2, kw: 2, og: 1, opts: gops.DeformConv2dOpts{Padding: [2]int{1, 1}}, offsetScale: 2.2},
}

// DeformConv2d with a bias (SwapAxes01AddBias) on odd shapes, rows of the
// conformance table:
// unit sizes (inner = 1, a = 1, b = 1), kernels larger than the input with
// padding, strides larger than the input, offset groups vs groups, and the
// channels-last sampling path (>= 16 channels per offset group).
var oddDeformCases = []deformCase{
	{name: "1x1/all-ones", n: 1, cin: 1, h: 1, w: 1, cout: 1, groups: 1, kh: 1, kw: 1, og: 1, bias: true, offsetScale: 0.3},
	{name: "cout1/n1/L=6", n: 1, cin: 2, h: 2, w: 3, cout: 1, groups: 1, kh: 1, kw: 1, og: 2, bias: true, offsetScale: 0.6},
	{name: "cout1/n2/L=4", n: 2, cin: 1, h: 3, w: 3, cout: 1, groups: 1, kh: 2, kw: 2, og: 1, bias: true, mask: true, offsetScale: 0.6, maskShift: 0.5},
	{name: "L=1/cout1/n3", n: 3, cin: 2, h: 2, w: 2, cout: 1, groups: 1, kh: 2, kw: 2, og: 1, bias: true, mask: true, offsetScale: 0.6, maskShift: 0.5},
	{name: "kernel>input/pad", n: 1, cin: 1, h: 1, w: 1, cout: 2, groups: 1, kh: 3, kw: 3, og: 1, bias: true,
		opts: gops.DeformConv2dOpts{Padding: [2]int{1, 1}}, offsetScale: 0.9},
	{name: "stride>input", n: 2, cin: 2, h: 2, w: 3, cout: 2, groups: 2, kh: 1, kw: 2, og: 1, bias: true, mask: true,
		opts: gops.DeformConv2dOpts{Stride: [2]int{5, 7}, Padding: [2]int{1, 1}}, offsetScale: 1.1, maskShift: 0.3},
	{name: "og>groups", n: 1, cin: 4, h: 3, w: 3, cout: 2, groups: 1, kh: 2, kw: 2, og: 4, bias: true, mask: true, offsetScale: 0.8, maskShift: 0.4},
	{name: "groups>og", n: 1, cin: 4, h: 3, w: 3, cout: 4, groups: 4, kh: 2, kw: 2, og: 2, bias: true, offsetScale: 0.8},
}

// The channels-last sampling path (32 channels, 2 offset groups of 16, 4
// conv groups; and 1 offset group over 2 conv groups), with a bias: rows of
// the conformance table.
var channelsLastDeformCases = []deformCase{
	{name: "og2/groups4", n: 2, cin: 32, h: 3, w: 4, cout: 4, groups: 4, kh: 2, kw: 2, og: 2, bias: true, mask: true,
		opts: gops.DeformConv2dOpts{Padding: [2]int{1, 0}}, offsetScale: 0.9, maskShift: 0.3},
	{name: "og1/groups2/L>64", n: 1, cin: 16, h: 9, w: 9, cout: 2, groups: 2, kh: 1, kw: 1, og: 1, bias: true, offsetScale: 1.7},
}

// Zero offsets and no mask (or a mask of ones) give ordinary convolution:
// compare with Gorgonia's Conv2d forward.
func TestDeformConv2dZeroOffsetIsConv2d(t *testing.T) {
	for _, withMask := range []bool{false, true} {
		t.Run(fmt.Sprint("mask=", withMask), func(t *testing.T) {
			g := gorgonia.NewGraph()
			xv := scaledTensor(1, 0, 2, 3, 6, 7)
			wv := scaledTensor(0.5, 0, 4, 3, 3, 2)
			pad, stride, dil := []int{1, 0}, []int{2, 1}, []int{1, 2}
			ho := (6+2-3)/2 + 1
			wo := (7-(2*(2-1)+1))/1 + 1
			x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 3, 6, 7), gorgonia.WithValue(xv), gorgonia.WithName("x"))
			w := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(4, 3, 3, 2), gorgonia.WithValue(wv), gorgonia.WithName("w"))
			off := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 12, ho, wo), gorgonia.WithName("off"),
				gorgonia.WithValue(tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(2, 12, ho, wo))))
			var mask *gorgonia.Node
			if withMask {
				mask = gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 6, ho, wo), gorgonia.WithName("mask"), gorgonia.WithInit(gorgonia.Ones()))
			}
			y, err := gops.DeformConv2d(x, off, w, nil, mask, gops.DeformConv2dOpts{Stride: [2]int{2, 1}, Padding: [2]int{1, 0}, Dilation: [2]int{1, 2}})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := gorgonia.Conv2d(x, w, tensor.Shape{3, 2}, pad, stride, dil)
			if err != nil {
				t.Fatal(err)
			}
			if !y.Shape().Eq(ref.Shape()) {
				t.Fatalf("shape %v, Conv2d %v", y.Shape(), ref.Shape())
			}
			got, err := graphtest.Eval(g, y, ref)
			if err != nil {
				t.Fatal(err)
			}
			a, b := got[0], got[1]
			for i := range a {
				if math.Abs(a[i]-b[i]) > 1e-12*(1+math.Abs(b[i])) {
					t.Fatalf("element %d: %v, Conv2d %v", i, a[i], b[i])
				}
			}
		})
	}
}

func TestDeformConv2dBadInput(t *testing.T) {
	type shapes struct{ x, off, w, b, m []int }
	good := shapes{x: []int{2, 4, 5, 5}, off: []int{2, 18, 3, 3}, w: []int{6, 2, 3, 3}, b: []int{6}, m: []int{2, 9, 3, 3}}
	cases := []struct {
		name   string
		s      shapes
		opts   gops.DeformConv2dOpts
		dtypeM tensor.Dtype
		want   string
	}{
		{"ok", good, gops.DeformConv2dOpts{}, tensor.Float64, ""},
		{"input rank", shapes{[]int{4, 5, 5}, good.off, good.w, good.b, good.m}, gops.DeformConv2dOpts{}, tensor.Float64, "input must have rank 4"},
		{"groups", shapes{good.x, good.off, []int{6, 3, 3, 3}, good.b, good.m}, gops.DeformConv2dOpts{}, tensor.Float64, "input channels 4 not divisible by weight.shape[1] = 3"},
		{"cout groups", shapes{good.x, good.off, []int{5, 2, 3, 3}, []int{5}, good.m}, gops.DeformConv2dOpts{}, tensor.Float64, "output channels 5 (weight.shape[0]) not divisible by groups = 2"},
		{"offset channels", shapes{good.x, []int{2, 17, 3, 3}, good.w, good.b, good.m}, gops.DeformConv2dOpts{}, tensor.Float64, "offset channels 17 not a positive multiple of 2·kh·kw = 18"},
		{"offset groups", shapes{good.x, []int{2, 54, 3, 3}, good.w, good.b, []int{2, 27, 3, 3}}, gops.DeformConv2dOpts{}, tensor.Float64, "input channels 4 not divisible by offset groups 3"},
		{"offset spatial", shapes{good.x, []int{2, 18, 3, 4}, good.w, good.b, good.m}, gops.DeformConv2dOpts{}, tensor.Float64, "offset shape (2, 18, 3, 4), want (2, 18, 3, 3)"},
		{"offset batch", shapes{good.x, []int{1, 18, 3, 3}, good.w, good.b, good.m}, gops.DeformConv2dOpts{}, tensor.Float64, "offset shape (1, 18, 3, 3), want (2, 18, 3, 3)"},
		{"mask channels", shapes{good.x, good.off, good.w, good.b, []int{2, 18, 3, 3}}, gops.DeformConv2dOpts{}, tensor.Float64, "mask shape (2, 18, 3, 3), want (2, 9, 3, 3)"},
		{"bias", shapes{good.x, good.off, good.w, []int{5}, good.m}, gops.DeformConv2dOpts{}, tensor.Float64, "bias shape (5), want [6]"},
		{"kernel too large", shapes{[]int{2, 4, 2, 5}, good.off, good.w, good.b, good.m}, gops.DeformConv2dOpts{}, tensor.Float64, "dilated kernel 3x3 larger than padded input 2x5"},
		{"dilated kernel too large", good, gops.DeformConv2dOpts{Dilation: [2]int{3, 1}}, tensor.Float64, "dilated kernel 7x3 larger than padded input 5x5"},
		{"negative padding", good, gops.DeformConv2dOpts{Padding: [2]int{-1, 0}}, tensor.Float64, "negative Padding"},
		{"negative stride", good, gops.DeformConv2dOpts{Stride: [2]int{1, -2}}, tensor.Float64, "negative Stride"},
		{"mask dtype", good, gops.DeformConv2dOpts{}, tensor.Float32, "mask dtype float32 differs from input dtype float64"},
		{"no input channels", shapes{[]int{2, 0, 5, 5}, good.off, good.w, good.b, good.m}, gops.DeformConv2dOpts{}, tensor.Float64, "input channels is 0"},
		{"empty image", shapes{[]int{2, 4, 0, 0}, good.off, good.w, good.b, good.m}, gops.DeformConv2dOpts{Padding: [2]int{2, 2}}, tensor.Float64, "input height is 0"},
		{"no output channels", shapes{good.x, good.off, []int{0, 2, 3, 3}, []int{0}, good.m}, gops.DeformConv2dOpts{}, tensor.Float64, "output channels (weight.shape[0]) is 0"},
		{"huge padding", good, gops.DeformConv2dOpts{Padding: [2]int{math.MaxInt / 2, 0}}, tensor.Float64, fmt.Sprintf("Padding [%d 0] too large", math.MaxInt/2)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := gorgonia.NewGraph()
			node := func(dt tensor.Dtype, s []int, name string) *gorgonia.Node {
				return gorgonia.NewTensor(g, dt, len(s), gorgonia.WithShape(s...), gorgonia.WithName(name))
			}
			y, err := gops.DeformConv2d(node(tensor.Float64, c.s.x, "x"), node(tensor.Float64, c.s.off, "off"), node(tensor.Float64, c.s.w, "w"),
				node(tensor.Float64, c.s.b, "b"), node(c.dtypeM, c.s.m, "m"), c.opts)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !y.Shape().Eq(tensor.Shape{2, 6, 3, 3}) {
					t.Fatalf("shape %v", y.Shape())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// runDeform evaluates DeformConv2d and the gradients of sum(y ⊙ R) w.r.t.
// every input on a TapeMachine, and returns them flattened.
func runDeformConv2d(t *testing.T, c deformCase, in []*tensor.Dense) (y []float64, grads [][]float64) {
	t.Helper()
	g := gorgonia.NewGraph()
	nodes := make(gorgonia.Nodes, len(in))
	for i, v := range in {
		nodes[i] = gorgonia.NewTensor(g, v.Dtype(), v.Dims(), gorgonia.WithShape(v.Shape()...), gorgonia.WithValue(v), gorgonia.WithName(fmt.Sprint("in", i)))
	}
	yn, err := c.apply(nodes)
	if err != nil {
		t.Fatal(err)
	}
	var cost *gorgonia.Node
	if yn.Shape().TotalSize() == 0 {
		cost = gorgonia.Must(gorgonia.Sum(yn))
	} else {
		r := scaledTensor(1, 0, yn.Shape()...)
		var rv gorgonia.Value = r
		if in[0].Dtype() == tensor.Float32 {
			rv = toFloat32(r)
		}
		cost = gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(yn, gorgonia.Must(ad.Constant(g, rv))))))
	}
	gs, err := ad.Grad(cost, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := graphtest.Eval(g, append(gorgonia.Nodes{yn}, gs...)...)
	if err != nil {
		t.Fatal(err)
	}
	return got[0], got[1:]
}

// A non-finite offset makes its samples contribute 0 with zero gradient.
func TestDeformConv2dNonFiniteOffset(t *testing.T) {
	c := deformCase{n: 1, cin: 1, h: 3, w: 3, cout: 1, groups: 1, kh: 1, kw: 1, og: 1, mask: true, offsetScale: 0.3, maskShift: 1}
	in := c.inputs()
	off := in[1].Data().([]float64) // [1, 2, 3, 3]: dy plane then dx plane
	off[0] = math.NaN()             // output (0, 0): dy
	off[9+4] = math.Inf(1)          // output (1, 1): dx
	off[9+5] = math.Inf(-1)         // output (1, 2): dx
	y, grads := runDeformConv2d(t, c, in)
	for _, l := range []int{0, 4, 5} {
		if y[l] != 0 {
			t.Errorf("output %d = %v, want 0", l, y[l])
		}
		if grads[1][l] != 0 || grads[1][9+l] != 0 {
			t.Errorf("offset gradient at %d = %v, %v, want 0", l, grads[1][l], grads[1][9+l])
		}
		if grads[3][l] != 0 {
			t.Errorf("mask gradient at %d = %v, want 0", l, grads[3][l])
		}
	}
	for i, gs := range grads {
		for j, v := range gs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("gradient %d[%d] = %v", i, j, v)
			}
		}
	}
}

func TestDeformConv2dBatchSizes(t *testing.T) {
	for _, n := range []int{1, 33} {
		for _, dt := range []string{"float64", "float32"} {
			t.Run(fmt.Sprint(n, "/", dt), func(t *testing.T) {
				c := deformCase{n: n, cin: 2, h: 4, w: 4, cout: 3, groups: 1, kh: 2, kw: 2, og: 1, mask: true, bias: true, offsetScale: 0.8, maskShift: 0.5}
				in := c.inputs()
				if dt == "float32" {
					in = allFloat32(in)
				}
				y, grads := runDeformConv2d(t, c, in)
				ho, wo := c.outSize()
				if len(y) != n*3*ho*wo {
					t.Fatalf("%d outputs, want %d", len(y), n*3*ho*wo)
				}
				// bias gradient = Σ over batch and space of R.
				if got := grads[3][0]; got == 0 || math.IsNaN(got) {
					t.Fatalf("bias gradient %v", got)
				}
				if n == 33 {
					// Image 32 alone gives the same output as within the batch.
					one := append([]*tensor.Dense(nil), in...)
					for _, i := range []int{0, 1, 4} {
						one[i] = lastImage(in[i])
					}
					c1 := c
					c1.n = 1
					y1, _ := runDeformConv2d(t, c1, one)
					tail := y[len(y)-len(y1):]
					for j := range y1 {
						if math.Abs(y1[j]-tail[j]) > 1e-6*(1+math.Abs(tail[j])) {
							t.Fatalf("image 32 output %d: %v alone, %v in the batch", j, y1[j], tail[j])
						}
					}
				}
			})
		}
	}
}

// lastImage copies the last image of a batch tensor as a batch of one.
func lastImage(v *tensor.Dense) *tensor.Dense {
	shape := v.Shape().Clone()
	per := shape.TotalSize() / shape[0]
	shape[0] = 1
	switch d := v.Data().(type) {
	case []float32:
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float32(nil), d[len(d)-per:]...)))
	case []float64:
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), d[len(d)-per:]...)))
	}
	return nil
}

// A corner outside the image is not read, as in torchvision: a NaN in pixel
// (0, 0) spreads only to the samples that really touch it.
func TestDeformConv2dNaNPixelStaysLocal(t *testing.T) {
	c := deformCase{n: 1, cin: 1, h: 3, w: 3, cout: 1, groups: 1, kh: 1, kw: 1, og: 1}
	in := c.inputs()
	x := in[0].Data().([]float64)
	x[0] = math.NaN()
	clear(in[1].Data().([]float64)) // zero offsets: samples on the pixels
	in[2].Data().([]float64)[0] = 1 // weight 1
	y, grads := runDeformConv2d(t, c, in)
	if !math.IsNaN(y[0]) {
		t.Fatalf("output 0 = %v, want NaN", y[0])
	}
	for i := 1; i < 9; i++ {
		if y[i] != x[i] {
			t.Fatalf("output %d = %v, want pixel %v", i, y[i], x[i])
		}
	}
	for i, v := range grads[0] {
		if math.IsNaN(v) {
			t.Fatalf("input gradient %d is NaN", i)
		}
	}
}

// DeformConv2d's values and gradients must not depend on GOMAXPROCS
// (README: "bitwise identical for any GOMAXPROCS"), with OpenBLAS in use
// (TestMain's openblas.UseFromEnv, where it is installed; openblas.Describe() says
// which) as with gonum. The conformance table checks it on products too
// small for openblas's split over goroutines; here the products are above
// it (openblas.gemmSplitMin).
func TestDeformOpenBLASDeterministic(t *testing.T) {
	t.Logf("openblas.Describe(): %s", openblas.Describe())
	c := deformCase{name: "big", n: 2, cin: 16, h: 16, w: 16, cout: 16, groups: 1, kh: 3, kw: 3, og: 1, bias: true, mask: true,
		opts: gops.DeformConv2dOpts{Padding: [2]int{1, 1}}, offsetScale: 0.7, maskShift: 0.5}
	in := c.inputs()
	checkDeterministic(t, c.f, allFloat32(in), []int{0, 1, 2, 3, 4}, 1, 2, 3)
}
