// Package conformance runs the common checks of an op table, as
// torchvision's RoIOpTester does: each op, in each configuration, is a Row,
// and Run puts every row through the same checks, so that a new op joins
// them by adding rows and keeps only its own semantics tests.
//
// The checks of a row (each a subtest of Op/Name, in this order):
//
//   - orderK (K = 3, or 2 with -short): derivatives of orders 1..K w.r.t.
//     the differentiable inputs agree with finite differences
//     (graphtest.Check, float64); further numeric checks follow as
//     orderK/wrt[...];
//   - vms/float64, vms/float32: the TapeMachine (with ad.Grad) and the
//     LispMachine (with the ops' DoDiff) agree on the value and the
//     first-order gradients (graphtest.CheckVMs);
//   - deterministic: the value and first-order gradients are bitwise the
//     same for GOMAXPROCS 1, 2, 3 and 8 (float32; graphtest.CheckDeterministic);
//   - empty/float64, empty/float32 (rows with Empty): the op on inputs with
//     no boxes or batch 0 gives an empty result and zero gradients
//     (graphtest.CheckEmpty).
package conformance

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/tensor"
)

// Row is one row of a conformance table: one op in one configuration.
type Row struct {
	// Op and Name name the row's subtest, Op/Name.
	Op, Name string
	// F is the op inside a smooth composite (cube(op(sin x)), say), so that
	// every derivative order is non-zero and passes through every kernel
	// of the op's family.
	F graphtest.Func
	// In are F's inputs, float64 (float32 copies are made for the float32
	// checks).
	In []*tensor.Dense
	// Wrt are the indices in In of the differentiable inputs.
	Wrt []int
	// Check holds the tolerances, step and seed of the orderK check: its
	// Order 0 means 3, its nil Wrt means Wrt.
	Check graphtest.Options
	// More are further numeric checks (other orders or inputs), each
	// completed as Check is.
	More []graphtest.Options
	// Tol32 is vms/float32's relative and absolute tolerance (vms/float64
	// uses 1e-12); 0 means graphtest.Options' defaults (RTol 1e-5, ATol
	// 1e-7).
	Tol32 float64
	// Det are the inputs of the determinism check, float64; nil means In.
	// Larger inputs go through more than one worker's share.
	Det []*tensor.Dense
	// Bare is the op alone, for the empty check (set it and Empty on one
	// row per op; both nil skips the check). Gorgonia's own elementwise
	// ops panic on empty tensors, so the empty check sums Bare's result
	// directly.
	Bare graphtest.Func
	// Empty are Bare's inputs with no boxes or batch 0.
	Empty []*tensor.Dense
}

// Check is one named check of a row; Run returns nil when it passes.
type Check struct {
	// Name is the check's subtest name ("row", "order3", "vms/float64",
	// "vms/float32", "deterministic", ...).
	Name string
	// Run performs the check; nil when it passes.
	Run func() error
}

// procs are the GOMAXPROCS values of the determinism check.
var procs = []int{1, 2, 3, 8}

// Checks lists r's checks in the order Run runs them. short (go test
// -short) lowers the order of the numeric checks to at most 2. A row with
// Bare but no Empty, or Empty but no Bare, gets a check "row" that fails.
func (r Row) Checks(short bool) []Check {
	var cs []Check
	if (r.Bare == nil) != (r.Empty == nil) {
		cs = append(cs, Check{"row", func() error {
			return errors.New("conformance: a row sets both Bare and Empty or neither")
		}})
	}
	for i, o := range append([]graphtest.Options{r.Check}, r.More...) {
		if o.Order == 0 {
			o.Order = 3
		}
		if o.Wrt == nil {
			o.Wrt = r.Wrt
		}
		if short {
			o.Order = min(o.Order, 2)
		}
		name := fmt.Sprintf("order%d", o.Order)
		if i > 0 {
			name += fmt.Sprintf("/wrt%v", o.Wrt)
		}
		cs = append(cs, Check{name, func() error { return graphtest.Check(r.F, r.In, o) }})
	}
	cs = append(cs,
		Check{"vms/float64", func() error {
			return graphtest.CheckVMs(r.F, r.In, graphtest.Options{Wrt: r.Wrt, RTol: 1e-12, ATol: 1e-12})
		}},
		Check{"vms/float32", func() error {
			return graphtest.CheckVMs(r.F, graphtest.Float32(r.In), graphtest.Options{Wrt: r.Wrt, RTol: r.Tol32, ATol: r.Tol32})
		}},
		Check{"deterministic", func() error {
			in := r.Det
			if in == nil {
				in = r.In
			}
			return graphtest.CheckDeterministic(r.F, graphtest.Float32(in), r.Wrt, procs...)
		}})
	if r.Bare != nil && r.Empty != nil {
		cs = append(cs,
			Check{"empty/float64", func() error { return graphtest.CheckEmpty(r.Bare, r.Empty, r.Wrt) }},
			Check{"empty/float32", func() error { return graphtest.CheckEmpty(r.Bare, graphtest.Float32(r.Empty), r.Wrt) }})
	}
	return cs
}

// Run runs every row as a subtest Op/Name of t, each of its checks (see
// Row.Checks) a subtest of that, which fails with the check's error.
func Run(t *testing.T, rows []Row) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.Op+"/"+r.Name, func(t *testing.T) {
			for _, c := range r.Checks(testing.Short()) {
				t.Run(c.Name, func(t *testing.T) {
					if err := c.Run(); err != nil {
						t.Fatal(err)
					}
				})
			}
		})
	}
}
