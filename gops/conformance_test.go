package gops_test

import (
	"fmt"
	"testing"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The conformance table: every op of the package, in every configuration
// listed, passes the same checks (torchvision's RoIOpTester):
//
//   - order3: derivatives of orders 1, 2 and 3 w.r.t. the differentiable
//     inputs agree with finite differences (graphtest.Check, float64);
//   - vms/float64, vms/float32: the TapeMachine (with ad.Grad) and the
//     LispMachine (with the ops' DoDiff) agree on the value and the
//     first-order gradients (graphtest.CheckVMs);
//   - deterministic: value and first-order gradients are bitwise the same
//     for GOMAXPROCS 1, 2, 3 and 8 (float32);
//   - empty (once per op): K = 0 boxes or batch 0 gives an empty result and
//     zero gradients, in float32 and float64.
//
// Each op also has a fuzz target (fuzz_test.go). A new op joins by adding
// rows here and a Fuzz function there; its own semantics (golden values,
// bad input, special cases) stay in its own test file.

// conformanceCase is one row of the table.
type conformanceCase struct {
	op, name string
	// f is the op inside a smooth composite, so that every derivative order
	// is non-zero and passes through every kernel of the op's family.
	f graphtest.Func
	// in are f's inputs (float64); wrt the differentiable ones.
	in  []*tensor.Dense
	wrt []int
	// check holds the tolerances of order3 (Order 3 and Wrt wrt, unless
	// set); more are further numeric checks, each its own subtest.
	check graphtest.Options
	more  []graphtest.Options
	// noLisp, if not empty, says why the vms checks are skipped.
	noLisp string
	// tol32 is vms/float32's relative and absolute tolerance.
	tol32 float64
	// det are the inputs of the determinism check (nil: in).
	det []*tensor.Dense
	// bare is the op alone and empty its inputs with no boxes or batch 0;
	// set on one row per op (Gorgonia's own ops panic on empty tensors, so
	// the empty check sums the op's result directly).
	bare  graphtest.Func
	empty []*tensor.Dense
}

// poolRow is a row of a pooling op: cube(op(sin(x), boxes)), gradients
// w.r.t. x.
func poolRow(opName, name string, op poolOp, x, boxes, det *tensor.Dense, seed uint64) conformanceCase {
	return conformanceCase{
		op: opName, name: name, f: cubeOfSinPool(op), in: []*tensor.Dense{x, boxes}, wrt: []int{0},
		check: graphtest.Options{Seed: seed}, tol32: 1e-6, det: []*tensor.Dense{det, manyBoxes},
	}
}

// withEmpty adds the empty check to a pooling row: the op on K = 0 boxes.
func withEmpty(c conformanceCase, op poolOp) conformanceCase {
	c.bare = func(in gorgonia.Nodes) (*gorgonia.Node, error) { return op(in[0], in[1]) }
	c.empty = []*tensor.Dense{rangeTensor(2, 8, 5, 6), tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 5))}
	return c
}

func conformanceCases() []conformanceCase {
	var cs []conformanceCase
	x := rangeTensor(2, 2, 5, 6)
	for i, c := range roiAlignOptGrid {
		row := poolRow("RoIAlign", c.name, roiAlignOp(c.opts), x, testBoxes, rangeTensor(2, 8, 5, 6), 1)
		row.det[1] = testBoxes
		if i == 0 {
			row = withEmpty(row, roiAlignOp(gops.RoIAlignOpts{OutputSize: [2]int{2, 2}}))
		}
		cs = append(cs, row)
	}
	for i, c := range roiPoolOptGrid {
		row := poolRow("RoIPool", c.name, roiPoolOp(c.opts), x, testBoxes, rangeTensor(2, 8, 5, 6), 1)
		if i == 0 {
			row = withEmpty(row, roiPoolOp(gops.RoIPoolOpts{OutputSize: [2]int{2, 2}}))
		}
		cs = append(cs, row)
	}
	for _, c := range psCases {
		for _, bs := range []struct {
			name  string
			boxes *tensor.Dense
		}{{"boxes", testBoxes}, {"border", borderBoxes}} {
			row := poolRow(c.opName, c.name+"/"+bs.name, c.op, rangeTensor(2, c.c, 5, 6), bs.boxes, rangeTensor(2, 4*c.c, 5, 6), 2)
			if c.empty && bs.name == "boxes" {
				row = withEmpty(row, c.op)
			}
			cs = append(cs, row)
		}
	}
	deformRow := func(c deformCase, seed uint64) conformanceCase {
		row := conformanceCase{
			op: "DeformConv2d", name: c.name, f: c.f, in: c.inputs(),
			check: graphtest.Options{Seed: seed, Eps: 1e-6, RTol: 2e-5, ATol: 1e-6}, tol32: 1e-5,
		}
		for j := range row.in {
			row.wrt = append(row.wrt, j)
		}
		return row
	}
	for i, c := range deformCases {
		row := deformRow(c, 2)
		if i == 0 {
			e := deformCase{n: 0, cin: 2, h: 4, w: 4, cout: 3, groups: 1, kh: 2, kw: 2, og: 1, mask: true, bias: true}
			row.bare, row.empty = e.apply, e.inputs()
		}
		cs = append(cs, row)
	}
	for _, c := range oddDeformCases {
		cs = append(cs, deformRow(c, 3))
	}
	for _, c := range channelsLastDeformCases {
		// Order 3 w.r.t. the bias and 2 w.r.t. the offset: numeric checks
		// over all input pixels would be slow.
		row := deformRow(c, 5)
		row.check.Wrt = []int{3}
		more := row.check
		more.Order, more.Wrt = 2, []int{1}
		row.more = []graphtest.Options{more}
		cs = append(cs, row)
	}
	cs = append(cs, boxRows()...)
	cs = append(cs, boxGradientRows()...)
	cs = append(cs, multiScaleRows()...)
	return cs
}

