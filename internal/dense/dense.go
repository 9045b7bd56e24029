// Package dense builds host tensors from float64 data for the test and
// conformance helpers (graphtest, internal/golden, internal/cuda/cudatest),
// which all hold their values in float64 whatever the dtype under test.
package dense

import "gorgonia.org/tensor"

// Of is d as a dense tensor of dtype dt and the given shape: for
// tensor.Float32 a new backing of d's values rounded to float32, else d
// itself (not a copy) as float64.
func Of(dt tensor.Dtype, shape tensor.Shape, d []float64) *tensor.Dense {
	if dt == tensor.Float32 {
		f := make([]float32, len(d))
		for i, v := range d {
			f[i] = float32(v)
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
}
