package nn_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// fuzzBytes reads small choices from the fuzzer's bytes (0 when they run
// out).
type fuzzBytes struct {
	b []byte
	i int
}

func (f *fuzzBytes) intn(n int) int {
	if f.i >= len(f.b) {
		return 0
	}
	f.i++
	return int(f.b[f.i-1]) % n
}

// poison overwrites x's elements (float64) one by one: set(f.intn(n))
// gives the new value, or false to keep the element.
func (f *fuzzBytes) poison(x *tensor.Dense, n int, set func(k int) (float64, bool)) {
	if x.Shape().TotalSize() == 0 {
		return
	}
	d := x.Data().([]float64)
	for i := range d {
		if v, ok := set(f.intn(n)); ok {
			d[i] = v
		}
	}
}

// refused reports whether the op refused its inputs (err is not nil); an
// error that does not name the op ("nn: ...") fails t.
func refused(t *testing.T, err error) bool {
	t.Helper()
	if err != nil && !strings.HasPrefix(err.Error(), "nn: ") {
		t.Fatalf("error that names no op: %v", err)
	}
	return err != nil
}

// pick is vals[k], or false when k is past vals.
func pick(k int, vals ...float64) (float64, bool) {
	if k < len(vals) {
		return vals[k], true
	}
	return 0, false
}

// FuzzConv2d: shapes, groups, stride, padding (sometimes negative or too
// large), dilation, output padding, bias on or off, Conv2d or
// ConvTranspose2d, float32 or float64; the invariant: an error that names
// the op, or a finite result with finite gradients w.r.t. every input.
// A panic fails.
func FuzzConv2d(f *testing.F) {
	for _, s := range [][]byte{{}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {0, 3, 1, 2, 2, 1, 0, 1, 1, 2, 0, 1, 1, 1},
		{5, 4, 3, 2, 1, 0, 5, 4, 3, 2, 1, 0, 7, 7, 7}, {255, 254, 253, 252, 251, 250, 249, 248, 247, 246}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		pair := func(lo, n int) [2]int { return [2]int{lo + fb.intn(n), lo + fb.intn(n)} }
		groups := 1 + fb.intn(3)
		n, cin, cout := fb.intn(3), groups*(1+fb.intn(2)), groups*(1+fb.intn(2))
		h, w, kh, kw := 1+fb.intn(6), 1+fb.intn(6), 1+fb.intn(4), 1+fb.intn(4)
		opts := nn.Conv2dOpts{Stride: pair(0, 4), Padding: pair(0, 3), Dilation: pair(0, 3), Groups: groups}
		switch fb.intn(12) {
		case 0:
			opts.Padding[1] = -1
		case 1:
			cin++ // not divisible by groups
		case 2:
			opts.Stride[0] = 1 << 30
		case 3:
			opts.Groups = -2
		}
		transpose := fb.intn(2) == 1
		outPad := pair(0, 2)
		wshape := []int{cout, max(cin/max(groups, 1), 1), kh, kw}
		if transpose {
			wshape = []int{cin, max(cout/max(groups, 1), 1), kh, kw}
		}
		in := []*tensor.Dense{smoothTensor(1, n, cin, h, w), smoothTensor(0.5, wshape...)}
		if fb.intn(2) == 1 {
			in = append(in, smoothTensor(0.1, cout))
		}
		if fb.intn(2) == 1 {
			in = graphtest.Float32(in)
		}
		g, nodes := graphtest.Inputs(in)
		var b *gorgonia.Node
		if len(nodes) > 2 {
			b = nodes[2]
		}
		var y *gorgonia.Node
		var err error
		if transpose {
			y, err = nn.ConvTranspose2d(nodes[0], nodes[1], b, nn.ConvTranspose2dOpts{Stride: opts.Stride, Padding: opts.Padding,
				OutputPadding: outPad, Dilation: opts.Dilation, Groups: opts.Groups})
		} else {
			y, err = nn.Conv2d(nodes[0], nodes[1], b, opts)
		}
		if refused(t, err) {
			return
		}
		requireFinite(t, g, y, nodes)
	})
}