// boxGradientRows are the rows of the pooling ops differentiated w.r.t.
// their boxes: cube(op(sin(x), BoxesToRoIs(b0, b1))) on the box sets of
// the box-gradient tests (smoothBoxes, psSmoothBoxes, boxPyramidInputs),
// whose sample points keep away from integers, borders and adaptive-grid
// steps, so that finite differences see no kink; the box lists go through
// BoxesToRoIs, so that finite differences never move a batch index. order3
// checks the boxes alone, the more check the input (or features) and boxes
// together (mixed terms); vms and deterministic take the gradients w.r.t.
// all inputs. The first row of each op checks K = 0 boxes (empty lists).
func boxGradientRows() []conformanceCase {
	var rows []conformanceCase
	row := func(op, name string, f graphtest.Func, in []*tensor.Dense, boxes []int, seed uint64) conformanceCase {
		all := wrtFirst(len(in))
		return conformanceCase{
			op: op, name: "boxes/" + name, f: f, in: in, wrt: all,
			check: graphtest.Options{Wrt: boxes, Seed: seed}, more: []graphtest.Options{{Wrt: all, Seed: seed + 10}},
			tol32: 1e-5,
		}
	}
	// bareOfLists is op(x, BoxesToRoIs(b0, b1)), for the empty check.
	bareOfLists := func(op poolOp) graphtest.Func {
		return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			rois, err := gops.BoxesToRoIs(in[1:])
			if err != nil {
				return nil, err
			}
			return op(in[0], rois)
		}
	}
	emptyLists := func(x *tensor.Dense) []*tensor.Dense {
		return []*tensor.Dense{x, tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 4)), tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 4))}
	}
	for i, c := range roiAlignBoxCases {
		r := row("RoIAlign", c.name, roiAlignOfLists(c.opts), append([]*tensor.Dense{rangeTensor(2, 2, 6, 7)}, boxLists(c.scale)...), []int{1, 2}, uint64(i+1))
		if i == 0 {
			r.bare, r.empty = bareOfLists(roiAlignOp(c.opts)), emptyLists(rangeTensor(2, 2, 6, 7))
		}
		rows = append(rows, r)
	}
	for i, c := range psRoIAlignBoxCases {
		r := row("PSRoIAlign", c.name, poolOfLists(psRoIAlignOp(c.opts)), append([]*tensor.Dense{rangeTensor(2, c.c, 6, 7)}, roisToLists(psSmoothBoxes, c.scale)...), []int{1, 2}, uint64(i+31))
		if i == 0 {
			r.bare, r.empty = bareOfLists(psRoIAlignOp(c.opts)), emptyLists(rangeTensor(2, c.c, 6, 7))
		}
		rows = append(rows, r)
	}
	// MultiScaleRoIAlign: two levels, boxes on both (its other rows are
	// multiScaleRows, run by TestMultiScaleRoIAlignConformance).
	r := row("MultiScaleRoIAlign", "levels=2/out=2x2/sampling=2", boxPyramid.smooth, boxPyramidInputs(2), []int{2, 3}, 21)
	r.det = boxPyramidInputs(8)
	r.bare = boxPyramid.build
	r.empty = append(mapsOf(2, 2, [2]int{12, 16}, 2, 4), tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 4)), tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 4)))
	rows = append(rows, r)
	return rows
}

