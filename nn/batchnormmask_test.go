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

// maskedBN is BatchNorm in training of in[0] with weight in[1], bias
// in[2] and Mask in[3].
func maskedBN(in gorgonia.Nodes) (*gorgonia.Node, error) {
	return nn.BatchNorm(in[0], in[1], in[2], nil, nil, nn.BatchNormOpts{Training: true, Mask: in[3], Eps: 0.01})
}

// TestBatchNormMaskOrders: BatchNorm with a Mask, derivatives of orders
// 1–3 w.r.t. input, weight and bias against finite differences (float64),
// TapeMachine == LispMachine, bitwise the same across GOMAXPROCS.
func TestBatchNormMaskOrders(t *testing.T) {
	mask := tensor.New(tensor.WithShape(4), tensor.WithBacking([]float64{1, 0, 1, 1}))
	in := []*tensor.Dense{smoothTensor(1.5, 4, 2, 3), smoothTensor(0.5, 2), smoothTensor(0.3, 2), mask}
	wrt := []int{0, 1, 2}
	f := cubeOf(maskedBN)
	o := graphtest.Options{Seed: 4, Order: 3, Wrt: wrt}
	if testing.Short() {
		o.Order = 2
	}
	if err := graphtest.Check(f, in, o); err != nil {
		t.Fatal(err)
	}
	if err := graphtest.CheckVMs(f, in, graphtest.Options{Wrt: wrt, RTol: 1e-12, ATol: 1e-12}); err != nil {
		t.Fatal(err)
	}
	if err := graphtest.CheckVMs(f, graphtest.Float32(in), graphtest.Options{Wrt: wrt, RTol: 2e-5, ATol: 2e-5}); err != nil {
		t.Fatal(err)
	}
	if err := graphtest.CheckDeterministic(f, graphtest.Float32(in), wrt, 1, 2, 3); err != nil {
		t.Fatal(err)
	}
}

// bnRun is one run of BatchNorm in training on x [N, 2, 3] with running
// statistics (1, 2) and (3, 4), weight and bias, and mask (nil: none):
// the output, the gradients of Σ y⊙r w.r.t. x, weight and bias, and the
// running statistics after the run.
type bnRun struct {
	y, gx, gw, gb, rm, rv []float64
}

func runMaskedBN(t *testing.T, dt tensor.Dtype, x, r *tensor.Dense, mask []float64) (bnRun, error) {
	t.Helper()
	g := gorgonia.NewGraph()
	node := func(name string, v *tensor.Dense) *gorgonia.Node {
		if dt == tensor.Float32 {
			v = graphtest.Float32([]*tensor.Dense{v})[0]
		}
		return gorgonia.NodeFromAny(g, v, gorgonia.WithName(name))
	}
	xn := node("x", x)
	w := node("w", tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{0.7, 1.3})))
	b := node("b", tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{0.2, -0.1})))
	stat := func(a, b float64) *tensor.Dense {
		v := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{a, b}))
		if dt == tensor.Float32 {
			v = graphtest.Float32([]*tensor.Dense{v})[0]
		}
		return v
	}
	rm, rv := stat(1, 2), stat(3, 4)
	opts := nn.BatchNormOpts{Training: true}
	if mask != nil {
		opts.Mask = node("mask", tensor.New(tensor.WithShape(len(mask)), tensor.WithBacking(mask)))
	}
	y, err := nn.BatchNorm(xn, w, b, rm, rv, opts)
	if err != nil {
		return bnRun{}, err
	}
	var yv gorgonia.Value // (the product below may overwrite y's value)
	gorgonia.Read(y, &yv)
	cost := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, node("r", r)))))
	gs, err := ad.Grad(cost, xn, w, b)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := ad.RunAll(m); err != nil {
		return bnRun{}, err
	}
	return bnRun{graphtest.Floats(yv), graphtest.Floats(gs[0].Value()), graphtest.Floats(gs[1].Value()),
		graphtest.Floats(gs[2].Value()), graphtest.Floats(rm), graphtest.Floats(rv)}, nil
}

