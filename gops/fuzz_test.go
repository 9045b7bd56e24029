package gops_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Fuzz targets, one per op (go test -fuzz=FuzzRoIAlign ./gops, ...). Each
// decodes shapes, options and the values of the geometric inputs (boxes,
// offsets) from the fuzzer's bytes, drawing from tables that hold NaN, ±Inf,
// huge and negative values, batch indices outside [0, N), degenerate and
// inverted boxes and offsets far outside the image. Pixel values stay
// finite. The invariant: building the op, its gradient and running both
// gives either an error that names the problem ("gops: Op: ...") or a
// finite result with finite gradients; never a panic (an out-of-range
// access is one), including one that package ad recovered and reported as
// an error. Crashers found are kept in testdata/fuzz/ as regressions.

// fuzzBytes reads the fuzzer's bytes; past their end it reads zeros.
type fuzzBytes struct {
	b []byte
	i int
}

func (f *fuzzBytes) next() int {
	if f.i >= len(f.b) {
		return 0
	}
	f.i++
	return int(f.b[f.i-1])
}

// intn is a number in [0, n).
func (f *fuzzBytes) intn(n int) int { return f.next() % n }

// pick is one of vals.
func (f *fuzzBytes) pick(vals ...float64) float64 { return vals[f.intn(len(vals))] }

// coordinate is a box coordinate or offset: mostly plausible, sometimes
// wild.
func (f *fuzzBytes) coordinate() float64 {
	return f.pick(0, 0.5, 1, 2.7, 3.5, 5, 6, -1.5, -3, -1, 100, 1e6, 1e30, -1e30, 3.4e38, math.NaN(), math.Inf(1), math.Inf(-1), 4.25, 2, 1.5, 0.3)
}

// scale is a SpatialScale.
func (f *fuzzBytes) scale() float64 {
	return f.pick(0, 1, 0.5, 1.0/16, 2, -1, math.NaN(), math.Inf(1), 1e-40, 1e300, 0.3)
}

// outputSize is a pooled size: small, or one that must be refused.
func (f *fuzzBytes) outputSize() [2]int {
	s := [2]int{1 + f.intn(3), 1 + f.intn(3)}
	switch f.intn(16) {
	case 0:
		s[0] = 0
	case 1:
		s[1] = -2
	case 2:
		s = [2]int{5000, 5000}
	}
	return s
}

// boxes is [K, 5] for an input of batch n: batch indices mostly in range.
func (f *fuzzBytes) boxes(k, n int) *tensor.Dense {
	d := make([]float64, 5*k)
	for i := 0; i < k; i++ {
		d[5*i] = float64(f.intn(max(n, 1)))
		if f.intn(8) == 0 {
			d[5*i] = f.pick(-1, float64(n), 0.5, math.NaN(), 1e30)
		}
		for j := 1; j < 5; j++ {
			d[5*i+j] = f.coordinate()
		}
	}
	return tensor.New(tensor.WithShape(k, 5), tensor.Of(tensor.Float64), tensor.WithBacking(d))
}

// fuzzInput is a finite [n, c, h, w] input.
func fuzzInput(n, c, h, w int) *tensor.Dense { return rangeTensor(n, c, h, w) }

// checkFuzzCase builds op on in (float32 when f says so), the gradient of
// <R, op> w.r.t. the inputs wrt, runs both, and checks the invariant.
func checkFuzzCase(t *testing.T, f *fuzzBytes, in []*tensor.Dense, wrt []int, op graphtest.Func) {
	t.Helper()
	checkFuzzCaseNamed(t, f, in, wrt, op, "")
}

