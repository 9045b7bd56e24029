package gops_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/graphtest/conformance"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Boxes for the numeric checks, away from every kink: no two compared
// coordinates are equal, no overlap side or clipped coordinate is within
// 1e-3 of its bound. boxRowsB's last box overlaps none of boxRowsA's.
var (
	boxRowsA = tensor.New(tensor.WithShape(3, 4), tensor.WithBacking([]float64{
		0.5, 1.0, 4.2, 3.7,
		2.1, 0.3, 5.3, 2.9,
		1.2, 2.2, 3.1, 4.6,
	}))
	boxRowsB = tensor.New(tensor.WithShape(3, 4), tensor.WithBacking([]float64{
		1.1, 0.7, 3.9, 3.3,
		0.2, 1.6, 2.7, 5.1,
		6.0, 5.0, 7.5, 6.2,
	}))
	// boxPairsB pairs with boxRowsA row by row: overlapping, overlapping,
	// disjoint.
	boxPairsB = tensor.New(tensor.WithShape(3, 4), tensor.WithBacking([]float64{
		1.1, 0.7, 3.9, 3.3,
		0.2, 1.6, 2.7, 5.1,
		6.0, 5.0, 7.5, 6.2,
	}))
	emptyBoxes = tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 4))
)

// cubeOf is op's result cubed, so that the second and third derivatives of
// the linear and piecewise-linear ops are not zero.
func cubeOf(op graphtest.Func) graphtest.Func {
	return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		y, err := op(in)
		if err != nil {
			return nil, err
		}
		return gorgonia.Cube(y)
	}
}

