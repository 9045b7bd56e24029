package gops_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/graphtest/conformance"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// boxList is one image's [L, 4] boxes (x1, y1, x2, y2).
func boxList(rows ...[4]float64) *tensor.Dense {
	d := make([]float64, 0, 4*len(rows))
	for _, r := range rows {
		d = append(d, r[:]...)
	}
	return tensor.New(tensor.WithShape(len(rows), 4), tensor.Of(tensor.Float64), tensor.WithBacking(d))
}

// emptyBoxNode is an image without boxes, [0, 4], in like's graph and dtype.
func emptyBoxNode(like *gorgonia.Node) *gorgonia.Node {
	return gorgonia.NewTensor(like.Graph(), like.Dtype(), 2, gorgonia.WithShape(0, 4),
		gorgonia.WithValue(tensor.New(tensor.Of(like.Dtype()), tensor.WithShape(0, 4))))
}

// pyramid is a MultiScaleRoIAlign configuration for the tests: its inputs
// are the feature maps, then the box lists of the images not in empty
// (images in empty get a [0, 4] node built inside the function, since
// graphtest takes no empty inputs).
type pyramid struct {
	levels     int
	imageSizes [][2]int
	empty      []int
	opts       gops.MultiScaleRoIAlignOpts
}

// build is MultiScaleRoIAlign on the inputs in.
func (p pyramid) build(in gorgonia.Nodes) (*gorgonia.Node, error) {
	feats := in[:p.levels]
	next := p.levels
	var boxes gorgonia.Nodes
	for i := range p.imageSizes {
		if contains(p.empty, i) {
			boxes = append(boxes, emptyBoxNode(in[0]))
			continue
		}
		boxes = append(boxes, in[next])
		next++
	}
	return gops.MultiScaleRoIAlign(feats, boxes, p.imageSizes, p.opts)
}

