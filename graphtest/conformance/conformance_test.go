package conformance_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/graphtest/conformance"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// square is x²·k() with a backward of factor·x·G: right for factor 2 and
// k() = 1.
func square(factor int, k func() float64) graphtest.Func {
	sq := func(out ad.Tensor[float64], in []ad.Tensor[float64]) error {
		for i, x := range in[0].Data {
			out.Data[i] = x * x * k()
		}
		return nil
	}
	sq32 := func(out ad.Tensor[float32], in []ad.Tensor[float32]) error {
		for i, x := range in[0].Data {
			out.Data[i] = x * x * float32(k())
		}
		return nil
	}
	return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		spec := ad.OpSpec{
			Name:       "Square",
			Params:     fmt.Sprint(factor),
			InputDims:  []int{1},
			OutputDims: 1,
			Shape:      func(s []tensor.Shape) (tensor.Shape, error) { return s[0].Clone(), nil },
			Kernel:     ad.Floats(sq32, sq),
			Backward: func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
				xg, err := gorgonia.HadamardProd(in[0], g)
				if err != nil {
					return nil, err
				}
				d := xg
				for range factor - 1 {
					if d, err = gorgonia.Add(d, xg); err != nil {
						return nil, err
					}
				}
				return gorgonia.Nodes{d}, nil
			},
		}
		return ad.Apply(spec, in[0])
	}
}

func one() float64 { return 1 }

// cubeOfSin is op(sin x)³.
func cubeOfSin(op graphtest.Func) graphtest.Func {
	return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		s, err := gorgonia.Sin(in[0])
		if err != nil {
			return nil, err
		}
		y, err := op(gorgonia.Nodes{s})
		if err != nil {
			return nil, err
		}
		return gorgonia.Cube(y)
	}
}

// row is a row of f on a vector.
func row(name string, f graphtest.Func) conformance.Row {
	x := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{0.3, -0.7, 1.1}))
	return conformance.Row{Op: "Square", Name: name, F: f, In: []*tensor.Dense{x}, Wrt: []int{0}, Tol32: 1e-6}
}

// TestRunPassesRightOp: the right square passes every check, the numeric
// ones at orders 1–3 and again, under More, at order 2.
func TestRunPassesRightOp(t *testing.T) {
	r := row("right", cubeOfSin(square(2, one)))
	r.More = []graphtest.Options{{Order: 2, Seed: 3}}
	conformance.Run(t, []conformance.Row{r})
}

// TestChecksReportWrongOps: each check fails on an op wrong in what it
// checks, and the other checks of a row pass where the op is right.
func TestChecksReportWrongOps(t *testing.T) {
	nondeterministic := row("GOMAXPROCS", cubeOfSin(square(2, func() float64 { return float64(runtime.GOMAXPROCS(0)) })))
	emptyNotEmpty := row("empty", cubeOfSin(square(2, one)))
	emptyNotEmpty.Bare = func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		return ad.Constant(in[0].Graph(), tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2})))
	}
	emptyNotEmpty.Empty = []*tensor.Dense{tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0))}
	noEmpty := row("bare only", cubeOfSin(square(2, one)))
	noEmpty.Bare = emptyNotEmpty.Bare
	for _, c := range []struct {
		row conformance.Row
		// fail matches the names of the checks that must fail; pass, if
		// set, those that must pass (the others may do either).
		fail, pass string
	}{
		{row("wrong derivative", cubeOfSin(square(3, one))), `^order`, `^(vms|deterministic)`},
		// Gorgonia's Max: the LispMachine's gradient is zero.
		{row("Max", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return gorgonia.Max(in[0], 0) }), `^vms/`, ``},
		{nondeterministic, `^deterministic$`, ``},
		{emptyNotEmpty, `^empty/`, `^(order|vms|deterministic)`},
		{noEmpty, `^row$`, `^(order|vms|deterministic)`},
	} {
		t.Run(c.row.Name, func(t *testing.T) {
			fail, pass := regexp.MustCompile(c.fail), regexp.MustCompile(c.pass)
			failed := 0
			for _, ch := range c.row.Checks(true) {
				err := ch.Run()
				switch {
				case fail.MatchString(ch.Name):
					if err == nil {
						t.Errorf("%s passed, want an error", ch.Name)
					}
					failed++
				case c.pass != "" && pass.MatchString(ch.Name) && err != nil:
					t.Errorf("%s: %v", ch.Name, err)
				}
			}
			if failed == 0 {
				t.Errorf("no check matches %s", c.fail)
			}
		})
	}
}

// TestRunFailsOnWrongDerivative runs Run on a row with a wrong derivative
// in a child test binary and requires the child to fail in order3 alone.
func TestRunFailsOnWrongDerivative(t *testing.T) {
	if os.Getenv("CONFORMANCE_WRONG_ROW") == "1" {
		conformance.Run(t, []conformance.Row{row("wrong", cubeOfSin(square(3, one)))})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunFailsOnWrongDerivative$", "-test.v")
	cmd.Env = append(os.Environ(), "CONFORMANCE_WRONG_ROW=1")
	out, err := cmd.CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) {
		t.Fatalf("the child test did not fail: %v\n%s", err, out)
	}
	const sub = "TestRunFailsOnWrongDerivative/Square/wrong/"
	for _, want := range []string{"--- FAIL: " + sub + "order3", "--- PASS: " + sub + "vms/float64",
		"--- PASS: " + sub + "vms/float32", "--- PASS: " + sub + "deterministic"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the child's output lacks %q:\n%s", want, out)
		}
	}
}