// checkFuzzCaseNamed is checkFuzzCase; if name is not empty, an error of
// the gradient or of the run must also name the op ("gops: " + name): the
// op's own check of the tensor (box k, coordinate j, ...), not an error
// of the machinery.
func checkFuzzCaseNamed(t *testing.T, f *fuzzBytes, in []*tensor.Dense, wrt []int, op graphtest.Func, name string) {
	t.Helper()
	if f.intn(2) == 1 {
		in = allFloat32(in)
	}
	named := func(stage string, err error) {
		t.Helper()
		switch msg := err.Error(); {
		case strings.Contains(msg, "panicked"): // package ad's report of a recovered panic
			t.Fatalf("%s: a panic (an index out of range is one): %v", stage, err)
		case !strings.Contains(msg, "gops: ") && !strings.Contains(msg, "ad: "):
			t.Fatalf("%s: error that names no op: %v", stage, err)
		}
	}
	g, nodes := inputNodes(in)
	y, err := op(nodes)
	if err != nil {
		named("build", err)
		return
	}
	var cost *gorgonia.Node
	if y.Shape().TotalSize() == 0 {
		cost, err = gorgonia.Sum(y) // Gorgonia's elementwise ops panic on empty tensors
	} else {
		r := rangeTensor(y.Shape()...)
		var rv gorgonia.Value = r
		if y.Dtype() == tensor.Float32 {
			rv = toFloat32(r)
		}
		cost, err = gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, gorgonia.Must(ad.Constant(g, rv)))))
	}
	if err != nil {
		t.Fatal(err)
	}
	var ws gorgonia.Nodes
	for _, i := range wrt {
		ws = append(ws, nodes[i])
	}
	namesOp := func(stage string, err error) {
		t.Helper()
		named(stage, err)
		if name != "" && !strings.Contains(err.Error(), "gops: "+name) {
			t.Fatalf("%s: error that does not name %s: %v", stage, name, err)
		}
	}
	grads, err := ad.Grad(cost, ws...)
	if err != nil {
		namesOp("gradient", err)
		return
	}
	vals, err := graphtest.Eval(g, append(gorgonia.Nodes{y}, grads...)...)
	if err != nil {
		namesOp("run", err)
		return
	}
	for j, v := range vals {
		for e, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				what := "output"
				if j > 0 {
					what = fmt.Sprint("gradient w.r.t. input ", wrt[j-1])
				}
				t.Fatalf("%s element %d is %v (inputs %v)", what, e, x, in)
			}
		}
	}
}

// fuzzSeeds are the corpus every target starts from: plain cases, empty
// ones, and ones that pick the wild table entries.
var fuzzSeeds = [][]byte{
	{},
	{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20},
	{0, 1, 0, 2, 3, 1, 4, 0, 0, 2, 3, 1, 6, 5, 0, 0, 0, 1},
	{2, 3, 4, 1, 2, 2, 1, 0, 1, 12, 13, 14, 15, 16, 17, 18, 19},
	{255, 254, 253, 252, 251, 250, 249, 248, 247, 246, 245, 244, 243, 242, 241, 240},
	{3, 0, 5, 5, 3, 3, 2, 1, 0, 0, 7, 7, 7, 7, 11, 11, 11, 11, 1},
}

// fuzzRoI fuzzes one of the four RoI ops: input [N, C, H, W], boxes
// [K, 5]; the gradient is w.r.t. the input, or, for the ops
// differentiable w.r.t. their boxes (boxOp, their name), w.r.t. the input,
// the boxes or both, as the fuzzer's bytes say; when the boxes' gradient
// is asked for, an error of the gradient or the run must name the op (it
// says which box and coordinate are wrong).
func fuzzRoI(f *testing.F, boxOp string, channels func(fb *fuzzBytes, size [2]int) int, op func(fb *fuzzBytes, size [2]int, scale float64) poolOp) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		n, h, w, k := fb.intn(3), 1+fb.intn(6), 1+fb.intn(6), fb.intn(5)
		size, scale := fb.outputSize(), fb.scale()
		c := channels(fb, size)
		x, b := fuzzInput(n, c, h, w), fb.boxes(k, n)
		p := op(fb, size, scale)
		wrt, name := []int{0}, ""
		if boxOp != "" {
			wrt = [][]int{{0}, {1}, {0, 1}}[fb.intn(3)]
			if wrt[len(wrt)-1] == 1 {
				name = boxOp
			}
		}
		checkFuzzCaseNamed(t, fb, []*tensor.Dense{x, b}, wrt, func(in gorgonia.Nodes) (*gorgonia.Node, error) { return p(in[0], in[1]) }, name)
	})
}

// anyChannels is 1 to 4 channels.
func anyChannels(fb *fuzzBytes, _ [2]int) int { return 1 + fb.intn(4) }

// psChannels is a multiple of the bins, or sometimes not (refused).
func psChannels(fb *fuzzBytes, size [2]int) int {
	bins := max(size[0]*size[1], 1)
	if bins > 16 || fb.intn(8) == 0 {
		return 1 + fb.intn(5)
	}
	return bins * (1 + fb.intn(2))
}

