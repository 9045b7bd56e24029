package ad_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/par"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// runOnce applies spec to a vector holding data on a TapeMachine and
// returns the error of the run.
func runOnce(t *testing.T, spec ad.OpSpec, data []float64) error {
	t.Helper()
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(len(data)), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking(data))))
	if _, err := ad.Apply(spec, x); err != nil {
		t.Fatal(err)
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	return m.RunAll()
}

// A panic in an op's forward (a kernel's index out of range, say) reaches
// the caller as an error naming the op as the one that failed.
func TestOpForwardPanicIsError(t *testing.T) {
	spec := ad.OpSpec{
		Name:       "Broken",
		InputDims:  []int{1},
		OutputDims: 1,
		Shape:      func(s []tensor.Shape) (tensor.Shape, error) { return s[0], nil },
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) {
			var s []int
			_ = s[in[0].Shape()[0]] // index out of range
			return nil, nil
		},
	}
	err := runOnce(t, spec, []float64{1, 2})
	if err == nil || !strings.Contains(err.Error(), "op Broken failed: its forward panicked") || !strings.Contains(err.Error(), "index out of range") {
		t.Fatalf("error %v", err)
	}
}

// A panic in one chunk of a parallel kernel, whichever goroutine of
// par.For's worker team ran it, is an error naming the op too, and
// the next run of a sound op is not disturbed.
func TestOpParallelChunkPanicIsError(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	spec := ad.OpSpec{
		Name:       "ChunkPanic",
		InputDims:  []int{1},
		OutputDims: 1,
		Shape:      func(s []tensor.Shape) (tensor.Shape, error) { return s[0], nil },
	}
	for i := range 20 {
		spec.Forward = func(in []gorgonia.Value) (gorgonia.Value, error) {
			par.For(8, func(lo, hi int) {
				if lo <= i%8 && i%8 < hi {
					panic(fmt.Sprint("chunk with ", i%8))
				}
			})
			return in[0], nil
		}
		err := runOnce(t, spec, []float64{1, 2})
		if want := fmt.Sprint("op ChunkPanic failed: its forward panicked: chunk with ", i%8); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("run %d: error %v, want %q", i, err, want)
		}
	}
	spec.Forward = func(in []gorgonia.Value) (gorgonia.Value, error) {
		par.For(8, func(lo, hi int) {})
		return in[0], nil
	}
	if err := runOnce(t, spec, []float64{1, 2}); err != nil {
		t.Fatal(err)
	}
}

// A Forward whose result has another shape or dtype than the spec says is
// an error, not a silently misshapen node.
func TestOpForwardWrongResultIsError(t *testing.T) {
	for _, c := range []struct {
		name   string
		result gorgonia.Value
		want   string
	}{
		{"Short", tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{1})), "Short: Forward returned shape (1), Shape says (2)"},
		{"Scalar", gorgonia.NewF64(3), "Scalar: Forward returned shape (), Shape says (2)"},
		{"Float32", tensor.New(tensor.WithShape(2), tensor.WithBacking([]float32{1, 2})), "Float32: Forward returned dtype float32, want float64"},
	} {
		spec := ad.OpSpec{
			Name: c.name, InputDims: []int{1}, OutputDims: 1,
			Shape:   func(s []tensor.Shape) (tensor.Shape, error) { return s[0], nil },
			Forward: func([]gorgonia.Value) (gorgonia.Value, error) { return c.result, nil },
		}
		if err := runOnce(t, spec, []float64{1, 2}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// An op without Backward is not differentiable: Grad says so when a
// gradient must pass through it (it does not return zeros), unless DiffWRT
// declares the op piecewise constant. A Backward or Shape that panics is an
// error naming the op.
func TestOpWithoutOrBrokenBackward(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking([]float64{1, 2, 3}))))
	base := ad.OpSpec{
		Name: "NoBackward", InputDims: []int{1}, OutputDims: 1,
		Shape:  func(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil },
		Kernel: ad.Floats(square[float32], square[float64]),
	}
	y, err := ad.Apply(base, x)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ad.Grad(gorgonia.Must(gorgonia.Sum(y)), x); err == nil || !strings.Contains(err.Error(), "NoBackward is not differentiable") {
		t.Errorf("Grad through an op without Backward: %v", err)
	}
	constant := base
	constant.Name, constant.DiffWRT = "PiecewiseConstant", []bool{false}
	gs, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(ad.Apply(constant, x)))), x)
	if err != nil {
		t.Fatal(err)
	}
	panicky := base
	panicky.Name = "PanickyBackward"
	panicky.Backward = func(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) { panic("oops") }
	if _, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(ad.Apply(panicky, x)))), x); err == nil || !strings.Contains(err.Error(), "op PanickyBackward failed: its Backward panicked: oops") {
		t.Errorf("Grad through a panicking Backward: %v", err)
	}
	badShape := base
	badShape.Name = "PanickyShape"
	badShape.Shape = func([]tensor.Shape) (tensor.Shape, error) { panic("no shape") }
	if _, err := ad.Apply(badShape, x); err == nil || !strings.Contains(err.Error(), "op PanickyShape failed: its Shape panicked: no shape") {
		t.Errorf("Apply with a panicking Shape: %v", err)
	}
	got, err := graphtest.Eval(g, gs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(got[0]) != 3 || got[0][0] != 0 || got[0][1] != 0 || got[0][2] != 0 {
		t.Errorf("gradient through a piecewise-constant op: %v, want zeros", got[0])
	}
}

// gather and scatterAdd are a linear pair in their first input with an
// Int index input: y[i] = x[idx[i]] and its transpose.
func gather[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	for i, j := range in[1].Ints {
		out.Data[i] = in[0].Data[j]
	}
	return nil
}