// FuzzPool2d: the four poolings and Interpolate over shapes (rows up to 39
// wide, so that float32 inputs reach the AVX2 fast paths), kernels, strides, paddings
// (sometimes too large or negative), dilation, ceil mode, padding counted
// or not, divisor override, adaptive sizes, and values with NaN and ±Inf;
// the invariant: an error that names the op, or a result and a gradient
// w.r.t. the input with no out-of-range read (the gradient of Σ result
// is finite: each output's gradient goes to positions of its window).
func FuzzPool2d(f *testing.F) {
	for _, s := range [][]byte{{}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {0, 3, 1, 2, 2, 1, 0, 1, 1, 2, 0, 1, 1, 1},
		{3, 1, 2, 3, 4, 5, 1, 1, 0, 2, 9, 9}, {255, 254, 253, 252, 251, 250, 249, 248, 247, 246}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		pair := func(lo, n int) [2]int { return [2]int{lo + fb.intn(n), lo + fb.intn(n)} }
		n, c, h, w := fb.intn(3), 1+fb.intn(3), 1+fb.intn(7), 1+fb.intn(7)
		if fb.intn(3) == 0 { // wide rows: runs of 8 or more outputs reach the float32 AVX2 kernels
			w += 8 * (1 + fb.intn(4))
		}
		x := smoothTensor(1, n, c, h, w)
		fb.poison(x, 16, func(k int) (float64, bool) { return pick(k, math.NaN(), math.Inf(-1), math.Inf(1)) })
		in := []*tensor.Dense{x}
		if fb.intn(2) == 1 {
			in = graphtest.Float32(in)
		}
		k, stride, pad := pair(0, 4), pair(0, 4), pair(-1, 3)
		op := fb.intn(5)
		apply := func(x *gorgonia.Node) (*gorgonia.Node, error) {
			switch op {
			case 0:
				return nn.MaxPool2d(x, nn.MaxPool2dOpts{KernelSize: k, Stride: stride, Padding: pad, Dilation: pair(0, 3), CeilMode: fb.intn(2) == 1})
			case 1:
				return nn.AvgPool2d(x, nn.AvgPool2dOpts{KernelSize: k, Stride: stride, Padding: pad, CeilMode: fb.intn(2) == 1,
					ExcludePad: fb.intn(2) == 1, DivisorOverride: fb.intn(4) - 1})
			case 2:
				return nn.AdaptiveMaxPool2d(x, pair(0, 6))
			case 4:
				opts := nn.InterpolateOpts{Mode: []string{"", "nearest", "bilinear", "bicubic"}[fb.intn(4)], AlignCorners: fb.intn(3) == 0}
				if fb.intn(2) == 0 {
					opts.Size = pair(0, 9)
				} else {
					opts.ScaleFactor = [2]float64{[]float64{0.5, 1, 1.5, 2, 0, -1}[fb.intn(6)], []float64{0.3, 1, 2.5, 3}[fb.intn(4)]}
				}
				return nn.Interpolate(x, opts)
			default:
				return nn.AdaptiveAvgPool2d(x, pair(0, 6))
			}
		}
		g, nodes := graphtest.Inputs(in)
		y, err := apply(nodes[0])
		if refused(t, err) {
			return
		}
		grads, err := ad.Grad(gorgonia.Must(gorgonia.Sum(y)), nodes[0])
		if err != nil {
			t.Fatal(err)
		}
		vals, err := graphtest.Eval(g, y, grads[0])
		if err != nil {
			t.Fatal(err)
		}
		for e, v := range vals[1] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("gradient element %d is %v", e, v)
			}
		}
	})
}

