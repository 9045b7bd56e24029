package ad_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// errNegative is the run-time error of checkedLog's forward.
var errNegative = errors.New("negative element")

// checkedLog is log(x) whose forward refuses a negative element at run
// time, naming its argument as the ops of nn and gops do.
func checkedLog(x *gorgonia.Node) (*gorgonia.Node, error) {
	return ad.Apply(ad.OpSpec{
		Name:       "CheckedLog",
		InputDims:  []int{1},
		OutputDims: 1,
		Shape:      func(s []tensor.Shape) (tensor.Shape, error) { return s[0].Clone(), nil },
		Forward: func(v []gorgonia.Value) (gorgonia.Value, error) {
			for i, e := range v[0].Data().([]float64) {
				if e < 0 {
					return nil, fmt.Errorf("ad-test: CheckedLog: input x[%d] = %v: %w", i, e, errNegative)
				}
			}
			return v[0], nil
		},
	}, x)
}

// TestRunAllUnwraps: a run-time error of an op reaches the caller as the
// op's own message after the node's name, on both machines, with
// errors.Is and errors.As working; ad.Unwrap does the same to RunAll's
// error of a machine run directly.
func TestRunAllUnwraps(t *testing.T) {
	for _, vm := range []string{"tape", "lisp"} {
		t.Run(vm, func(t *testing.T) {
			g := gorgonia.NewGraph()
			x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("pixels"),
				gorgonia.WithValue(tensor.New(tensor.WithBacking([]float64{1, -2, 3}))))
			y, err := checkedLog(x)
			if err != nil {
				t.Fatal(err)
			}
			var m gorgonia.VM = gorgonia.NewTapeMachine(g)
			if vm == "lisp" {
				m = gorgonia.NewLispMachine(g, gorgonia.ExecuteFwdOnly())
			}
			defer m.Close()
			raw := m.RunAll()
			if raw == nil || strings.HasPrefix(raw.Error(), "ad-test") {
				t.Fatalf("Gorgonia's own error %v: the test no longer shows its wrapping", raw)
			}
			m.Reset()
			err = ad.RunAll(m)
			t.Logf("Gorgonia: %v\nad.RunAll: %v", raw, err)
			// The TapeMachine names the node, the LispMachine does not.
			want, node := "ad: ad-test: CheckedLog: input x[1] = -2: negative element", (*gorgonia.Node)(nil)
			if vm == "tape" {
				want, node = fmt.Sprintf("ad: node %s (inputs pixels): ad-test: CheckedLog: input x[1] = -2: negative element", y.Name()), y
			}
			if err == nil || err.Error() != want {
				t.Fatalf("ad.RunAll = %v, want %q", err, want)
			}
			var re *ad.RunError
			if !errors.As(err, &re) || re.Node != node || !errors.Is(err, errNegative) {
				t.Fatalf("errors.As/Is on %v: %+v", err, re)
			}
			if u := ad.Unwrap(raw); u == nil || u.Error() != want {
				t.Fatalf("ad.Unwrap(%v) = %v", raw, u)
			}
			if !strings.Contains(raw.Error(), "CheckedLog: input x[1]") {
				t.Fatalf("Gorgonia's error %v lost the op's", raw)
			}
		})
	}
}

// TestUnwrapOthers: nil stays nil, an error without a machine's node is
// returned as it is, and a nil machine is an error.
func TestUnwrapOthers(t *testing.T) {
	if ad.Unwrap(nil) != nil {
		t.Error("Unwrap(nil) is not nil")
	}
	plain := errors.New("plain")
	if ad.Unwrap(plain) != plain {
		t.Error("Unwrap changed an error without a node")
	}
	if err := ad.RunAll(nil); err == nil || !strings.Contains(err.Error(), "nil machine") {
		t.Errorf("RunAll(nil) = %v", err)
	}
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking([]float64{1, 2}))))
	if _, err := checkedLog(x); err != nil {
		t.Fatal(err)
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := ad.RunAll(m); err != nil {
		t.Errorf("RunAll of a good graph: %v", err)
	}
}

// TestScalar: float32 and float64 constants of one value in one graph stay
// two nodes of their dtypes and the graph runs; bad arguments are errors.
func TestScalar(t *testing.T) {
	g := gorgonia.NewGraph()
	x32 := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(2), gorgonia.WithName("x32"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking([]float32{1, 2}))))
	x64 := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("x64"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking([]float64{3, 4}))))
	var ys []*gorgonia.Node
	for _, x := range []*gorgonia.Node{x32, x64} {
		c, err := ad.Scalar(g, x.Dtype(), 0.5)
		if err != nil {
			t.Fatal(err)
		}
		if c.Dtype() != x.Dtype() || !c.IsScalar() {
			t.Fatalf("Scalar(%v) is %v %v", x.Dtype(), c.Dtype(), c.Shape())
		}
		y, err := gorgonia.Mul(x, c)
		if err != nil {
			t.Fatal(err)
		}
		ys = append(ys, y)
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := ad.RunAll(m); err != nil {
		t.Fatal(err)
	}
	if got := ys[0].Value().Data().([]float32); got[0] != 0.5 || got[1] != 1 {
		t.Errorf("x32 * 0.5 = %v", got)
	}
	if got := ys[1].Value().Data().([]float64); got[0] != 1.5 || got[1] != 2 {
		t.Errorf("x64 * 0.5 = %v", got)
	}
	for _, tc := range []struct {
		g    *gorgonia.ExprGraph
		dt   tensor.Dtype
		want string
	}{{nil, tensor.Float64, "nil graph"}, {g, tensor.Int, "dtype int"}, {g, tensor.Dtype{}, "want float32 or float64"}} {
		if n, err := ad.Scalar(tc.g, tc.dt, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Scalar(%v, %v) = %v, %v; want an error with %q", tc.g, tc.dt, n, err, tc.want)
		}
	}
}

// TestConv2dRefusalPointsToNN: ad.Grad's refusal of Gorgonia's Conv2d at
// order 2 names the node and points to nn.Conv2d.
func TestConv2dRefusalPointsToNN(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 4, 4), gorgonia.WithName("image"), gorgonia.WithInit(gorgonia.Ones()))
	w := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 2, 2), gorgonia.WithName("w"), gorgonia.WithInit(gorgonia.Ones()))
	y, err := gorgonia.Conv2d(x, w, tensor.Shape{2, 2}, []int{0, 0}, []int{1, 1}, []int{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	b := ad.NewBuilder(y)
	s := b.Sum(b.Cube(y))
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	g1, err := ad.Grad(s, x)
	if err != nil {
		t.Fatal(err)
	}
	s2 := b.Sum(b.Square(g1[0]))
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	_, err = ad.Grad(s2, x)
	if err == nil {
		t.Fatal("ad.Grad built Conv2d's order-2 gradient")
	}
	msg := err.Error()
	for _, want := range []string{"Conv2d", "first-order only", "use nn.Conv2d", "col2im"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal lacks %q: %v", want, msg)
		}
	}
	if strings.Contains(msg, "DeformConv2d") {
		t.Errorf("the refusal still suggests DeformConv2d: %v", msg)
	}
	t.Log(msg)
}