func scatterAdd[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	for i, j := range in[1].Ints {
		out.Data[j] += in[0].Data[i]
	}
	return nil
}

func gatherPair(n, k int) (ad.OpSpec, ad.OpSpec) {
	dtypes := []tensor.Dtype{{}, tensor.Int}
	return ad.LinearPair(ad.OpSpec{
		Name: "Gather", Params: fmt.Sprint(n, k), InputDims: []int{1, 1}, OutputDims: 1,
		InputDtypes: dtypes, DiffWRT: []bool{true, false},
		Shape:  func([]tensor.Shape) (tensor.Shape, error) { return tensor.Shape{k}, nil },
		Kernel: ad.Floats(gather[float32], gather[float64]),
	}, ad.OpSpec{
		Name: "ScatterAdd", Params: fmt.Sprint(n, k), InputDims: []int{1, 1}, OutputDims: 1,
		InputDtypes: dtypes, DiffWRT: []bool{true, false},
		Shape:  func([]tensor.Shape) (tensor.Shape, error) { return tensor.Shape{n}, nil },
		Kernel: ad.Floats(scatterAdd[float32], scatterAdd[float64]),
	})
}

// LinearPair closes a gather and its scatter-add under differentiation:
// orders 1 to 3 through both (sin(gather(x))³ summed, and the scatter of
// that), against finite differences, and TapeMachine == LispMachine in
// float32 and float64 (Floats picks the kernel of the inputs' dtype).
func TestLinearPair(t *testing.T) {
	const n, k = 4, 6
	gatherSpec, scatterSpec := gatherPair(n, k)
	idx := []int{3, 0, 0, 2, 3, 3}
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		g := in[0].Graph()
		ix := gorgonia.Must(ad.Constant(g, tensor.New(tensor.WithShape(k), tensor.WithBacking(idx))))
		y, err := ad.Apply(gatherSpec, in[0], ix)
		if err != nil {
			return nil, err
		}
		s, err := gorgonia.Sin(y)
		if err != nil {
			return nil, err
		}
		back, err := ad.Apply(scatterSpec, s, ix)
		if err != nil {
			return nil, err
		}
		return gorgonia.Cube(back)
	}
	x := tensor.New(tensor.WithShape(n), tensor.WithBacking([]float64{0.3, -0.7, 1.1, 0.5}))
	if err := graphtest.Check(f, []*tensor.Dense{x}, graphtest.Options{Order: 3, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	x32 := tensor.New(tensor.WithShape(n), tensor.WithBacking([]float32{0.3, -0.7, 1.1, 0.5}))
	for _, in := range []*tensor.Dense{x, x32} {
		if err := graphtest.CheckVMs(f, []*tensor.Dense{in}, graphtest.Options{RTol: 1e-5}); err != nil {
			t.Errorf("%v: %v", in.Dtype(), err)
		}
	}
}

// Specs that cannot be each other's transpose make LinearPair's Backwards
// say so.
func TestLinearPairMismatch(t *testing.T) {
	f, _ := gatherPair(4, 6)
	other := f
	other.Name, other.InputDims = "Other", []int{1}
	pf, _ := ad.LinearPair(f, other)
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(4), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	ix := gorgonia.Must(ad.Constant(g, tensor.New(tensor.WithShape(6), tensor.WithBacking([]int{0, 1, 2, 3, 0, 1}))))
	y := gorgonia.Must(ad.Apply(pf, x, ix))
	_, err := ad.Grad(gorgonia.Must(gorgonia.Sum(y)), x)
	if err == nil || !strings.Contains(err.Error(), "LinearPair(Gather, Other): 2 and 1 inputs") {
		t.Fatalf("error %v", err)
	}
}

// An op's type is whole after Gorgonia's ApplyOp, however many other nodes
// are built after it: ApplyOp hands the function type Type returned back
// to hm's pool, so an op that kept one had it cleared there and taken by
// the next inference (a large third-order graph then got a wrong node type
// now and then, and a wrong gradient).
func TestOpTypeSurvivesApply(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"))
	m := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 3), gorgonia.WithName("m"))
	spec := ad.OpSpec{
		Name:       "Pair",
		InputDims:  []int{1, 2},
		OutputDims: 1,
		Shape:      func(s []tensor.Shape) (tensor.Shape, error) { return s[0], nil },
		Forward:    func(in []gorgonia.Value) (gorgonia.Value, error) { return in[0], nil },
	}
	y, err := ad.Apply(spec, x, m)
	if err != nil {
		t.Fatal(err)
	}
	const want = "Vector a → Matrix a → Vector a"
	for i := range 20 {
		if got := fmt.Sprint(y.Op().Type()); got != want {
			t.Fatalf("after %d more nodes, the op's type is %q, want %q", i, got, want)
		}
		// More inferences, which borrow function types from hm's pool.
		if _, err := gorgonia.Mul(m, m); err != nil {
			t.Fatal(err)
		}
		if _, err := gorgonia.Add(x, x); err != nil {
			t.Fatal(err)
		}
		if _, err := ad.Apply(spec, x, m); err != nil {
			t.Fatal(err)
		}
	}
}

// With package ad loaded, the tensor package's pool of *Dense is off: a
// returned tensor is never handed out again (see pool.go).
func TestTensorPoolOff(t *testing.T) {
	d := tensor.New(tensor.WithShape(2, 3), tensor.Of(tensor.Float64))
	tensor.ReturnTensor(d)
	for range 100 {
		if e := tensor.New(tensor.WithShape(4), tensor.Of(tensor.Float32)); e == d {
			t.Fatal("tensor.New handed out a *Dense returned with ReturnTensor")
		}
	}
}