// FuzzLayers: Softmax, LogSoftmax, CrossEntropy, BCE, SmoothL1, the
// normalisations, activations, Narrow, Concat and Dropout over random
// shapes and parameters (sometimes invalid), finite inputs; the
// invariant: an error that names the op, or a result and gradients
// computed without a panic, finite where torch's would be.
func FuzzLayers(f *testing.F) {
	for _, s := range [][]byte{{}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {5, 0, 3, 1, 2, 2, 1}, {9, 4, 4, 4, 0, 1, 3, 7},
		{12, 3, 2, 1, 0, 5, 5}, {255, 254, 253, 252, 251, 250}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		op := fb.intn(13)
		n, c, h := fb.intn(4), fb.intn(5), 1+fb.intn(4)
		x := smoothTensor(1.5, n, c, h)
		in := []*tensor.Dense{x}
		if fb.intn(2) == 1 {
			in = graphtest.Float32(in)
		}
		g, nodes := graphtest.Inputs(in)
		xn := nodes[0]
		p := fb.intn(6) - 1
		var y *gorgonia.Node
		var err error
		switch op {
		case 0:
			y, err = nn.Softmax(xn, p)
		case 1:
			y, err = nn.LogSoftmax(xn, p)
		case 2:
			var x2 *gorgonia.Node
			if x2, err = nn.Flatten(xn, 1); err == nil {
				tg := make([]int, n)
				for i := range tg {
					tg[i] = fb.intn(c+2) - 1
				}
				tn := gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(n), gorgonia.WithName("t"),
					gorgonia.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(tg))))
				ignore := fb.intn(3) - 1
				y, err = nn.CrossEntropy(x2, tn, nn.CrossEntropyOpts{IgnoreIndex: &ignore, LabelSmoothing: float64(fb.intn(4)) / 3, Reduction: []ad.Reduction{"", "sum", "none", "x"}[fb.intn(4)]})
			}
		case 3:
			y, err = nn.BinaryCrossEntropyWithLogits(xn, xn, nn.BCEWithLogitsOpts{Reduction: []ad.Reduction{"", "sum", "none"}[fb.intn(3)]})
		case 4:
			y, err = nn.SmoothL1Loss(xn, xn, float64(p), "sum")
		case 5:
			y, err = nn.GroupNorm(xn, p, nil, nil, 0)
		case 6:
			y, err = nn.LayerNorm(xn, []int{h}, nil, nil, float64(fb.intn(3)))
		case 7:
			opts := nn.BatchNormOpts{Training: true}
			if k := fb.intn(3); k > 0 {
				// A mask of 0s, 1s and (last) 0.5s, of n or k−1+n entries.
				vals := make([]float64, n+(k-1)*fb.intn(2))
				for i := range vals {
					vals[i] = []float64{0, 1, 0.5}[min(fb.intn(4), 2)]
				}
				opts.Mask = gorgonia.NewTensor(g, xn.Dtype(), 1, gorgonia.WithShape(len(vals)), gorgonia.WithName("mask"),
					gorgonia.WithValue(maskOf(xn.Dtype(), vals...)))
			}
			y, err = nn.BatchNorm(xn, nil, nil, nil, nil, opts)
		case 8:
			y, err = nn.GELU(xn, []string{"", "tanh", "none", "erf"}[fb.intn(4)])
		case 9:
			y, err = nn.Narrow(xn, p, fb.intn(3)-1, fb.intn(3))
		case 10:
			y, err = nn.Concat(p, xn, xn)
		case 11:
			y, err = nn.Dropout(xn, float64(fb.intn(5))/4, true, int64(p))
		default:
			y, err = nn.LeakyReLU(xn, float64(p)/10)
		}
		if refused(t, err) {
			return
		}
		if y.Shape().TotalSize() == 0 {
			return // Gorgonia's Sum panics on empty tensors
		}
		cost := y
		if !y.IsScalar() {
			cost = gorgonia.Must(gorgonia.Sum(y))
		}
		grads, err := ad.Grad(cost, xn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := graphtest.Eval(g, y, grads[0]); err != nil && !strings.Contains(err.Error(), "outside [0, ") && !strings.Contains(err.Error(), "want 0 or 1") {
			t.Fatal(err)
		}
	})
}