// smooth is cube(MultiScaleRoIAlign(sin(features), boxes)).
func (p pyramid) smooth(in gorgonia.Nodes) (*gorgonia.Node, error) {
	in = append(gorgonia.Nodes{}, in...)
	for l := 0; l < p.levels; l++ {
		var err error
		if in[l], err = gorgonia.Sin(in[l]); err != nil {
			return nil, err
		}
	}
	y, err := p.build(in)
	if err != nil {
		return nil, err
	}
	return gorgonia.Cube(y)
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// mapsOf are the feature maps [n, c, H/stride, W/stride] of the largest
// image size, one per stride.
func mapsOf(n, c int, image [2]int, strides ...int) []*tensor.Dense {
	var out []*tensor.Dense
	for i, s := range strides {
		out = append(out, scaledTensor(1, 0.1*float64(i), n, c, image[0]/s, image[1]/s))
	}
	return out
}

func wrtFirst(n int) []int {
	w := make([]int, n)
	for i := range w {
		w[i] = i
	}
	return w
}

// multiScaleRows are the conformance rows of MultiScaleRoIAlign and
// BoxesToRoIs (the checks of conformance_test.go's table).
func multiScaleRows() []conformance.Row {
	var rows []conformance.Row
	// Two levels (strides 2, 4) of 12x16 images, s0 = 8, k0 = 2: boxes
	// with s < 8 pool from map 0, the others from map 1.
	p2 := pyramid{levels: 2, imageSizes: [][2]int{{12, 16}, {10, 14}},
		opts: gops.MultiScaleRoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2, CanonicalScale: 8, CanonicalLevel: 2}}
	b0 := boxList([4]float64{1, 1.5, 5, 4}, [4]float64{2.5, 0.5, 13, 10.5}, [4]float64{-3, 4, 9.5, 15})
	b1 := boxList([4]float64{3.2, 2.1, 6.7, 5.9}, [4]float64{0.5, 0.5, 12.5, 9.5})
	row := conformance.Row{
		Op: "MultiScaleRoIAlign", Name: "levels=2/out=2x2/sampling=2", F: p2.smooth,
		In: append(mapsOf(2, 1, [2]int{12, 16}, 2, 4), b0, b1), Wrt: wrtFirst(2),
		Check: graphtest.Options{Seed: 6}, Tol32: 1e-6,
		Det: append(mapsOf(2, 8, [2]int{12, 16}, 2, 4), b0, b1),
	}
	pe := p2
	pe.empty = []int{0, 1}
	row.Bare, row.Empty = pe.build, mapsOf(2, 3, [2]int{12, 16}, 2, 4)
	rows = append(rows, row)

	// Three levels (strides 4, 8, 16) of 16x16 images, the second without
	// boxes, adaptive sampling, default mapper (s < 112: map 0; boxes
	// beyond the image reach maps 1 (s = 150) and 2 (s = 300)).
	p3 := pyramid{levels: 3, imageSizes: [][2]int{{16, 16}, {16, 12}, {14, 16}}, empty: []int{1},
		opts: gops.MultiScaleRoIAlignOpts{OutputSize: [2]int{2, 3}}}
	c0 := boxList([4]float64{1, 1, 9, 7.5}, [4]float64{-30, -30, 120, 120}, [4]float64{4.5, 2, 6, 3})
	c2 := boxList([4]float64{-150, -100, 150, 200}, [4]float64{0.5, 3, 14, 12})
	rows = append(rows, conformance.Row{
		Op: "MultiScaleRoIAlign", Name: "levels=3/empty-image/adaptive", F: p3.smooth,
		In: append(mapsOf(3, 1, [2]int{16, 16}, 4, 8, 16), c0, c2), Wrt: wrtFirst(3),
		Check: graphtest.Options{Seed: 7}, Tol32: 1e-6,
	})

	// One level: RoIAlign.
	p1 := pyramid{levels: 1, imageSizes: [][2]int{{12, 12}},
		opts: gops.MultiScaleRoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 1}}
	rows = append(rows, conformance.Row{
		Op: "MultiScaleRoIAlign", Name: "levels=1", F: p1.smooth,
		In: append(mapsOf(1, 2, [2]int{12, 12}, 2), b1), Wrt: wrtFirst(1),
		Check: graphtest.Options{Seed: 8}, Tol32: 1e-6,
	})

	// BoxesToRoIs alone (cubed), and as RoIAlign's boxes.
	toRoIs := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		s0, err := gorgonia.Sin(in[0])
		if err != nil {
			return nil, err
		}
		s1, err := gorgonia.Sin(in[1])
		if err != nil {
			return nil, err
		}
		r, err := gops.BoxesToRoIs(gorgonia.Nodes{s0, emptyBoxNode(in[0]), s1})
		if err != nil {
			return nil, err
		}
		return gorgonia.Cube(r)
	}
	rows = append(rows, conformance.Row{
		Op: "BoxesToRoIs", Name: "3 images, one empty", F: toRoIs,
		In: []*tensor.Dense{b0, b1}, Wrt: []int{0, 1}, Check: graphtest.Options{Seed: 9}, Tol32: 1e-6,
		Bare: func(in gorgonia.Nodes) (*gorgonia.Node, error) { return gops.BoxesToRoIs(in) },
		Empty: []*tensor.Dense{
			tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 4)),
			tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 4)),
		},
	})
	rows = append(rows, conformance.Row{
		Op: "BoxesToRoIs", Name: "into RoIAlign", F: func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			s, err := gorgonia.Sin(in[0])
			if err != nil {
				return nil, err
			}
			r, err := gops.BoxesToRoIs(gorgonia.Nodes{in[1], emptyBoxNode(in[0]), in[2]})
			if err != nil {
				return nil, err
			}
			y, err := gops.RoIAlign(s, r, gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SpatialScale: 0.5})
			if err != nil {
				return nil, err
			}
			return gorgonia.Cube(y)
		},
		In: []*tensor.Dense{rangeTensor(3, 2, 6, 8), b0, b1}, Wrt: []int{0}, Check: graphtest.Options{Seed: 10}, Tol32: 1e-6,
	})
	return rows
}