// samplingRatio is adaptive, small, or too large.
func (f *fuzzBytes) samplingRatio() int {
	return []int{0, -1, 1, 2, 3, 5000}[f.intn(6)]
}

func FuzzRoIAlign(f *testing.F) {
	fuzzRoI(f, "RoIAlign", anyChannels, func(fb *fuzzBytes, size [2]int, scale float64) poolOp {
		return roiAlignOp(gops.RoIAlignOpts{OutputSize: size, SpatialScale: scale, SamplingRatio: fb.samplingRatio(), Aligned: fb.intn(2) == 1})
	})
}

func FuzzRoIPool(f *testing.F) {
	fuzzRoI(f, "", anyChannels, func(fb *fuzzBytes, size [2]int, scale float64) poolOp {
		return roiPoolOp(gops.RoIPoolOpts{OutputSize: size, SpatialScale: scale})
	})
}

func FuzzPSRoIAlign(f *testing.F) {
	fuzzRoI(f, "PSRoIAlign", psChannels, func(fb *fuzzBytes, size [2]int, scale float64) poolOp {
		return psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: size, SpatialScale: scale, SamplingRatio: fb.samplingRatio()})
	})
}

func FuzzPSRoIPool(f *testing.F) {
	fuzzRoI(f, "", psChannels, func(fb *fuzzBytes, size [2]int, scale float64) poolOp {
		return psRoIPoolOp(gops.PSRoIPoolOpts{OutputSize: size, SpatialScale: scale})
	})
}

// FuzzDeformConv2d: shapes, groups, offset groups, stride, padding,
// dilation (sometimes negative or too large), bias and mask on or off,
// offsets from the wild table; gradients w.r.t. every input.
func FuzzDeformConv2d(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		pair := func(lo, n int) [2]int { return [2]int{lo + fb.intn(n), lo + fb.intn(n)} }
		c := deformCase{
			n: fb.intn(3), h: 1 + fb.intn(5), w: 1 + fb.intn(5), kh: 1 + fb.intn(3), kw: 1 + fb.intn(3),
			groups: 1 + fb.intn(2), og: 1 + fb.intn(2), mask: fb.intn(2) == 1, bias: fb.intn(2) == 1,
			opts: gops.DeformConv2dOpts{Stride: pair(0, 3), Padding: pair(0, 3), Dilation: pair(0, 3)},
		}
		c.cin = c.groups * c.og * (1 + fb.intn(2))
		c.cout = c.groups * (1 + fb.intn(2))
		switch fb.intn(16) {
		case 0:
			c.opts.Padding[0] = -1
		case 1:
			c.opts.Stride[1] = 1 << 30
		case 2:
			c.cin++ // not divisible by the groups (or offset groups)
		}
		ho, wo := c.outSize()
		if ho <= 0 || wo <= 0 || ho > 64 || wo > 64 {
			ho, wo = 1, 1 // a wrong offset shape, refused unless the sizes agree
		}
		K := c.kh * c.kw
		weight := scaledTensor(0.5, 0, c.cout, c.cin/c.groups, c.kh, c.kw)
		off := make([]float64, c.n*2*c.og*K*ho*wo)
		for i := range off {
			off[i] = fb.coordinate()
			if fb.intn(2) == 0 {
				off[i] = 0.3 * float64(i%7-3)
			}
		}
		in := []*tensor.Dense{fuzzInput(c.n, c.cin, c.h, c.w),
			tensor.New(tensor.WithShape(c.n, 2*c.og*K, ho, wo), tensor.Of(tensor.Float64), tensor.WithBacking(off)), weight}
		if c.bias {
			in = append(in, scaledTensor(0.3, 0.1, c.cout))
		}
		if c.mask {
			in = append(in, scaledTensor(0.4, 0.5, c.n, c.og*K, ho, wo))
		}
		var wrt []int
		for i := range in {
			wrt = append(wrt, i)
		}
		checkFuzzCase(t, fb, in, wrt, c.apply)
	})
}