// FuzzGridSample: GridSample (and AffineGrid into it) over shapes with
// zero sizes, batch and last-dimension mismatches, modes and paddings
// (sometimes unknown), align_corners, float32 or float64, and grids with
// NaN, ±Inf, huge and ordinary values; the invariant: an error that names
// the op, or a finite result with finite gradients w.r.t. input and grid
// (no out-of-range read: the values are finite, and a NaN or infinite
// coordinate samples nothing or the border). A panic fails.
func FuzzGridSample(f *testing.F) {
	for _, s := range [][]byte{{}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {2, 3, 4, 5, 3, 3, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7},
		{1, 1, 1, 1, 1, 1, 2, 2, 1, 0, 9, 9, 9, 9}, {255, 254, 253, 252, 251, 250, 249, 248, 247, 246}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		n, c, h, w, ho, wo := fb.intn(3), fb.intn(3), fb.intn(5), fb.intn(5), fb.intn(4), fb.intn(4)
		gn, last := n, 2
		switch fb.intn(10) {
		case 0:
			gn = n + 1
		case 1:
			last = 3
		}
		opts := nn.GridSampleOpts{Mode: []string{"", "bilinear", "nearest", "bicubic"}[fb.intn(4)],
			PaddingMode: []string{"", "zeros", "border", "reflection", "wrap"}[fb.intn(5)], AlignCorners: fb.intn(2) == 1}
		grid := smoothTensor(1.3, gn, ho, wo, last)
		fb.poison(grid, 12, func(k int) (float64, bool) {
			switch k {
			case 3:
				return 3e38 * float64(fb.intn(3)-1), true
			case 4:
				return float64(fb.intn(5)-2) / 2, true // on the lattice's kinks
			}
			return pick(k, math.NaN(), math.Inf(1), math.Inf(-1))
		})
		affine := fb.intn(4) == 0
		in := []*tensor.Dense{smoothTensor(1, n, c, h, w), grid}
		if affine {
			in[1] = smoothTensor(0.7, gn, 2, last+1)
		}
		if fb.intn(2) == 1 {
			in = graphtest.Float32(in)
		}
		g, nodes := graphtest.Inputs(in)
		gridNode := nodes[1]
		var err error
		if affine {
			gridNode, err = nn.AffineGrid(nodes[1], [4]int{gn, c, ho, wo}, opts.AlignCorners)
		}
		var y *gorgonia.Node
		if err == nil {
			y, err = nn.GridSample(nodes[0], gridNode, opts)
		}
		if refused(t, err) {
			return
		}
		if y.Shape().TotalSize() == 0 {
			return // Gorgonia's Sum panics on empty tensors
		}
		requireFinite(t, g, y, nodes)
	})
}

// requireFinite requires y and the gradients of Sum(y) w.r.t. nodes to be
// finite.
func requireFinite(t *testing.T, g *gorgonia.ExprGraph, y *gorgonia.Node, nodes gorgonia.Nodes) {
	t.Helper()
	requireFiniteCost(t, g, gorgonia.Must(gorgonia.Sum(y)), y, nodes, nil)
}

// requireFiniteCost requires y and the gradients of cost w.r.t. nodes to
// be finite; a failure names inputs where they are not nil.
func requireFiniteCost(t *testing.T, g *gorgonia.ExprGraph, cost, y *gorgonia.Node, nodes gorgonia.Nodes, inputs []*tensor.Dense) {
	t.Helper()
	grads, err := ad.Grad(cost, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := graphtest.Eval(g, append(gorgonia.Nodes{y}, grads...)...)
	if err != nil {
		t.Fatal(err)
	}
	for j, v := range vals {
		for e, x := range v {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				continue
			}
			if inputs != nil {
				t.Fatalf("value %d element %d is %v (inputs %v)", j, e, x, inputs)
			}
			t.Fatalf("value %d element %d is %v", j, e, x)
		}
	}
}