// boxRows are the conformance rows of the box functions and IndexSelect.
// CompleteBoxIoU and CompleteBoxIoULoss have none: their α is held constant
// (torchvision's no_grad), so their derivatives are not those of the
// function and finite differences cannot check them; TestCompleteBoxIoUChecks
// runs their other checks, and the golden values their first and second
// derivatives against torch.
func boxRows() []conformance.Row {
	one := func(op, name string, f func(x *gorgonia.Node) (*gorgonia.Node, error), x *tensor.Dense) conformance.Row {
		bare := func(in gorgonia.Nodes) (*gorgonia.Node, error) { return f(in[0]) }
		return conformance.Row{Op: op, Name: name, F: cubeOf(bare), In: []*tensor.Dense{x}, Wrt: []int{0},
			Check: graphtest.Options{Seed: 7}, Tol32: 2e-5, Bare: bare, Empty: []*tensor.Dense{emptyBoxes}}
	}
	two := func(op, name string, f func(a, b *gorgonia.Node) (*gorgonia.Node, error), b *tensor.Dense) conformance.Row {
		bare := func(in gorgonia.Nodes) (*gorgonia.Node, error) { return f(in[0], in[1]) }
		return conformance.Row{Op: op, Name: name, F: cubeOf(bare), In: []*tensor.Dense{boxRowsA, b}, Wrt: []int{0, 1},
			Check: graphtest.Options{Seed: 8, RTol: 2e-5, ATol: 1e-6}, Tol32: 2e-5, Bare: bare,
			Empty: []*tensor.Dense{emptyBoxes, boxRowsB}}
	}
	clipIn := tensor.New(tensor.WithShape(2, 4), tensor.WithBacking([]float64{-0.5, 1.2, 3.3, 4.7, 0.4, -2.0, 6.1, 2.5}))
	rows := []conformance.Row{
		one("BoxArea", "generic", gops.BoxArea, boxRowsA),
		one("BoxConvert", "xyxy-cxcywh", func(x *gorgonia.Node) (*gorgonia.Node, error) { return gops.BoxConvert(x, "xyxy", "cxcywh") }, boxRowsA),
		one("BoxConvert", "cxcywh-xywh", func(x *gorgonia.Node) (*gorgonia.Node, error) { return gops.BoxConvert(x, "cxcywh", "xywh") }, boxRowsA),
		one("ClipBoxesToImage", "size=4x5", func(x *gorgonia.Node) (*gorgonia.Node, error) { return gops.ClipBoxesToImage(x, [2]int{4, 5}) }, clipIn),
		two("BoxIoU", "3x3", gops.BoxIoU, boxRowsB),
		two("GeneralizedBoxIoU", "3x3", gops.GeneralizedBoxIoU, boxRowsB),
		two("DistanceBoxIoU", "3x3/eps=1e-7", func(a, b *gorgonia.Node) (*gorgonia.Node, error) { return gops.DistanceBoxIoU(a, b, 1e-7) }, boxRowsB),
	}
	for _, red := range []string{"none", "sum", "mean"} {
		rows = append(rows,
			two("GeneralizedBoxIoULoss", red, func(a, b *gorgonia.Node) (*gorgonia.Node, error) {
				return gops.GeneralizedBoxIoULoss(a, b, ad.Reduction(red), 1e-7)
			}, boxPairsB),
			two("DistanceBoxIoULoss", red, func(a, b *gorgonia.Node) (*gorgonia.Node, error) {
				return gops.DistanceBoxIoULoss(a, b, ad.Reduction(red), 1e-7)
			}, boxPairsB))
	}
	for i := range rows {
		if strings.HasSuffix(rows[i].Op, "Loss") {
			rows[i].Empty[1] = emptyBoxes
			if rows[i].Name != "none" {
				rows[i].Bare, rows[i].Empty = nil, nil // a scalar of nothing is not empty
			}
		}
	}
	logits := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{-1.3, 0.4, 2.2, -0.2, 1.7, -2.5}))
	targets := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{0, 1, 1, 0.3, 0, 0.8}))
	for _, fc := range []struct {
		name         string
		alpha, gamma float64
		red          string
	}{{"alpha=0.25/gamma=2/none", 0.25, 2, "none"}, {"alpha=-1/gamma=1.5/sum", -1, 1.5, "sum"}, {"alpha=0.5/gamma=0/mean", 0.5, 0, "mean"}} {
		bare := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return gops.SigmoidFocalLoss(in[0], in[1], fc.alpha, fc.gamma, ad.Reduction(fc.red))
		}
		row := conformance.Row{Op: "SigmoidFocalLoss", Name: fc.name, F: bare, In: []*tensor.Dense{logits, targets}, Wrt: []int{0, 1},
			Check: graphtest.Options{Seed: 9, RTol: 2e-5, ATol: 1e-6}, Tol32: 2e-5}
		if fc.red == "none" {
			row.Bare, row.Empty = bare, []*tensor.Dense{tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 3)), tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 3))}
		}
		rows = append(rows, row)
	}
	sel := func(idx []int) graphtest.Func {
		return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			i, err := ad.Constant(in[0].Graph(), tensor.New(tensor.WithShape(len(idx)), tensor.WithBacking(idx)))
			if err != nil {
				return nil, err
			}
			return gops.IndexSelect(in[0], i)
		}
	}
	x := rangeTensor(4, 2, 3)
	rows = append(rows, conformance.Row{Op: "IndexSelect", Name: "repeats", F: func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		s, err := gorgonia.Sin(in[0])
		if err != nil {
			return nil, err
		}
		return cubeOf(sel([]int{2, 0, 2, 3, 2}))(gorgonia.Nodes{s})
	}, In: []*tensor.Dense{x}, Wrt: []int{0}, Check: graphtest.Options{Seed: 10}, Tol32: 1e-6,
		Bare: sel([]int{}), Empty: []*tensor.Dense{tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 2, 3))}})
	return rows
}