func TestConformance(t *testing.T) {
	for _, c := range conformanceCases() {
		t.Run(c.op+"/"+c.name, func(t *testing.T) {
			for i, o := range append([]graphtest.Options{c.check}, c.more...) {
				if o.Order == 0 {
					o.Order = 3
				}
				if o.Wrt == nil {
					o.Wrt = c.wrt
				}
				if testing.Short() {
					o.Order = min(o.Order, 2)
				}
				name := fmt.Sprintf("order%d", o.Order)
				if i > 0 {
					name += fmt.Sprintf("/wrt%v", o.Wrt)
				}
				t.Run(name, func(t *testing.T) {
					if err := graphtest.Check(c.f, c.in, o); err != nil {
						t.Fatal(err)
					}
				})
			}
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				t.Run("vms/"+dt.String(), func(t *testing.T) {
					if c.noLisp != "" {
						t.Skip(c.noLisp)
					}
					in, o := c.in, graphtest.Options{Wrt: c.wrt, RTol: 1e-12, ATol: 1e-12}
					if dt == tensor.Float32 {
						in, o.RTol, o.ATol = allFloat32(c.in), c.tol32, c.tol32
					}
					if err := graphtest.CheckVMs(c.f, in, o); err != nil {
						t.Fatal(err)
					}
				})
			}
			t.Run("deterministic", func(t *testing.T) {
				in := c.det
				if in == nil {
					in = c.in
				}
				checkDeterministic(t, c.f, allFloat32(in), c.wrt, 1, 2, 3, 8)
			})
			if c.empty != nil {
				for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
					t.Run("empty/"+dt.String(), func(t *testing.T) {
						in := c.empty
						if dt == tensor.Float32 {
							in = allFloat32(in)
						}
						checkEmpty(t, c.bare, in, c.wrt)
					})
				}
			}
		})
	}
}

// allFloat32 converts float64 tensors (empty ones included) to float32.
func allFloat32(in []*tensor.Dense) []*tensor.Dense { return graphtest.Float32(in) }

// inputNodes puts the values in into a new graph, named in0, in1, ...
func inputNodes(in []*tensor.Dense) (*gorgonia.ExprGraph, gorgonia.Nodes) {
	return graphtest.Inputs(in)
}

// checkDeterministic requires f's value and first-order gradients on in to
// be bitwise the same under each GOMAXPROCS of procs.
func checkDeterministic(t *testing.T, f graphtest.Func, in []*tensor.Dense, wrt []int, procs ...int) {
	t.Helper()
	if err := graphtest.CheckDeterministic(f, in, wrt, procs...); err != nil {
		t.Fatal(err)
	}
}

// checkEmpty requires the op on empty inputs (no boxes, or batch 0) to give
// an empty result and zero gradients of Sum(result) w.r.t. the inputs wrt.
func checkEmpty(t *testing.T, op graphtest.Func, in []*tensor.Dense, wrt []int) {
	t.Helper()
	if err := graphtest.CheckEmpty(op, in, wrt); err != nil {
		t.Fatal(err)
	}
}

// psCase is one configuration of a position-sensitive op: the op and its
// input channels (a multiple of its output bins); empty marks the row that
// also checks K = 0 boxes (on 8 channels).
type psCase struct {
	opName, name string
	op           poolOp
	c            int
	empty        bool
}

var psCases = []psCase{
	{"PSRoIAlign", "out=2x2/adaptive", psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}}), 8, true},
	{"PSRoIAlign", "out=3x2/sampling=2/scale=0.5", psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: [2]int{3, 2}, SpatialScale: 0.5, SamplingRatio: 2}), 6, false},
	{"PSRoIAlign", "out=1x2/sampling=-1/scale=0.5", psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: [2]int{1, 2}, SpatialScale: 0.5, SamplingRatio: -1}), 4, false},
	{"PSRoIPool", "out=2x2", psRoIPoolOp(gops.PSRoIPoolOpts{OutputSize: [2]int{2, 2}}), 8, true},
	{"PSRoIPool", "out=2x3/scale=0.5", psRoIPoolOp(gops.PSRoIPoolOpts{OutputSize: [2]int{2, 3}, SpatialScale: 0.5}), 12, false},
}