// innerWithSmooth is the cost <R, y> for a smooth constant R of y's shape
// and dtype, or Σ y for an empty y (Gorgonia's elementwise ops panic on
// empty tensors).
func innerWithSmooth(t *testing.T, g *gorgonia.ExprGraph, y *gorgonia.Node) *gorgonia.Node {
	t.Helper()
	var cost *gorgonia.Node
	var err error
	if y.Shape().TotalSize() == 0 {
		cost, err = gorgonia.Sum(y)
	} else {
		r := smoothTensor(1, y.Shape()...)
		if y.Dtype() == tensor.Float32 {
			r = graphtest.Float32([]*tensor.Dense{r})[0]
		}
		cost, err = gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, gorgonia.Must(ad.Constant(g, r)))))
	}
	if err != nil {
		t.Fatal(err)
	}
	return cost
}

// FuzzMatMul: ranks 2 and 3, sizes 0 to 40 (sometimes mismatched), the
// four transpose cases, values up to 1e6 (finite: a product propagates NaN
// and Inf as the reference BLAS does, which internal/gemm's tests check),
// float32 or float64; the invariant: an error that names the op, or a
// finite result with finite gradients of <R, op(a)·op(b)> w.r.t. both
// inputs. A panic fails.
func FuzzMatMul(f *testing.F) {
	for _, s := range [][]byte{{}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20},
		{0, 1, 0, 2, 3, 1, 4, 0, 0, 2, 3, 1, 6, 5, 0, 0, 0, 1}, {2, 3, 4, 1, 2, 2, 1, 0, 1, 12, 13, 14, 15, 16, 17, 18, 19},
		{255, 254, 253, 252, 251, 250, 249, 248, 247, 246, 245, 244, 243, 242, 241, 240}, {3, 0, 5, 5, 3, 3, 2, 1, 0, 0, 7, 7, 7, 7, 11, 11, 11, 11, 1}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		pick := func(vals ...float64) float64 { return vals[fb.intn(len(vals))] }
		ta, tb := fb.intn(2) == 1, fb.intn(2) == 1
		size := func() int { return int(pick(0, 1, 2, 3, 5, 12, 13, 17, 33, 40)) }
		m, n, k := size(), size(), size()
		kb, batch := k, 1+fb.intn(3)
		if fb.intn(8) == 0 {
			kb = k + 1 // inner sizes differ
		}
		batchB := batch
		if fb.intn(8) == 0 {
			batchB = batch + 1
		}
		rank3 := fb.intn(2) == 1
		shape := func(b, r, c int, trans bool) []int {
			if trans {
				r, c = c, r
			}
			if rank3 {
				return []int{b, r, c}
			}
			return []int{r, c}
		}
		tensorOf := func(shape []int) *tensor.Dense {
			d := make([]float64, tensor.Shape(shape).TotalSize())
			for i := range d {
				d[i] = 0.1 * float64(i%11-5)
				if fb.intn(16) == 0 {
					d[i] = pick(100, -1e6, 1e6, 3.5, -3)
				}
			}
			return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
		}
		in := []*tensor.Dense{tensorOf(shape(batch, m, k, ta)), tensorOf(shape(batchB, kb, n, tb))}
		if fb.intn(2) == 1 {
			in = graphtest.Float32(in)
		}
		g, nodes := graphtest.Inputs(in)
		y, err := nn.MatMul(nodes[0], nodes[1], ta, tb)
		if err != nil {
			if !strings.Contains(err.Error(), "nn: MatMul: ") {
				t.Fatalf("error that names no op: %v", err)
			}
			return
		}
		cost := innerWithSmooth(t, g, y)
		requireFiniteCost(t, g, cost, y, nodes, in)
	})
}

