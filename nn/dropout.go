package nn

import (
	"fmt"
	"sync/atomic"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
)

// Dropout is torch.nn.functional.dropout: in training, each element is
// kept with probability 1 − p and scaled by 1/(1 − p), or zeroed; out of
// training, or with p = 0, the input itself. The mask is an op of the
// graph with no derivative, drawn once per run of the graph (forward and
// every derivative order use the same one) from a PCG generator seeded
// with (seed, the run's number): run k of a graph gives the same mask for
// the same seed in every process, a new one each run. Dropout is then
// x ⊙ mask, differentiable to every order (Gorgonia's own Dropout divides
// by p and has no second derivative). p = 1 zeroes everything.
//
// Errors: a nil or non-float input, p outside [0, 1].
func Dropout(input *gorgonia.Node, p float64, training bool, seed int64) (*gorgonia.Node, error) {
	if err := checkActivation("Dropout", input); err != nil {
		return nil, err
	}
	if !(p >= 0 && p <= 1) {
		return nil, fmt.Errorf("nn: Dropout: p %v must be in [0, 1]", p)
	}
	if !training || p == 0 {
		return input, nil
	}
	if ad.NoElements(input) {
		return ad.EmptyResult("Dropout", input.Shape(), 0, fillTwin, input)
	}
	runs := new(atomic.Uint64)
	m, err := ad.Apply(withCUDA(elementwiseSpec("DropoutMask", fmt.Sprintf("p=%v seed=%d %p", p, seed, runs), input.Shape(), []bool{false},
		ad.Floats(dropoutKernel[float32](p, seed, runs), dropoutKernel[float64](p, seed, runs)), nil), dropoutGPU{p, seed, runs}), input)
	if err != nil {
		return nil, err
	}
	return gorgonia.HadamardProd(input, m)
}

// dropoutKernel writes the mask of the next run (cpu.DropoutMask): 1/(1 − p)
// with probability 1 − p, else 0.
func dropoutKernel[T ad.Float](p float64, seed int64, runs *atomic.Uint64) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], _ []ad.Tensor[T]) error {
		cpu.DropoutMask(p, seed, runs.Add(1)-1, out.Data)
		return nil
	}
}

// The CUDA twin's descriptor (launch code in the *_cuda.go files; withCUDA
// ignores it in the CPU build).

// dropoutGPU is Dropout's mask, drawn on the host from the stream that
// cpu.DropoutMask uses (seed and the shared run counter) (dropout_cuda.go).
type dropoutGPU struct {
	p    float64
	seed int64
	runs *atomic.Uint64
}
