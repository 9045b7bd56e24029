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
