package ad_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/cpu"
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

// A panic in an op's forward, or in a kernel goroutine whose panic
// cpu.ParallelFor raises again on the caller, reaches the caller as an
// error naming the op as the one that failed.
func TestOpForwardPanicIsError(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	spec := ad.OpSpec{
		Name:       "Broken",
		InputDims:  []int{1},
		OutputDims: 1,
		Shape:      func(s []tensor.Shape) (tensor.Shape, error) { return s[0], nil },
		Forward: func([]gorgonia.Value) (gorgonia.Value, error) {
			cpu.ParallelFor(8, func(lo, hi int) {
				var s []int
				_ = s[lo+hi] // index out of range in a worker
			})
			return nil, nil
		},
	}
	err := runOnce(t, spec, []float64{1, 2})
	if err == nil || !strings.Contains(err.Error(), "op Broken failed: its forward panicked") || !strings.Contains(err.Error(), "index out of range") {
		t.Fatalf("error %v", err)
	}
}

// A Forward whose result has another shape than Shape promised is an error,
// not a silently misshapen node.
func TestOpForwardWrongShapeIsError(t *testing.T) {
	spec := ad.OpSpec{
		Name:       "Short",
		InputDims:  []int{1},
		OutputDims: 1,
		Shape:      func(s []tensor.Shape) (tensor.Shape, error) { return s[0], nil },
		Forward: func([]gorgonia.Value) (gorgonia.Value, error) {
			return tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{1})), nil
		},
	}
	err := runOnce(t, spec, []float64{1, 2})
	if err == nil || !strings.Contains(err.Error(), "Short: Forward returned shape (1), Shape says (2)") {
		t.Fatalf("error %v", err)
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
		ix := ad.Constant(g, tensor.New(tensor.WithShape(k), tensor.WithBacking(idx)))
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
