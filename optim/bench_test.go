package optim

import (
	"testing"

	"gorgonia.org/tensor"
)

// BenchmarkStep times one Step over a parameter of 2^20 elements.
func BenchmarkStep(b *testing.B) {
	const n = 1 << 20
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, kind := range []string{"SGD", "Adam"} {
			b.Run(kind+"/"+dt.String(), func(b *testing.B) {
				p := tensor.New(tensor.Of(dt), tensor.WithShape(n))
				g := tensor.New(tensor.Of(dt), tensor.WithShape(n))
				if err := g.Memset(castTo(dt, 0.5)); err != nil {
					b.Fatal(err)
				}
				var o interface{ Step([]tensor.Tensor) error }
				var err error
				if kind == "SGD" {
					o, err = NewSGD([]tensor.Tensor{p}, SGDOpts{LR: 0.01, Momentum: 0.9, WeightDecay: 1e-4})
				} else {
					o, err = NewAdam([]tensor.Tensor{p}, DefaultAdamOpts())
				}
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(n * int64(dt.Size()))
				for i := 0; i < b.N; i++ {
					if err := o.Step([]tensor.Tensor{g}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func castTo(dt tensor.Dtype, v float64) any {
	if dt == tensor.Float32 {
		return float32(v)
	}
	return v
}