// FuzzMultiScaleRoIAlign: 1 to 4 levels of 1 or 2 images (strides 1, 2, 4,
// 8 of the largest image, sometimes a map of the wrong size: refused, or
// oblong: refused unless Scales are given), 0 to 3 boxes per image from
// the wild coordinate table, output size, sampling ratio, canonical scale
// and level, Scales given (sometimes wrong) or inferred; gradients w.r.t.
// every feature map. The invariant above: a named error, or
// finite values and gradients, never a panic.
func FuzzMultiScaleRoIAlign(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Add([]byte{3, 1, 2, 7, 9, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21})
	f.Add([]byte{1, 0, 1, 5, 5, 0, 0, 2, 1, 20, 2, 3, 11, 0, 4, 6, 8})
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		levels, n, c := 1+fb.intn(4), 1+fb.intn(2), 1+fb.intn(3)
		imgH, imgW := 8+fb.intn(9), 8+fb.intn(9)
		var in []*tensor.Dense
		for l := 0; l < levels; l++ {
			h, w := max(imgH>>l, 1), max(imgW>>l, 1)
			switch fb.intn(16) {
			case 0:
				w = max(w>>2, 1) // oblong: width and height disagree
			case 1:
				h = 0 // no pixels
			}
			in = append(in, fuzzInput(n, c, h, w))
		}
		empty := make([]bool, n)
		for i := 0; i < n; i++ {
			k := fb.intn(4)
			if k == 0 {
				empty[i] = true
				continue
			}
			d := make([]float64, 4*k)
			for j := range d {
				d[j] = 4 * fb.coordinate()
			}
			in = append(in, tensor.New(tensor.WithShape(k, 4), tensor.Of(tensor.Float64), tensor.WithBacking(d)))
		}
		sizes := make([][2]int, n)
		for i := range sizes {
			sizes[i] = [2]int{imgH - fb.intn(3), imgW - fb.intn(3)}
		}
		if fb.intn(16) == 0 {
			sizes[0][1] = -1
		}
		opts := gops.MultiScaleRoIAlignOpts{
			OutputSize: fb.outputSize(), SamplingRatio: fb.samplingRatio(),
			CanonicalScale: []int{0, 8, 1, -3}[fb.intn(4)], CanonicalLevel: []int{0, 2, 1, -1}[fb.intn(4)],
		}
		if fb.intn(3) == 0 {
			for l := 0; l < levels; l++ {
				opts.Scales = append(opts.Scales, math.Ldexp(1, -l))
			}
			if fb.intn(4) == 0 {
				opts.Scales[0] = fb.scale()
			}
		}
		checkFuzzCase(t, fb, in, wrtFirst(levels), func(nodes gorgonia.Nodes) (*gorgonia.Node, error) {
			feats, next := nodes[:levels], levels
			var boxes gorgonia.Nodes
			for i := 0; i < n; i++ {
				if empty[i] {
					boxes = append(boxes, emptyBoxNode(nodes[0]))
					continue
				}
				boxes = append(boxes, nodes[next])
				next++
			}
			return gops.MultiScaleRoIAlign(feats, boxes, sizes, opts)
		})
	})
}