// TestBoxesToRoIs checks the rows (image index first, empty images
// skipped) and that the RoI ops accept the result as their boxes.
func TestBoxesToRoIs(t *testing.T) {
	g := gorgonia.NewGraph()
	b0 := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(2, 4), gorgonia.WithName("b0"),
		gorgonia.WithValue(boxList([4]float64{0, 0.5, 3, 4}, [4]float64{1, 1, 2, 5})))
	b2 := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(1, 4), gorgonia.WithName("b2"),
		gorgonia.WithValue(boxList([4]float64{2.5, 0, 5, 3.5})))
	rois, err := gops.BoxesToRoIs(gorgonia.Nodes{b0, emptyBoxNode(b0), b2})
	if err != nil {
		t.Fatal(err)
	}
	want := boxesTensor([5]float64{0, 0, 0.5, 3, 4}, [5]float64{0, 1, 1, 2, 5}, [5]float64{2, 2.5, 0, 5, 3.5})
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(3, 8, 6, 6), gorgonia.WithName("x"),
		gorgonia.WithValue(rangeTensor(3, 8, 6, 6)))
	ref := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(3, 5), gorgonia.WithName("ref"), gorgonia.WithValue(want))
	size := [2]int{2, 2}
	ops := []poolOp{
		roiAlignOp(gops.RoIAlignOpts{OutputSize: size, SamplingRatio: 2}),
		roiPoolOp(gops.RoIPoolOpts{OutputSize: size}),
		psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: size, SamplingRatio: 2}),
		psRoIPoolOp(gops.PSRoIPoolOpts{OutputSize: size}),
	}
	nodes := gorgonia.Nodes{rois}
	for _, op := range ops {
		for _, b := range []*gorgonia.Node{rois, ref} {
			y, err := op(x, b)
			if err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, y)
		}
	}
	got := runRead(t, g, nodes...)
	assertClose(t, "rois", got[0], values(want), 0, 0)
	for i := range ops {
		assertClose(t, fmt.Sprintf("op %d on BoxesToRoIs", i), got[1+2*i], got[2+2*i], 0, 0)
	}
}