// TestCompleteBoxIoUChecks runs the conformance checks other than finite
// differences on CompleteBoxIoU and CompleteBoxIoULoss, and checks that
// their first derivatives are those of DIoU − α·v with α a constant: at
// the same boxes, perturbing only v's inputs through α would change the
// finite difference but not the gradient.
func TestCompleteBoxIoUChecks(t *testing.T) {
	ciou := func(in gorgonia.Nodes) (*gorgonia.Node, error) { return gops.CompleteBoxIoU(in[0], in[1], 1e-7) }
	loss := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		return gops.CompleteBoxIoULoss(in[0], in[1], "none", 1e-7)
	}
	for _, c := range []struct {
		name  string
		f     graphtest.Func
		b     *tensor.Dense
		empty *tensor.Dense
	}{{"CompleteBoxIoU", ciou, boxRowsB, boxRowsB}, {"CompleteBoxIoULoss", loss, boxPairsB, emptyBoxes}} {
		t.Run(c.name, func(t *testing.T) {
			in := []*tensor.Dense{boxRowsA, c.b}
			if err := graphtest.CheckVMs(cubeOf(c.f), in, graphtest.Options{RTol: 1e-12, ATol: 1e-12}); err != nil {
				t.Fatal(err)
			}
			if err := graphtest.CheckVMs(cubeOf(c.f), allFloat32(in), graphtest.Options{RTol: 2e-5, ATol: 2e-5}); err != nil {
				t.Fatal(err)
			}
			checkDeterministic(t, cubeOf(c.f), allFloat32(in), []int{0, 1}, 1, 2, 3, 8)
			checkEmpty(t, c.f, []*tensor.Dense{emptyBoxes, c.empty}, []int{0, 1})
			// Where the aspect ratios of a pair agree, v = 0 and its
			// gradient vanishes: CIoU's derivatives of every order are then
			// DIoU's, which the conformance table checks numerically.
			same := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking([]float64{
				1.1, 0.7, 1.1 + 3.7, 0.7 + 2.7, 0.2, 1.6, 0.2 + 3.2, 1.6 + 1.4, 0.0, 0.5, 4.6, 2.9}))
			a := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking([]float64{
				0.5, 1.0, 0.5 + 3.7, 1.0 + 2.7, 2.1, 0.3, 2.1 + 3.2, 0.3 + 1.4, 0.6, 1.3, 0.6 + 4.6, 1.3 + 2.4}))
			if c.name == "CompleteBoxIoU" {
				return // (the pairwise function has cross pairs of other ratios)
			}
			if err := graphtest.Check(cubeOf(c.f), []*tensor.Dense{a, same}, graphtest.Options{Order: 3, Seed: 11, RTol: 2e-5, ATol: 1e-6}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// evalBoxOp runs f on boxes (float64) and returns its values.
func evalBoxOp(t *testing.T, f graphtest.Func, in ...*tensor.Dense) []float64 {
	t.Helper()
	g, nodes := inputNodes(in)
	y, err := f(nodes)
	if err != nil {
		t.Fatal(err)
	}
	return runRead(t, g, y)[0]
}

// TestBoxIoUNonFinite: non-finite coordinates give NaN (or an infinite
// ratio's value), as torchvision's, never a panic or an error.
func TestBoxIoUNonFinite(t *testing.T) {
	b := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking([]float64{0, 0, 1, 1, math.NaN(), 0, 1, 1, 0, 0, math.Inf(1), 1}))
	for name, f := range map[string]graphtest.Func{
		"BoxIoU":            func(in gorgonia.Nodes) (*gorgonia.Node, error) { return gops.BoxIoU(in[0], in[1]) },
		"GeneralizedBoxIoU": func(in gorgonia.Nodes) (*gorgonia.Node, error) { return gops.GeneralizedBoxIoU(in[0], in[1]) },
		"DistanceBoxIoU":    func(in gorgonia.Nodes) (*gorgonia.Node, error) { return gops.DistanceBoxIoU(in[0], in[1], 1e-7) },
		"CompleteBoxIoU":    func(in gorgonia.Nodes) (*gorgonia.Node, error) { return gops.CompleteBoxIoU(in[0], in[1], 1e-7) },
	} {
		got := evalBoxOp(t, f, b, b)
		if got[0] != 1 && name != "CompleteBoxIoU" || !math.IsNaN(got[1]) || !math.IsNaN(got[3]) {
			t.Errorf("%s: %v, want 1 for the finite pair and NaN with the NaN box", name, got)
		}
	}
}

// TestIndexSelect: values, repeats, the scatter-add gradient, and an index
// out of range reported when the graph runs.
func TestIndexSelect(t *testing.T) {
	x := rangeTensor(3, 2)
	g, nodes := inputNodes([]*tensor.Dense{x})
	idx, _ := ad.Constant(g, tensor.New(tensor.WithShape(4), tensor.WithBacking([]int{2, 0, 2, 1})))
	y, err := gops.IndexSelect(nodes[0], idx)
	if err != nil {
		t.Fatal(err)
	}
	gr, err := ad.Grad(gorgonia.Must(gorgonia.Sum(y)), nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	got := runRead(t, g, y, gr[0])
	xd := x.Data().([]float64)
	want := append(append(append(append([]float64{}, xd[4:6]...), xd[0:2]...), xd[4:6]...), xd[2:4]...)
	assertClose(t, "values", got[0], want, 0, 0)
	assertClose(t, "gradient", got[1], []float64{1, 1, 1, 1, 2, 2}, 0, 0)

	g, nodes = inputNodes([]*tensor.Dense{x})
	bad, _ := ad.Constant(g, tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{0, 3})))
	y, err = gops.IndexSelect(nodes[0], bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := graphtest.Eval(g, y); err == nil || !strings.Contains(err.Error(), "idx[1] = 3 is outside [0, 3)") {
		t.Fatalf("error %v, want the index out of range named", err)
	}
}

// TestBoxOpsBadInput: each error names the function and the problem, when
// the node is built.
func TestBoxOpsBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	mk := func(dt tensor.Dtype, shape ...int) *gorgonia.Node {
		return gorgonia.NewTensor(g, dt, len(shape), gorgonia.WithShape(shape...))
	}
	ok, ok32 := mk(tensor.Float64, 3, 4), mk(tensor.Float32, 3, 4)
	five, vec, ints := mk(tensor.Float64, 3, 5), mk(tensor.Float64, 4), mk(tensor.Int, 3, 4)
	other := mk(tensor.Float64, 2, 4)
	intIdx, floatIdx := mk(tensor.Int, 2), mk(tensor.Float64, 2)
	cases := []struct {
		name string
		f    func() (*gorgonia.Node, error)
		want string
	}{
		{"area nil", func() (*gorgonia.Node, error) { return gops.BoxArea(nil) }, "gops: BoxArea: boxes is nil"},
		{"area columns", func() (*gorgonia.Node, error) { return gops.BoxArea(five) }, "boxes must be [K, 4]"},
		{"area rank", func() (*gorgonia.Node, error) { return gops.BoxArea(vec) }, "boxes must have rank 2"},
		{"area dtype", func() (*gorgonia.Node, error) { return gops.BoxArea(ints) }, "boxes dtype int"},
		{"convert format", func() (*gorgonia.Node, error) { return gops.BoxConvert(ok, "xyxy", "yxyx") }, `unknown box format "yxyx"`},
		{"convert in format", func() (*gorgonia.Node, error) { return gops.BoxConvert(ok, "XYXY", "xywh") }, `unknown box format "XYXY"`},
		{"clip size", func() (*gorgonia.Node, error) { return gops.ClipBoxesToImage(ok, [2]int{-1, 5}) }, "size [-1 5] (height, width) must not be negative"},
		{"iou dtypes", func() (*gorgonia.Node, error) { return gops.BoxIoU(ok, ok32) }, "boxes2 dtype float32 differs from boxes1 dtype float64"},
		{"iou boxes2", func() (*gorgonia.Node, error) { return gops.GeneralizedBoxIoU(ok, five) }, "gops: GeneralizedBoxIoU: boxes2 must be [K, 4]"},
		{"diou eps NaN", func() (*gorgonia.Node, error) { return gops.DistanceBoxIoU(ok, ok, math.NaN()) }, "eps NaN must be finite"},
		{"ciou eps negative", func() (*gorgonia.Node, error) { return gops.CompleteBoxIoU(ok, ok, -1) }, "eps -1 must be finite"},
		{"loss shapes", func() (*gorgonia.Node, error) { return gops.GeneralizedBoxIoULoss(ok, other, "none", 1e-7) }, "must both be [K, 4] (pairs)"},
		{"loss reduction", func() (*gorgonia.Node, error) { return gops.DistanceBoxIoULoss(ok, ok, "avg", 1e-7) }, `unknown reduction "avg"`},
		{"loss eps", func() (*gorgonia.Node, error) { return gops.CompleteBoxIoULoss(ok, ok, "sum", math.Inf(1)) }, "eps +Inf"},
		{"focal shapes", func() (*gorgonia.Node, error) { return gops.SigmoidFocalLoss(ok, other, 0.25, 2, "none") }, "targets float64 (2, 4) differ"},
		{"focal dtypes", func() (*gorgonia.Node, error) { return gops.SigmoidFocalLoss(ok, ok32, 0.25, 2, "none") }, "differ from inputs"},
		{"focal gamma", func() (*gorgonia.Node, error) { return gops.SigmoidFocalLoss(ok, ok, 0.25, -1, "none") }, "gamma -1 must be finite"},
		{"focal alpha", func() (*gorgonia.Node, error) { return gops.SigmoidFocalLoss(ok, ok, math.NaN(), 2, "none") }, "alpha NaN"},
		{"focal nil", func() (*gorgonia.Node, error) { return gops.SigmoidFocalLoss(nil, ok, 0.25, 2, "none") }, "inputs or targets is nil"},
		{"index float idx", func() (*gorgonia.Node, error) { return gops.IndexSelect(ok, floatIdx) }, "idx must be a tensor.Int vector"},
		{"index int x", func() (*gorgonia.Node, error) { return gops.IndexSelect(ints, intIdx) }, "x dtype int"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			y, err := c.f()
			if err == nil || y != nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, %v; want an error containing %q", y, err, c.want)
			}
		})
	}
}