// FuzzBoxOps: boxes with wild coordinates (NaN, ±Inf, huge, inverted,
// zero-area), any count including 0, through every box function, its
// gradient, NMS, BatchedNMS and RemoveSmallBoxes. The invariant: a named
// error or a result, never a panic; the IoU functions' values equal a
// direct float64 evaluation of torchvision's formula (NaN where it is NaN)
// and NMS keeps each index at most once, in a valid range.
func FuzzBoxOps(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		n, m := fb.intn(4), fb.intn(4)
		box := func(k int) *tensor.Dense {
			d := make([]float64, 4*k)
			for i := range d {
				d[i] = fb.coordinate()
			}
			return tensor.New(tensor.WithShape(k, 4), tensor.WithBacking(d))
		}
		a, b := box(n), box(m)
		in := []*tensor.Dense{a, b}
		if fb.intn(2) == 1 {
			in = allFloat32(in)
		}
		red := []string{"none", "mean", "sum"}[fb.intn(3)]
		ops := []func(x, y *gorgonia.Node) (*gorgonia.Node, error){
			gops.BoxIoU, gops.GeneralizedBoxIoU,
			func(x, y *gorgonia.Node) (*gorgonia.Node, error) { return gops.DistanceBoxIoU(x, y, 1e-7) },
			func(x, y *gorgonia.Node) (*gorgonia.Node, error) { return gops.CompleteBoxIoU(x, y, 1e-7) },
			func(x, _ *gorgonia.Node) (*gorgonia.Node, error) { return gops.BoxArea(x) },
			func(x, _ *gorgonia.Node) (*gorgonia.Node, error) { return gops.BoxConvert(x, "cxcywh", "xywh") },
			func(x, _ *gorgonia.Node) (*gorgonia.Node, error) { return gops.ClipBoxesToImage(x, [2]int{5, 7}) },
			func(x, _ *gorgonia.Node) (*gorgonia.Node, error) {
				return gops.GeneralizedBoxIoULoss(x, x, ad.Reduction(red), 1e-7)
			},
		}
		op := fb.intn(len(ops))
		g, nodes := inputNodes(in)
		y, err := ops[op](nodes[0], nodes[1])
		if err != nil {
			if !strings.Contains(err.Error(), "gops: ") {
				t.Fatalf("error that names no op: %v", err)
			}
			return
		}
		vals, err := evalNoPanic(g, y)
		if err != nil {
			t.Fatal(err)
		}
		if len(vals) > 0 { // the same values in a graph that also holds the gradients
			g2, nodes2 := inputNodes(in)
			y2, err := ops[op](nodes2[0], nodes2[1])
			if err != nil {
				t.Fatal(err)
			}
			cost := y2
			if !y2.IsScalar() {
				cost = gorgonia.Must(gorgonia.Sum(y2))
			}
			if _, err := ad.Grad(cost, nodes2[0]); err != nil {
				t.Fatal(err)
			}
			vals2, err := evalNoPanic(g2, y2)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if !(v == vals2[i] || math.IsNaN(v) && math.IsNaN(vals2[i])) {
					t.Fatalf("value %d: %v alone, %v with gradients", i, v, vals2[i])
				}
			}
		}
		if op == 0 && n > 0 && m > 0 && in[0].Dtype() == tensor.Float64 {
			ad, bd := a.Data().([]float64), b.Data().([]float64)
			for i := 0; i < n; i++ {
				for j := 0; j < m; j++ {
					want := refIoU(ad[4*i:4*i+4], bd[4*j:4*j+4])
					got := vals[i*m+j]
					if !(got == want || math.IsNaN(got) && math.IsNaN(want) || math.Abs(got-want) <= 1e-12*math.Abs(want)) {
						t.Fatalf("BoxIoU[%d, %d] = %v, want %v (boxes %v, %v)", i, j, got, want, ad[4*i:4*i+4], bd[4*j:4*j+4])
					}
				}
			}
		}
		scores := tensor.New(tensor.WithShape(n), tensor.WithBacking(make([]float64, n)))
		for i := 0; i < n; i++ {
			scores.Data().([]float64)[i] = fb.pick(0.5, 0.9, math.NaN(), 0.1, 0.5)
		}
		if n == 0 {
			scores = tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0))
		}
		idxs := make([]int, n)
		for i := range idxs {
			idxs[i] = fb.intn(3)
		}
		for _, run := range []func() ([]int, error){
			func() ([]int, error) { return gops.NMS(a, scores, fb.pick(0, 0.5, 1, 2)) },
			func() ([]int, error) { return gops.BatchedNMS(a, scores, idxs, 0.5) },
			func() ([]int, error) { return gops.RemoveSmallBoxes(a, fb.pick(0, 1, -1, 1e30)) },
		} {
			keep, err := run()
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int]bool{}
			for _, k := range keep {
				if k < 0 || k >= n || seen[k] {
					t.Fatalf("kept %v of %d boxes", keep, n)
				}
				seen[k] = true
			}
		}
	})
}

// evalNoPanic runs g and reads y (nothing for an empty y); a panic in an
// op comes back as an error that names it, which fails the test.
func evalNoPanic(g *gorgonia.ExprGraph, y *gorgonia.Node) ([]float64, error) {
	if !y.IsScalar() && y.Shape().TotalSize() == 0 {
		return nil, nil
	}
	out, err := graphtest.Eval(g, y)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// refIoU is torchvision's box_iou for one pair in float64.
func refIoU(p, q []float64) float64 {
	mx := func(a, b float64) float64 {
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.NaN()
		}
		return math.Max(a, b)
	}
	mn := func(a, b float64) float64 {
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.NaN()
		}
		return math.Min(a, b)
	}
	clamp0 := func(v float64) float64 {
		if v < 0 {
			return 0
		}
		return v
	}
	w := clamp0(mn(p[2], q[2]) - mx(p[0], q[0]))
	h := clamp0(mn(p[3], q[3]) - mx(p[1], q[1]))
	inter := w * h
	union := (p[2]-p[0])*(p[3]-p[1]) + (q[2]-q[0])*(q[3]-q[1]) - inter
	return inter / union
}