// TestMultiScaleRoIAlignLevels checks MultiScaleRoIAlign against RoIAlign
// on each level with the level chosen by hand (FPN eq. 1), in float32 and
// float64, and that a box of negative area pools to zeros.
func TestMultiScaleRoIAlignLevels(t *testing.T) {
	// 4 levels, strides 4..32 of a 256x320 image, the default mapper:
	// s < 112 → map 0, [112, 224) → 1, [224, 448) → 2, beyond → 3.
	boxes := [][4]float64{
		{10, 10, 50, 60},      // s 44.7: 0
		{0, 0, 112, 112},      // 112: 1
		{30, 20, 230, 180},    // 178.9: 1
		{0, 0, 224, 224},      // 224: 2
		{-20, 10, 300, 250},   // 277: 2
		{-100, -50, 400, 500}, // 524: 3
		{50, 40, 40, 80},      // negative area: none
		{60, 60, 60, 60},      // 0: map 0
		{90, 80, 10, 20},      // inverted, area 4800, s 69.3: 0
	}
	levels := []int{0, 1, 1, 2, 2, 3, -1, 0, 0}
	strides := []int{4, 8, 16, 32}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			g := gorgonia.NewGraph()
			maps := mapsOf(1, 2, [2]int{256, 320}, strides...)
			var feats gorgonia.Nodes
			for l, m := range maps {
				if dt == tensor.Float32 {
					m = toFloat32(m)
				}
				feats = append(feats, gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(m.Shape()...), gorgonia.WithName(fmt.Sprint("f", l)), gorgonia.WithValue(m)))
			}
			bv := boxList(boxes...)
			if dt == tensor.Float32 {
				bv = toFloat32(bv)
			}
			b := gorgonia.NewTensor(g, dt, 2, gorgonia.WithShape(len(boxes), 4), gorgonia.WithName("boxes"), gorgonia.WithValue(bv))
			opts := gops.MultiScaleRoIAlignOpts{OutputSize: [2]int{3, 2}, SamplingRatio: 2}
			y, err := gops.MultiScaleRoIAlign(feats, gorgonia.Nodes{b}, [][2]int{{256, 320}}, opts)
			if err != nil {
				t.Fatal(err)
			}
			rois, err := gops.BoxesToRoIs(gorgonia.Nodes{b})
			if err != nil {
				t.Fatal(err)
			}
			nodes := gorgonia.Nodes{y}
			for l, f := range feats {
				r, err := gops.RoIAlign(f, rois, gops.RoIAlignOpts{OutputSize: opts.OutputSize, SamplingRatio: 2, SpatialScale: 1 / float64(strides[l])})
				if err != nil {
					t.Fatal(err)
				}
				nodes = append(nodes, r)
			}
			got := runRead(t, g, nodes...)
			per := 2 * 3 * 2
			for k, l := range levels {
				want := make([]float64, per)
				if l >= 0 {
					want = got[1+l][k*per : (k+1)*per]
				}
				assertClose(t, fmt.Sprintf("box %d (level %d)", k, l), got[0][k*per:(k+1)*per], want, 0, 0)
			}
		})
	}
}

// boxPyramid is two levels (strides 2, 4) of 12x16 images, s0 = 8, k0 = 2
// (boxes with s < 8 pool from map 0, the others from map 1), and boxes
// chosen for finite differences: no sample point near an integer of its
// map, no roi side near 1 map pixel, no s near 8 (a level boundary).
// boxPyramidLevels are the boxes' maps, in RoI order.
var (
	boxPyramid = pyramid{levels: 2, imageSizes: [][2]int{{12, 16}, {10, 14}},
		opts: gops.MultiScaleRoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2, CanonicalScale: 8, CanonicalLevel: 2}}
	boxPyramidLevels = []int{0, 1, 0, 1}
)

func boxPyramidInputs(c int) []*tensor.Dense {
	return append(mapsOf(2, c, [2]int{12, 16}, 2, 4),
		boxList([4]float64{1.13, 0.87, 5.41, 4.29}, [4]float64{2.37, 1.21, 13.19, 9.77}),
		boxList([4]float64{0.71, 1.37, 3.93, 6.61}, [4]float64{1.63, 0.59, 12.47, 9.23}))
}

// TestMultiScaleRoIAlignBoxGradients: orders 1–3 w.r.t. the boxes alone
// and w.r.t. features and boxes together (mixed terms), against finite
// differences, with boxes on both levels; the two VMs agree; value and
// gradients are bitwise the same for any GOMAXPROCS.
func TestMultiScaleRoIAlignBoxGradients(t *testing.T) {
	f, in := boxPyramid.smooth, boxPyramidInputs(2)
	order := 3
	if testing.Short() {
		order = 2
	}
	if err := graphtest.Check(f, in, graphtest.Options{Order: order, Wrt: []int{2, 3}, Seed: 21}); err != nil {
		t.Fatal("boxes:", err)
	}
	if err := graphtest.Check(f, in, graphtest.Options{Order: order, Wrt: []int{0, 1, 2, 3}, Seed: 22}); err != nil {
		t.Fatal("features and boxes:", err)
	}
	if err := graphtest.CheckVMs(f, in, graphtest.Options{Wrt: []int{0, 1, 2, 3}}); err != nil {
		t.Fatal("vms/float64:", err)
	}
	if err := graphtest.CheckVMs(f, graphtest.Float32(in), graphtest.Options{Wrt: []int{0, 1, 2, 3}, RTol: 1e-5, ATol: 1e-5}); err != nil {
		t.Fatal("vms/float32:", err)
	}
	if err := graphtest.CheckDeterministic(f, graphtest.Float32(boxPyramidInputs(8)), []int{0, 1, 2, 3}, 1, 2, 3, 8); err != nil {
		t.Fatal("deterministic:", err)
	}
}