// TestNMSBadInput: errors on values, never a panic.
func TestNMSBadInput(t *testing.T) {
	b := tensor.New(tensor.WithShape(2, 4), tensor.WithBacking([]float64{0, 0, 1, 1, 0, 0, 2, 2}))
	s := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{0.5, 0.7}))
	s32 := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float32{0.5, 0.7}))
	s3 := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{0.5, 0.7, 0.1}))
	b5 := tensor.New(tensor.WithShape(2, 5), tensor.WithBacking(make([]float64, 10)))
	bi := tensor.New(tensor.WithShape(2, 4), tensor.WithBacking(make([]int, 8)))
	cases := []struct {
		name string
		f    func() ([]int, error)
		want string
	}{
		{"nil boxes", func() ([]int, error) { return gops.NMS(nil, s, 0.5) }, "gops: NMS: boxes is nil"},
		{"nil scores", func() ([]int, error) { return gops.NMS(b, nil, 0.5) }, "scores is nil"},
		{"boxes columns", func() ([]int, error) { return gops.NMS(b5, s, 0.5) }, "boxes must be [K, 4]"},
		{"int boxes", func() ([]int, error) { return gops.NMS(bi, s, 0.5) }, "boxes dtype int"},
		{"scores dtype", func() ([]int, error) { return gops.NMS(b, s32, 0.5) }, "scores dtype float32 differs"},
		{"scores length", func() ([]int, error) { return gops.NMS(b, s3, 0.5) }, "scores must be [K] = [2]"},
		{"negative threshold", func() ([]int, error) { return gops.NMS(b, s, -0.1) }, "iouThreshold -0.1 must be >= 0"},
		{"NaN threshold", func() ([]int, error) { return gops.NMS(b, s, math.NaN()) }, "iouThreshold NaN"},
		{"batched idxs", func() ([]int, error) { return gops.BatchedNMS(b, s, []int{0}, 0.5) }, "idxs has 1 entries for 2 boxes"},
		{"batched threshold", func() ([]int, error) { return gops.BatchedNMS(b, s, []int{0, 1}, math.NaN()) }, "gops: BatchedNMS: iouThreshold NaN"},
		{"small NaN", func() ([]int, error) { return gops.RemoveSmallBoxes(b, math.NaN()) }, "minSize is NaN"},
		{"small columns", func() ([]int, error) { return gops.RemoveSmallBoxes(b5, 1) }, "gops: RemoveSmallBoxes: boxes must be [K, 4]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keep, err := c.f()
			if err == nil || keep != nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, %v; want an error containing %q", keep, err, c.want)
			}
		})
	}
	// NaN and infinite boxes are values, not errors.
	nb := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking([]float64{math.NaN(), 0, 1, 1, 0, 0, math.Inf(1), 1, 0, 0, 1, 1}))
	ns := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{0.9, 0.8, 0.7}))
	if keep, err := gops.NMS(nb, ns, 0.5); err != nil || len(keep) == 0 {
		t.Fatalf("NaN boxes: %v, %v", keep, err)
	}
}