// FuzzLinear: x of rank 0 to 3 (a scalar must be refused) with sizes 0 to 33, weight [out, in] of
// rank 1 to 3 and sometimes the wrong in, bias absent, [out] or of the
// wrong length, dtypes float32, float64 or mixed; the invariant: an error
// that names the op, or y equal to x·weightᵀ + bias computed directly and
// finite gradients of <R, y> w.r.t. every input. A panic fails.
func FuzzLinear(f *testing.F) {
	for _, s := range [][]byte{{}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 0, 3, 3, 1, 0, 0, 0, 0},
		{3, 4, 2, 5, 1, 1, 2, 0, 0}, {1, 6, 6, 6, 2, 1, 1, 0, 0}, {255, 254, 253, 252, 251, 250, 249, 248}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		sizes := []int{0, 1, 2, 3, 5, 17, 33}
		size := func() int { return sizes[fb.intn(len(sizes))] }
		rank, in, out := fb.intn(4), size(), size()
		xs := make([]int, rank)
		for i := range xs {
			xs[i] = size()
		}
		if rank > 0 {
			xs[rank-1] = in
			if fb.intn(8) == 0 {
				xs[rank-1] = in + 1 // in differs
			}
		}
		ws := []int{out, in}
		switch fb.intn(10) {
		case 0:
			ws = []int{in}
		case 1:
			ws = []int{1, out, in}
		}
		bias := fb.intn(3) // 0: none, 1: [out], 2: [out + 1]
		if rank == 0 {
			g := gorgonia.NewGraph()
			x := gorgonia.NewScalar(g, tensor.Float64)
			w := gorgonia.NewTensor(g, tensor.Float64, len(ws), gorgonia.WithShape(ws...))
			if _, err := nn.Linear(x, w, nil); !refused(t, err) {
				t.Fatal("a scalar x was accepted")
			}
			return
		}
		tensorOf := func(scale float64, shape []int) *tensor.Dense { return shiftedTensor(scale, 0.1, shape...) }
		in64 := []*tensor.Dense{tensorOf(1, xs), tensorOf(0.3, ws)}
		if bias > 0 {
			in64 = append(in64, tensorOf(0.5, []int{out + bias - 1}))
		}
		inputs := in64
		if fb.intn(2) == 1 {
			inputs = graphtest.Float32(in64)
		}
		if fb.intn(8) == 0 {
			inputs[len(inputs)-1] = graphtest.Float32(in64[len(in64)-1:])[0] // dtypes differ (or all float32)
		}
		g, nodes := graphtest.Inputs(inputs)
		var b *gorgonia.Node
		if bias > 0 {
			b = nodes[2]
		}
		y, err := nn.Linear(nodes[0], nodes[1], b)
		if refused(t, err) {
			return
		}
		cost := innerWithSmooth(t, g, y)
		requireFiniteCost(t, g, cost, y, nodes, nil)
		got, err := graphtest.Eval(g, y)
		if err != nil {
			t.Fatal(err)
		}
		var xd, wd, bd []float64
		xd, wd = flatOf(inputs[0]), flatOf(inputs[1])
		if bias > 0 {
			bd = flatOf(inputs[2])
		}
		tol := 1e-12
		if y.Dtype() == tensor.Float32 {
			tol = 1e-5
		}
		for r := 0; r < len(got[0])/max(out, 1); r++ {
			for o := 0; o < out; o++ {
				want := 0.0
				if bd != nil {
					want = bd[o]
				}
				for k := 0; k < in; k++ {
					want += xd[r*in+k] * wd[o*in+k]
				}
				if v := got[0][r*out+o]; math.Abs(v-want) > tol*(1+math.Abs(want)) {
					t.Fatalf("y[%d, %d] = %v, want %v", r, o, v, want)
				}
			}
		}
	})
}

// flatOf is x's elements as float64 (none for an empty x).
func flatOf(x *tensor.Dense) []float64 {
	if x.Shape().TotalSize() == 0 {
		return nil
	}
	switch d := x.Data().(type) {
	case []float64:
		return d
	case []float32:
		out := make([]float64, len(d))
		for i, v := range d {
			out[i] = float64(v)
		}
		return out
	}
	return nil
}