// TestMultiScaleRoIAlignBoxGradient: the value, the box gradient and its
// gradient w.r.t. the features are those of RoIAlign on each box's own
// level: Σ_l mask_l ⊙ RoIAlign(map l, rois, scale l), mask_l selecting the
// rows of level l's boxes.
func TestMultiScaleRoIAlignBoxGradient(t *testing.T) {
	g, in := graphtest.Inputs(boxPyramidInputs(2))
	y, err := boxPyramid.build(in)
	if err != nil {
		t.Fatal(err)
	}
	rois := gorgonia.Must(gops.BoxesToRoIs(in[2:]))
	var ref *gorgonia.Node
	for l, scale := range []float64{0.5, 0.25} {
		yl := gorgonia.Must(gops.RoIAlign(in[l], rois, gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SpatialScale: scale, SamplingRatio: 2}))
		s := yl.Shape()
		mask := make([]float64, s.TotalSize())
		row := len(mask) / s[0]
		for k, lk := range boxPyramidLevels {
			if lk == l {
				for i := k * row; i < (k+1)*row; i++ {
					mask[i] = 1
				}
			}
		}
		m := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(s...), gorgonia.WithName(fmt.Sprintf("mask%d", l)),
			gorgonia.WithValue(tensor.New(tensor.WithShape(s...), tensor.WithBacking(mask))))
		yl = gorgonia.Must(gorgonia.HadamardProd(yl, m))
		if ref == nil {
			ref = yl
		} else {
			ref = gorgonia.Must(gorgonia.Add(ref, yl))
		}
	}
	// cost = Σ y², its box gradient, and the features' gradient of that
	// gradient's sum (a mixed second derivative).
	grads := func(y *gorgonia.Node) gorgonia.Nodes {
		cost := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y))))
		gb, err := ad.Grad(cost, in[2], in[3])
		if err != nil {
			t.Fatal(err)
		}
		s := gorgonia.Must(gorgonia.Add(gorgonia.Must(gorgonia.Sum(gb[0])), gorgonia.Must(gorgonia.Sum(gb[1]))))
		gf, err := ad.Grad(s, in[0], in[1])
		if err != nil {
			t.Fatal(err)
		}
		return append(gorgonia.Nodes{y}, append(gb, gf...)...)
	}
	got, want := grads(y), grads(ref)
	out, err := graphtest.Eval(g, append(got, want...)...)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"value", "boxes[0] gradient", "boxes[1] gradient", "features[0] of box gradient", "features[1] of box gradient"}
	for i, name := range names {
		a, b := out[i], out[i+len(names)]
		nonzero := false
		for j := range a {
			if math.Abs(a[j]-b[j]) > 1e-12*(1+math.Abs(b[j])) {
				t.Fatalf("%s[%d]: MultiScaleRoIAlign %v, per-level RoIAlign %v", name, j, a[j], b[j])
			}
			nonzero = nonzero || a[j] != 0
		}
		if !nonzero {
			t.Errorf("%s is all zero", name)
		}
	}
}

// TestMultiScaleRoIAlignBoxGradientNotBuiltUnlessWanted: the features'
// gradients alone build no box-derivative member.
func TestMultiScaleRoIAlignBoxGradientNotBuiltUnlessWanted(t *testing.T) {
	g, in := graphtest.Inputs(boxPyramidInputs(2))
	y, err := boxPyramid.build(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y)))), in[0], in[1]); err != nil {
		t.Fatal(err)
	}
	for _, n := range g.AllNodes() {
		if n.Op() != nil && strings.Contains(n.Op().String(), "BoxDeriv") {
			t.Fatalf("node %v built for the features' gradients", n.Op())
		}
	}
}