// TestNMSViews: a view (a transposed or sliced tensor) is read in row-major
// order.
func TestNMSViews(t *testing.T) {
	full := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking([]float64{0, 0, 1, 1, 0, 0, 1, 1.1, 5, 5, 6, 6}))
	s := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{0.5, 0.9, 0.7}))
	keep, err := gops.NMS(full, s, 0.5)
	if err != nil || !slices.Equal(keep, []int{1, 2}) {
		t.Fatalf("got %v, %v; want [1 2]", keep, err)
	}
}

// degenerateBoxes: zero-width, zero-height, points and inverted zero boxes,
// with two normal ones.
var degenerateBoxes = tensor.New(tensor.WithShape(8, 4), tensor.WithBacking([]float64{
	2, 0, 0, 0, // inverted, zero height
	0, 0, 0, 0, // a point at the origin
	0, 3, 2, 3, // zero height
	2, 1, 2, 1, // a point
	1, 0, 1, 2, // zero width
	3, 2, 1, 2, // inverted, zero height
	0, 0, 1, 1,
	3, 1, 4, 2,
}))

// TestBoxOpsForwardWithGrad: the values of a box function are the same in
// a graph that holds only it and in one that also holds its gradients
// (Gorgonia's own divide gave +Inf for x/0 on some compiled paths).
func TestBoxOpsForwardWithGrad(t *testing.T) {
	fs := map[string]func(a, b *gorgonia.Node) (*gorgonia.Node, error){
		"BoxIoU":            gops.BoxIoU,
		"GeneralizedBoxIoU": gops.GeneralizedBoxIoU,
		"DistanceBoxIoU":    func(a, b *gorgonia.Node) (*gorgonia.Node, error) { return gops.DistanceBoxIoU(a, b, 1e-7) },
		"CompleteBoxIoU":    func(a, b *gorgonia.Node) (*gorgonia.Node, error) { return gops.CompleteBoxIoU(a, b, 1e-7) },
		"GeneralizedBoxIoULoss": func(a, b *gorgonia.Node) (*gorgonia.Node, error) {
			return gops.GeneralizedBoxIoULoss(a, b, "none", 1e-7)
		},
		"DistanceBoxIoULoss": func(a, b *gorgonia.Node) (*gorgonia.Node, error) { return gops.DistanceBoxIoULoss(a, b, "none", 1e-7) },
		"CompleteBoxIoULoss": func(a, b *gorgonia.Node) (*gorgonia.Node, error) { return gops.CompleteBoxIoULoss(a, b, "none", 1e-7) },
	}
	d := degenerateBoxes.Data().([]float64)
	k := len(d) / 4
	for name, f := range fs {
		for _, f32 := range []bool{false, true} {
			for i := 0; i < k; i++ {
				for j := 0; j < k; j++ {
					a := tensor.New(tensor.WithShape(1, 4), tensor.WithBacking(append([]float64(nil), d[4*i:4*i+4]...)))
					b := tensor.New(tensor.WithShape(1, 4), tensor.WithBacking(append([]float64(nil), d[4*j:4*j+4]...)))
					in := []*tensor.Dense{a, b}
					if f32 {
						in = allFloat32(in)
					}
					eval := func(withGrad bool) []float64 {
						g, nodes := inputNodes(in)
						y, err := f(nodes[0], nodes[1])
						if err != nil {
							t.Fatal(err)
						}
						if withGrad {
							if _, err := ad.Grad(gorgonia.Must(gorgonia.Sum(y)), nodes...); err != nil {
								t.Fatal(err)
							}
						}
						return runRead(t, g, y)[0]
					}
					alone, with := eval(false), eval(true)
					for e := range alone {
						if !(alone[e] == with[e] || math.IsNaN(alone[e]) && math.IsNaN(with[e])) {
							t.Errorf("%s float32=%v %v %v: %v alone, %v with gradients", name, f32, d[4*i:4*i+4], d[4*j:4*j+4], alone[e], with[e])
						}
					}
				}
			}
		}
	}
}
