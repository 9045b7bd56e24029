package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/graphtest/conformance"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The conformance table: every op of the package, in every configuration
// listed, is a row that conformance.Run puts through the common checks
// (orders 1–3 against finite differences, TapeMachine == LispMachine,
// determinism across GOMAXPROCS, empty inputs once per op).
//
// Each op also has a fuzz target (fuzz_test.go). A new op joins by adding
// rows here and a Fuzz function there; its own semantics (golden values,
// bad input, special cases) stay in its own test file.

func TestConformance(t *testing.T) { conformance.Run(t, conformanceCases()) }

// poolRow is a row of a pooling op: cube(op(sin(x), boxes)), gradients
// w.r.t. x.
func poolRow(opName, name string, op poolOp, x, boxes, det *tensor.Dense, seed uint64) conformance.Row {
	return conformance.Row{
		Op: opName, Name: name, F: cubeOfSinPool(op), In: []*tensor.Dense{x, boxes}, Wrt: []int{0},
		Check: graphtest.Options{Seed: seed}, Tol32: 1e-6, Det: []*tensor.Dense{det, manyBoxes},
	}
}

// withEmpty adds the empty check to a pooling row: the op on K = 0 boxes.
func withEmpty(c conformance.Row, op poolOp) conformance.Row {
	c.Bare = func(in gorgonia.Nodes) (*gorgonia.Node, error) { return op(in[0], in[1]) }
	c.Empty = []*tensor.Dense{rangeTensor(2, 8, 5, 6), tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 5))}
	return c
}

func conformanceCases() []conformance.Row {
	var cs []conformance.Row
	x := rangeTensor(2, 2, 5, 6)
	for i, c := range roiAlignOptGrid {
		row := poolRow("RoIAlign", c.name, roiAlignOp(c.opts), x, testBoxes, rangeTensor(2, 8, 5, 6), 1)
		row.Det[1] = testBoxes
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
	deformRow := func(c deformCase, seed uint64) conformance.Row {
		row := conformance.Row{
			Op: "DeformConv2d", Name: c.name, F: c.f, In: c.inputs(),
			Check: graphtest.Options{Seed: seed, Eps: 1e-6, RTol: 2e-5, ATol: 1e-6}, Tol32: 1e-5,
		}
		for j := range row.In {
			row.Wrt = append(row.Wrt, j)
		}
		return row
	}
	for i, c := range deformCases {
		row := deformRow(c, 2)
		if i == 0 {
			e := deformCase{n: 0, cin: 2, h: 4, w: 4, cout: 3, groups: 1, kh: 2, kw: 2, og: 1, mask: true, bias: true}
			row.Bare, row.Empty = e.apply, e.inputs()
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
		row.Check.Wrt = []int{3}
		more := row.Check
		more.Order, more.Wrt = 2, []int{1}
		row.More = []graphtest.Options{more}
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
func boxGradientRows() []conformance.Row {
	var rows []conformance.Row
	row := func(op, name string, f graphtest.Func, in []*tensor.Dense, boxes []int, seed uint64) conformance.Row {
		all := wrtFirst(len(in))
		return conformance.Row{
			Op: op, Name: "boxes/" + name, F: f, In: in, Wrt: all,
			Check: graphtest.Options{Wrt: boxes, Seed: seed}, More: []graphtest.Options{{Wrt: all, Seed: seed + 10}},
			Tol32: 1e-5,
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
			r.Bare, r.Empty = bareOfLists(roiAlignOp(c.opts)), emptyLists(rangeTensor(2, 2, 6, 7))
		}
		rows = append(rows, r)
	}
	for i, c := range psRoIAlignBoxCases {
		r := row("PSRoIAlign", c.name, poolOfLists(psRoIAlignOp(c.opts)), append([]*tensor.Dense{rangeTensor(2, c.c, 6, 7)}, roisToLists(psSmoothBoxes, c.scale)...), []int{1, 2}, uint64(i+31))
		if i == 0 {
			r.Bare, r.Empty = bareOfLists(psRoIAlignOp(c.opts)), emptyLists(rangeTensor(2, c.c, 6, 7))
		}
		rows = append(rows, r)
	}
	// MultiScaleRoIAlign: two levels, boxes on both (its other rows are
	// multiScaleRows).
	r := row("MultiScaleRoIAlign", "levels=2/out=2x2/sampling=2", boxPyramid.smooth, boxPyramidInputs(2), []int{2, 3}, 21)
	r.Det = boxPyramidInputs(8)
	r.Bare = boxPyramid.build
	r.Empty = append(mapsOf(2, 2, [2]int{12, 16}, 2, 4), tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 4)), tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 4)))
	rows = append(rows, r)
	return rows
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