// TestMultiScaleRoIAlignBadInput: each bad argument is refused with an
// error that names it, when the node is built or (for box values) when it
// runs.
func TestMultiScaleRoIAlignBadInput(t *testing.T) {
	size := [2]int{2, 2}
	ok := gops.MultiScaleRoIAlignOpts{OutputSize: size}
	maps := func(shapes ...[]int) []*tensor.Dense {
		var out []*tensor.Dense
		for _, s := range shapes {
			out = append(out, rangeTensor(s...))
		}
		return out
	}
	std := func() []*tensor.Dense { return maps([]int{2, 3, 8, 8}, []int{2, 3, 4, 4}) }
	box := boxList([4]float64{1, 1, 5, 6})
	two := []*tensor.Dense{box, box}
	img := [][2]int{{32, 32}, {30, 32}}
	cases := []struct {
		name     string
		features []*tensor.Dense
		boxes    []*tensor.Dense
		images   [][2]int
		opts     gops.MultiScaleRoIAlignOpts
		atRun    bool
		want     string
	}{
		{"no features", nil, two, img, ok, false, "features is empty"},
		{"feature rank", maps([]int{2, 3, 8, 8}, []int{3, 4, 4}), two, img, ok, false, "features[1] must have rank 4"},
		{"batch sizes differ", maps([]int{2, 3, 8, 8}, []int{1, 3, 4, 4}), two, img, ok, false, "features[1] (1, 3, 4, 4) has batch size 1, features[0] (2, 3, 8, 8) has 2"},
		{"channels differ", maps([]int{2, 3, 8, 8}, []int{2, 4, 4, 4}), two, img, ok, false, "features[1] (2, 4, 4, 4) has 4 channels"},
		{"dtypes differ", append(maps([]int{2, 3, 8, 8}), toFloat32(rangeTensor(2, 3, 4, 4))), two, img, ok, false, "features[1] dtype float32 differs from features[0] dtype float64"},
		{"no pixels", maps([]int{2, 3, 8, 8}, []int{2, 3, 0, 4}), two, img, ok, false, "features[1] (2, 3, 0, 4) has no pixels"},
		{"too few box lists", std(), []*tensor.Dense{box}, img, ok, false, "boxes has 1 lists, want one per image: features have batch size 2"},
		{"too many box lists", std(), []*tensor.Dense{box, box, box}, img, ok, false, "boxes has 3 lists"},
		{"imageSizes length", std(), two, img[:1], ok, false, "imageSizes has 1 entries, want one per image"},
		{"image size zero", std(), two, [][2]int{{32, 32}, {0, 32}}, ok, false, "imageSizes[1] = [0 32] must be positive"},
		{"image size negative", std(), two, [][2]int{{32, -1}, {32, 32}}, ok, false, "imageSizes[0] = [32 -1] must be positive"},
		{"box columns", std(), []*tensor.Dense{box, rangeTensor(2, 5)}, img, ok, false, "boxes[1] must be [L, 4]"},
		{"box rank", std(), []*tensor.Dense{box, rangeTensor(4)}, img, ok, false, "boxes[1] must have rank 2"},
		{"box dtype", std(), []*tensor.Dense{box, toFloat32(box)}, img, ok, false, "boxes[1] dtype float32 differs from the features' dtype float64"},
		{"output size", std(), two, img, gops.MultiScaleRoIAlignOpts{OutputSize: [2]int{0, 2}}, false, "OutputSize [0 2] must be positive"},
		{"sampling ratio", std(), two, img, gops.MultiScaleRoIAlignOpts{OutputSize: size, SamplingRatio: 5000}, false, "SamplingRatio 5000"},
		{"canonical scale", std(), two, img, gops.MultiScaleRoIAlignOpts{OutputSize: size, CanonicalScale: -224}, false, "CanonicalScale -224 must be >= 0"},
		{"canonical level", std(), two, img, gops.MultiScaleRoIAlignOpts{OutputSize: size, CanonicalLevel: -3}, false, "CanonicalLevel -3 must be >= 0 (0 means 4)"},
		{"middle scale not half", maps([]int{2, 3, 16, 16}, []int{2, 3, 8, 8}, []int{2, 3, 4, 4}), two, img, gops.MultiScaleRoIAlignOpts{OutputSize: size, Scales: []float64{0.25, 0.9, 0.0625}}, false, "scales [0.25 0.9 0.0625] put features[1] (scale 0.9) at FPN level 0, want 3: each map must have half the scale of the one before"},
		{"inferred middle scale not half", maps([]int{2, 3, 8, 8}, []int{2, 3, 8, 8}, []int{2, 3, 2, 2}), two, img, ok, false, "put features[1] (scale 0.25) at FPN level 2, want 3"},
		{"scales length", std(), two, img, gops.MultiScaleRoIAlignOpts{OutputSize: size, Scales: []float64{0.25}}, false, "Scales has 1 entries for 2 feature maps"},
		{"scale zero", std(), two, img, gops.MultiScaleRoIAlignOpts{OutputSize: size, Scales: []float64{0.25, 0}}, false, "Scales[1] = 0 must be positive"},
		{"scale NaN", std(), two, img, gops.MultiScaleRoIAlignOpts{OutputSize: size, Scales: []float64{math.NaN(), 0.125}}, false, "Scales[0] = NaN must be positive"},
		{"scale infinite", std(), two, img, gops.MultiScaleRoIAlignOpts{OutputSize: size, Scales: []float64{math.Inf(1), 0.125}}, false, "Scales[0] = +Inf must be positive and finite in float64, the features' dtype, and in float32"},
		{"scales 0 in float32", std(), two, img, gops.MultiScaleRoIAlignOpts{OutputSize: size, Scales: []float64{1e-300, 1e-310}}, false, "Scales[0] = 1e-300 must be positive and finite in float64, the features' dtype, and in float32, in which the FPN levels are computed"},
		{"scale infinite in float32", std(), two, img, gops.MultiScaleRoIAlignOpts{OutputSize: size, Scales: []float64{1e39, 5e38}}, false, "Scales[0] = 1e+39 must be positive and finite in float64"},
		{"scale 0 in float32 features", []*tensor.Dense{toFloat32(rangeTensor(2, 3, 8, 8)), toFloat32(rangeTensor(2, 3, 4, 4))}, []*tensor.Dense{toFloat32(box), toFloat32(box)}, img,
			gops.MultiScaleRoIAlignOpts{OutputSize: size, Scales: []float64{0.25, 1e-60}}, false, "Scales[1] = 1e-60 must be positive and finite in float32, the features' dtype"},
		{"scales not one level per map", std(), two, img, gops.MultiScaleRoIAlignOpts{OutputSize: size, Scales: []float64{0.25, 0.0625}}, false, "give FPN levels 2 to 4, not one level per each of the 2 feature maps"},
		{"oblong: height and width disagree", maps([]int{2, 3, 8, 2}, []int{2, 3, 4, 1}), two, img, ok, false, "the height gives scale 2^-2, the width 2^-4 (torchvision would use the height's); give MultiScaleRoIAlignOpts.Scales"},
		{"NaN coordinate", std(), []*tensor.Dense{box, boxList([4]float64{1, 1, 2, 2}, [4]float64{0, math.NaN(), 3, 3})}, img, ok, true, "MultiScaleRoIAlign: boxes[1] row 1: y1 is NaN (box 2 of the concatenated list)"},
		{"infinite coordinate", std(), []*tensor.Dense{boxList([4]float64{1, 1, math.Inf(1), 2}), box}, img, ok, true, "MultiScaleRoIAlign: boxes[0] row 0: x2 is +Inf (box 0 of the concatenated list)"},
		{"huge adaptive grid", std(), []*tensor.Dense{box, boxList([4]float64{0, 0, 3e7, 3e7})}, img, ok, true, "MultiScaleRoIAlign: boxes[1] row 0 (box 1 of the concatenated list), level 1: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := gorgonia.NewGraph()
			node := namedNodes(g)
			var feats, boxes gorgonia.Nodes
			for _, f := range c.features {
				feats = append(feats, node(f))
			}
			for _, b := range c.boxes {
				boxes = append(boxes, node(b))
			}
			y, err := gops.MultiScaleRoIAlign(feats, boxes, c.images, c.opts)
			err = graphError(t, g, y, err, c.atRun)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "gops: ") {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
	t.Run("nil feature", func(t *testing.T) {
		if _, err := gops.MultiScaleRoIAlign(gorgonia.Nodes{nil}, nil, nil, ok); err == nil || !strings.Contains(err.Error(), "features[0] is nil") {
			t.Fatalf("error %v", err)
		}
	})
}

// namedNodes returns a function that puts values into g as input nodes
// named v0, v1, ...: Gorgonia merges unnamed nodes of one type and shape.
func namedNodes(g *gorgonia.ExprGraph) func(v *tensor.Dense) *gorgonia.Node {
	i := 0
	return func(v *tensor.Dense) *gorgonia.Node {
		i++
		return gorgonia.NewTensor(g, v.Dtype(), v.Dims(), gorgonia.WithShape(v.Shape()...), gorgonia.WithValue(v), gorgonia.WithName(fmt.Sprint("v", i)))
	}
}

// TestBoxesToRoIsBadInput: the box lists BoxesToRoIs refuses.
func TestBoxesToRoIsBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	node := namedNodes(g)
	box := node(boxList([4]float64{1, 1, 5, 6}))
	cases := []struct {
		name  string
		boxes gorgonia.Nodes
		want  string
	}{
		{"no lists", nil, "no box lists"},
		{"nil list", gorgonia.Nodes{box, nil}, "boxes[1] is nil"},
		{"columns", gorgonia.Nodes{node(rangeTensor(3, 5))}, "boxes[0] must be [L, 4] (x1, y1, x2, y2), got (3, 5)"},
		{"rank", gorgonia.Nodes{node(rangeTensor(1, 3, 4))}, "boxes[0] must have rank 2"},
		{"dtypes differ", gorgonia.Nodes{box, node(toFloat32(boxList([4]float64{1, 1, 5, 6})))}, "boxes[1] dtype float32 differs from boxes[0] dtype float64"},
		{"int", gorgonia.Nodes{node(tensor.New(tensor.WithShape(1, 4), tensor.WithBacking([]int{1, 2, 3, 4})))}, "boxes[0] dtype int"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			y, err := gops.BoxesToRoIs(c.boxes)
			if y != nil || err == nil || !strings.Contains(err.Error(), "gops: BoxesToRoIs: "+c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// TestInferScale: torchvision's _infer_scale, a power of two rounded in
// float32, including its odd cases for maps much larger than the image
// they were padded from.
func TestInferScale(t *testing.T) {
	for _, c := range []struct {
		feature, image int
		want           float64
	}{
		{20, 80, 0.25}, {24, 80, 0.25}, {2, 48, 1.0 / 32}, {16, 40, 0.5}, {5, 80, 1.0 / 16}, {3, 80, 1.0 / 32}, {8, 8, 1},
	} {
		if got := gops.InferScale(c.feature, c.image); got != c.want {
			t.Errorf("InferScale(%d, %d) = %v, want %v", c.feature, c.image, got, c.want)
		}
	}
}