// rowsOf is x's [N, 6] rows at keep.
func rowsOf(x []float64, keep []int) []float64 {
	var out []float64
	for _, i := range keep {
		out = append(out, x[6*i:6*i+6]...)
	}
	return out
}

func closeTo(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !(math.Abs(got[i]-want[i]) <= tol*(1+math.Abs(want[i]))) {
			t.Fatalf("%s[%d] = %.17g, want %.17g", what, i, got[i], want[i])
		}
	}
}

// TestBatchNormMaskIsSubset: with a Mask, BatchNorm's output, gradients
// and running update on the kept samples are BatchNorm's of those samples
// alone (the masked samples' outputs ignored by the loss get no gradient);
// a mask of all 1s is BatchNorm without one.
func TestBatchNormMaskIsSubset(t *testing.T) {
	x := smoothTensor(1.7, 5, 2, 3)
	r := smoothTensor(0.9, 5, 2, 3)
	keep := []int{0, 2, 3}
	mask := []float64{1, 0, 1, 1, 0}
	// r is zero on the masked samples: the loss ignores them.
	rd := r.Data().([]float64)
	for i, m := range mask {
		if m == 0 {
			clear(rd[6*i : 6*i+6])
		}
	}
	sub := func(v *tensor.Dense) *tensor.Dense {
		return tensor.New(tensor.WithShape(len(keep), 2, 3), tensor.WithBacking(rowsOf(v.Data().([]float64), keep)))
	}
	for _, c := range []struct {
		dt  tensor.Dtype
		tol float64
	}{{tensor.Float64, 1e-12}, {tensor.Float32, 2e-6}} {
		got, err := runMaskedBN(t, c.dt, x, r, mask)
		if err != nil {
			t.Fatal(err)
		}
		want, err := runMaskedBN(t, c.dt, sub(x), sub(r), nil)
		if err != nil {
			t.Fatal(err)
		}
		closeTo(t, c.dt.String()+" y", rowsOf(got.y, keep), want.y, c.tol)
		closeTo(t, c.dt.String()+" grad x", rowsOf(got.gx, keep), want.gx, c.tol)
		closeTo(t, c.dt.String()+" grad x (masked)", rowsOf(got.gx, []int{1, 4}), make([]float64, 12), c.tol)
		closeTo(t, c.dt.String()+" grad weight", got.gw, want.gw, c.tol)
		closeTo(t, c.dt.String()+" grad bias", got.gb, want.gb, c.tol)
		closeTo(t, c.dt.String()+" running mean", got.rm, want.rm, c.tol)
		closeTo(t, c.dt.String()+" running var", got.rv, want.rv, c.tol)

		ones, err := runMaskedBN(t, c.dt, x, r, []float64{1, 1, 1, 1, 1})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := runMaskedBN(t, c.dt, x, r, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range [][3]any{{"y", ones.y, plain.y}, {"grad x", ones.gx, plain.gx}, {"grad weight", ones.gw, plain.gw},
			{"running var", ones.rv, plain.rv}} {
			closeTo(t, c.dt.String()+" all-1 mask "+p[0].(string), p[1].([]float64), p[2].([]float64), c.tol)
		}
	}
}

// TestBatchNormMaskEdges: a mask of all 0s gives statistics 0 (y =
// x/√eps·weight + bias) and leaves the running statistics; one kept
// sample of one value per channel normalises to the bias and leaves
// them too; an entry other than 0 or 1 fails the run; a mask of another
// shape or dtype is an error when the node is built.
func TestBatchNormMaskEdges(t *testing.T) {
	x := smoothTensor(1.2, 3, 2, 3)
	r := smoothTensor(0.4, 3, 2, 3)
	zero, err := runMaskedBN(t, tensor.Float64, x, r, []float64{0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	xd := x.Data().([]float64)
	want := make([]float64, len(xd))
	for i, v := range xd {
		ch := i / 3 % 2
		want[i] = v/math.Sqrt(1e-5)*[]float64{0.7, 1.3}[ch] + []float64{0.2, -0.1}[ch]
	}
	closeTo(t, "all-0 mask y", zero.y, want, 1e-12)
	closeTo(t, "all-0 mask running mean", zero.rm, []float64{1, 2}, 0)
	closeTo(t, "all-0 mask running var", zero.rv, []float64{3, 4}, 0)

	one := tensor.New(tensor.WithShape(3, 2, 1), tensor.WithBacking([]float64{5, 6, 7, 8, 9, 10}))
	got, err := runMaskedBN(t, tensor.Float64, one, tensor.New(tensor.WithShape(3, 2, 1), tensor.WithBacking([]float64{1, 1, 1, 1, 1, 1})), []float64{0, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "one value: y of the kept sample", got.y[2:4], []float64{0.2, -0.1}, 1e-12)
	closeTo(t, "one value: running var", got.rv, []float64{3, 4}, 0)

	if _, err := runMaskedBN(t, tensor.Float64, x, r, []float64{1, 0.5, 1}); err == nil || !strings.Contains(err.Error(), "Mask[1] = 0.5, want 0 or 1") {
		t.Errorf("mask entry 0.5: %v", err)
	}
	g := gorgonia.NewGraph()
	xn := gorgonia.NodeFromAny(g, x, gorgonia.WithName("x"))
	for _, c := range []struct {
		mask *gorgonia.Node
		want string
	}{
		{gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("m2")), "Mask (2), want (3)"},
		{gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(3), gorgonia.WithName("m32")), "Mask is float32"},
		{gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 1), gorgonia.WithName("m31")), "Mask (3, 1), want (3)"},
		{gorgonia.NewVector(gorgonia.NewGraph(), tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("other")), "not in the input's graph"},
	} {
		if _, err := nn.BatchNorm(xn, nil, nil, nil, nil, nn.BatchNormOpts{Training: true, Mask: c.mask}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("mask %v: %v, want %q", c.mask.Shape(), err, c.want)
		}
	}
}

