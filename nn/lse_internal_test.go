package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// lseTestTarget is a target node for rows rows: class r mod n, and ignore
// at row 1.
func lseTestTarget(g *gorgonia.ExprGraph, rows, n, ignore int) *gorgonia.Node {
	t := make([]int, rows)
	for r := range t {
		t[r] = (2*r + 1) % n
	}
	t[1] = ignore
	return gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(rows), gorgonia.WithName("target"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(rows), tensor.WithBacking(t))))
}

// lseRun runs a Go kernel into a zeroed output of n elements, as ad does
// (emu_test.go's goKernel, which is not in every build).
func lseRun[T ad.Float](t *testing.T, k func(ad.Tensor[T], []ad.Tensor[T]) error, n int, in ...ad.Tensor[T]) ad.Tensor[T] {
	t.Helper()
	out := ad.Tensor[T]{Shape: tensor.Shape{n}, Data: make([]T, n)}
	if err := k(out, in); err != nil {
		t.Fatal(err)
	}
	return out
}

func lseData[T ad.Float](x []T) ad.Tensor[T] {
	return ad.Tensor[T]{Shape: tensor.Shape{len(x)}, Data: x}
}

func lseTestTensor(seed uint64, scale float64, shape ...int) *tensor.Dense {
	r := rand.New(rand.NewPCG(seed, 1))
	d := make([]float64, tensor.Shape(shape).TotalSize())
	for i := range d {
		d[i] = scale * r.NormFloat64()
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
}

// TestLogSumExpOps: LogSumExp, NLL, LogSumExpGrad, NLLGrad and Mask, each
// applied to LogSumExp's result where it takes one (their derivatives
// treat it as LogSumExp(x)): derivatives of orders 1–3 w.r.t. x and the
// upstream U against finite differences, TapeMachine == LispMachine in
// float32 and float64, bitwise the same for GOMAXPROCS 1, 2 and 8, on
// rows short and long enough for the parallel kernels.
func TestLogSumExpOps(t *testing.T) {
	const ignore = -1
	for _, c := range []struct {
		name string
		f    func(rows, n int) graphtest.Func
		in   func(rows, n int) []*tensor.Dense
		wrt  []int
	}{
		{"LogSumExp", func(rows, n int) graphtest.Func {
			return func(in gorgonia.Nodes) (*gorgonia.Node, error) { return ad.Apply(lseSpec(rows, n), in[0]) }
		}, nil, []int{0}},
		{"NLL", func(rows, n int) graphtest.Func {
			return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
				return ad.Apply(nllSpec(rows, n, ignore), in[0], lseTestTarget(in[0].Graph(), rows, n, ignore))
			}
		}, nil, []int{0}},
		{"LogSumExpGrad", func(rows, n int) graphtest.Func {
			return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
				lse, err := ad.Apply(lseSpec(rows, n), in[0])
				if err != nil {
					return nil, err
				}
				return ad.Apply(lseGradSpec(rows, n, nil), in[0], lse, in[1])
			}
		}, func(rows, n int) []*tensor.Dense { return []*tensor.Dense{lseTestTensor(3, 0.7, rows)} }, []int{0, 1}},
		{"NLLGrad", func(rows, n int) graphtest.Func {
			return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
				return ad.Apply(lseGradSpec(rows, n, &lseTarget{ignore}), in[0], in[1], lseTestTarget(in[0].Graph(), rows, n, ignore))
			}
		}, func(rows, n int) []*tensor.Dense { return []*tensor.Dense{lseTestTensor(3, 0.7, rows)} }, []int{0, 1}},
		{"Mask", func(rows, n int) graphtest.Func {
			return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
				lse, err := ad.Apply(lseSpec(rows, n), in[0])
				if err != nil {
					return nil, err
				}
				s, err := gorgonia.HadamardProd(gorgonia.Must(gorgonia.Sin(lse)), in[1])
				if err != nil {
					return nil, err
				}
				m, err := ad.Apply(maskSpec(rows, ignore), s, lseTestTarget(in[0].Graph(), rows, n, ignore))
				if err != nil {
					return nil, err
				}
				return gorgonia.Cube(m)
			}
		}, func(rows, n int) []*tensor.Dense { return []*tensor.Dense{lseTestTensor(3, 0.7, rows)} }, []int{0, 1}},
	} {
		for _, sz := range [][2]int{{3, 4}, {5, 7}} {
			rows, n := sz[0], sz[1]
			t.Run(fmt.Sprintf("%s/%dx%d", c.name, rows, n), func(t *testing.T) {
				in := []*tensor.Dense{lseTestTensor(2, 1.5, rows, n)}
				if c.in != nil {
					in = append(in, c.in(rows, n)...)
				}
				f := c.f(rows, n)
				if err := graphtest.Check(f, in, graphtest.Options{Order: 3, Wrt: c.wrt, Seed: 9, RTol: 1e-5, ATol: 1e-7}); err != nil {
					t.Fatal(err)
				}
				for _, in := range [][]*tensor.Dense{in, graphtest.Float32(in)} {
					tol := 1e-12
					if in[0].Dtype() == tensor.Float32 {
						tol = 2e-5
					}
					if err := graphtest.CheckVMs(f, in, graphtest.Options{Wrt: c.wrt, Seed: 9, RTol: tol, ATol: tol}); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
		t.Run(c.name+"/deterministic", func(t *testing.T) {
			rows, n := 300, 257 // past lineGrain: several goroutines
			in := []*tensor.Dense{lseTestTensor(4, 3, rows, n)}
			if c.in != nil {
				in = append(in, c.in(rows, n)...)
			}
			if err := graphtest.CheckDeterministic(c.f(rows, n), graphtest.Float32(in), c.wrt, 1, 2, 8); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestNLLKernels: NLL, NLLGrad and Mask on ignored rows (0 even for a NaN
// or infinite row), and their error for a target outside [0, n).
func TestNLLKernels(t *testing.T) {
	x := []float64{math.NaN(), 1, 2, math.Inf(1), 0, 0, 1, 2, 3}
	lse := lseRun(t, lseKernel[float64](3, 3), 3, lseData(x)).Data
	tg := ad.Tensor[float64]{Shape: tensor.Shape{3}, Ints: []int{-1, -1, 2}}
	u := lseData([]float64{math.NaN(), math.Inf(1), 2})
	nll := lseRun(t, nllKernel[float64](3, -1), 3, lseData(x), tg).Data
	if nll[0] != 0 || nll[1] != 0 || math.Abs(nll[2]-(lse[2]-3)) > 1e-15 {
		t.Errorf("NLL %v, want [0 0 %v]", nll, lse[2]-3)
	}
	g := lseRun(t, lseGradKernel[float64](3, &lseTarget{-1}), 9, lseData(x), u, tg).Data
	for j, v := range g[:6] {
		if v != 0 || math.Signbit(v) {
			t.Errorf("NLLGrad[%d] = %v on an ignored row, want +0", j, v)
		}
	}
	if s := math.Exp(3 - lse[2]); math.Abs(g[8]-2*(s-1)) > 1e-15 {
		t.Errorf("NLLGrad[8] = %v, want %v", g[8], 2*(s-1))
	}
	m := lseRun(t, maskKernel[float64](-1), 3, u, tg).Data
	if m[0] != 0 || m[1] != 0 || m[2] != 2 {
		t.Errorf("Mask %v, want [0 0 2]", m)
	}
	bad := ad.Tensor[float64]{Shape: tensor.Shape{3}, Ints: []int{0, 3, 1}}
	out := ad.Tensor[float64]{Shape: tensor.Shape{3}, Data: make([]float64, 9)}
	for name, k := range map[string]func(ad.Tensor[float64], []ad.Tensor[float64]) error{
		"NLL": nllKernel[float64](3, -1), "NLLGrad": lseGradKernel[float64](3, &lseTarget{-1})} {
		in := []ad.Tensor[float64]{lseData(x), bad}
		if name == "NLLGrad" {
			in = []ad.Tensor[float64]{lseData(x), u, bad}
		}
		if err := k(out, in); err == nil || err.Error() != "nn: CrossEntropy: target 3 at row 1 is outside [0, 3) and not IgnoreIndex -1" {
			t.Errorf("%s: error %v", name, err)
		}
	}
}
