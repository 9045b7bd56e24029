//go:build cuda

package cudatest

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"

	"github.com/gops-dev/gops/internal/dense"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RegisterGorgoniaPTX registers Gorgonia's own elementwise kernels, which
// Gorgonia v0.9.18 ships no PTX for: the GPU bundle holds them (compiled by
// internal/cuda/kernels/gen -gorgonia), found through GOPS_GORGONIA_PTX, each
// dir/M.ptx with its entry names in dir/M.funcs. Without the variable it
// does nothing; an unreadable file is an error. Call it from a test
// package's init, before any TapeMachine is made.
func RegisterGorgoniaPTX() error {
	dir := os.Getenv("GOPS_GORGONIA_PTX")
	if dir == "" {
		return nil
	}
	ptxs, _ := filepath.Glob(filepath.Join(dir, "*.ptx"))
	for _, p := range ptxs {
		ptx, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		funcs, err := os.ReadFile(strings.TrimSuffix(p, ".ptx") + ".funcs")
		if err != nil {
			return err
		}
		gorgonia.AddToStdLib(strings.TrimSuffix(filepath.Base(p), ".ptx"), string(ptx), strings.Fields(string(funcs)))
	}
	return nil
}

// HostCopy copies a (device) tensor's float32, float64 or int elements
// into a host tensor; other values are returned as they are.
func HostCopy(v gorgonia.Value) gorgonia.Value {
	t, ok := v.(tensor.Tensor)
	if !ok {
		return v
	}
	var back any
	switch d := t.Data().(type) {
	case []float32:
		back = append([]float32(nil), d...)
	case []float64:
		back = append([]float64(nil), d...)
	case []int:
		back = append([]int(nil), d...)
	default:
		return v
	}
	return tensor.New(tensor.WithShape(t.Shape().Clone()...), tensor.WithBacking(back))
}

// Random is a host tensor of dtype dt (Float32: the float64 draws
// rounded) and the given shape, drawn from rng's standard normal.
func Random(rng *rand.Rand, dt tensor.Dtype, shape tensor.Shape) tensor.Tensor {
	d := make([]float64, shape.TotalSize())
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	return Tensor(dt, shape, d)
}

// Tensor is d as a host tensor of dtype dt (Float32: rounded) and the
// given shape.
func Tensor(dt tensor.Dtype, shape tensor.Shape, d []float64) tensor.Tensor {
	return dense.Of(dt, shape, d)
}

// Input is a tensor node of g named name, holding v.
func Input(g *gorgonia.ExprGraph, name string, v tensor.Tensor) *gorgonia.Node {
	return gorgonia.NewTensor(g, v.Dtype(), v.Shape().Dims(), gorgonia.WithShape(v.Shape()...), gorgonia.WithValue(v), gorgonia.WithName(name))
}

// Close compares the GPU's elements got with the CPU's want: each within
// 1e-10 (float64) or 1e-4 (float32) relative to max(|want[i]|, max |want|),
// NaN equal to NaN. It returns the first difference.
func Close(got, want []float64, dt tensor.Dtype) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d elements, want %d", len(got), len(want))
	}
	tol := 1e-10
	if dt == tensor.Float32 {
		tol = 1e-4
	}
	scale := 0.0
	for _, x := range want {
		scale = max(scale, math.Abs(x))
	}
	for i := range got {
		if math.IsNaN(got[i]) && math.IsNaN(want[i]) {
			continue
		}
		if d := math.Abs(got[i] - want[i]); d > tol*max(math.Abs(want[i]), scale, 1e-30) {
			return fmt.Errorf("element %d: GPU %v, CPU %v", i, got[i], want[i])
		}
	}
	return nil
}