// maskOf is a mask tensor [len(v)] of dtype dt.
func maskOf(dt tensor.Dtype, v ...float64) *tensor.Dense {
	m := tensor.New(tensor.WithShape(len(v)), tensor.WithBacking(append([]float64(nil), v...)))
	if dt == tensor.Float32 {
		return graphtest.Float32([]*tensor.Dense{m})[0]
	}
	return m
}

// TestBatchNormMaskConstant: the Mask is a constant of the derivative, as
// its doc says: the gradient w.r.t. a mask node is zero (no path through
// its broadcast either), float64 and float32.
func TestBatchNormMaskConstant(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		g := gorgonia.NewGraph()
		in := []*tensor.Dense{smoothTensor(1.3, 4, 2, 3), smoothTensor(0.7, 4, 2, 3)}
		if dt == tensor.Float32 {
			in = graphtest.Float32(in)
		}
		x := gorgonia.NodeFromAny(g, in[0], gorgonia.WithName("x"))
		r := gorgonia.NodeFromAny(g, in[1], gorgonia.WithName("r"))
		m := gorgonia.NodeFromAny(g, maskOf(dt, 1, 0, 1, 1), gorgonia.WithName("mask"))
		y, err := nn.BatchNorm(x, nil, nil, nil, nil, nn.BatchNormOpts{Training: true, Mask: m})
		if err != nil {
			t.Fatal(err)
		}
		cost := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, r))))
		gs, err := ad.Grad(cost, x, m)
		if err != nil {
			t.Fatal(err)
		}
		out, err := graphtest.Eval(g, gs[1])
		if err != nil {
			t.Fatal(err)
		}
		closeTo(t, dt.String()+" grad mask", out[0], make([]float64, 4), 0)
	}
}
