package cpu

import (
	"math"

	"github.com/chewxy/math32"
	"github.com/gops-dev/gops/internal/par"
	"github.com/gops-dev/gops/internal/vmath"
)

// The elementwise activations of nn (torch.tanh, torch.sigmoid, leaky_relu
// and its slope, erf), y[i] = f(x[i]) over slices of one length, split
// into contiguous chunks over goroutines when long (each element's value
// is the same whatever the split).

// elementwise runs f on the matching chunks of y and x, x's length
// split over goroutines (par.ForWork).
func elementwise[T Float](y, x []T, f func(y, x []T)) {
	y = y[:len(x)]
	par.ForWork(len(x), len(x), func(lo, hi int) { f(y[lo:hi], x[lo:hi]) })
}

// Tanh sets y to tanh(x) (torch.tanh): math.Tanh in float64 and
// chewxy/math32's Tanh in float32, the functions Gorgonia's tensor package
// calls, so the values are bitwise Gorgonia's Tanh.
func Tanh[T Float](y, x []T) { elementwise(y, x, tanhLoop[T]) }

func tanhLoop[T Float](y, x []T) {
	switch ys := any(y).(type) {
	case []float64:
		for i, v := range any(x).([]float64) {
			ys[i] = math.Tanh(v)
		}
	case []float32:
		for i, v := range any(x).([]float32) {
			ys[i] = math32.Tanh(v)
		}
	}
}

// Sigmoid sets y to 1/(1 + exp(−x)) (torch.sigmoid), computed in float64
// as exp(x)/(1 + exp(x)) for negative x so that it does not saturate
// early.
func Sigmoid[T Float](y, x []T) { elementwise(y, x, sigmoidLoop[T]) }

func sigmoidLoop[T Float](y, x []T) {
	for i, v := range x {
		x := float64(v)
		if x >= 0 {
			y[i] = T(1 / (1 + math.Exp(-x)))
		} else {
			e := math.Exp(x)
			y[i] = T(e / (1 + e))
		}
	}
}

// LeakyReLU sets y to torch.nn.functional.leaky_relu(x, slope): x where
// x > 0 (and NaN), slope·x elsewhere, 0 for slope 0 (−Inf included; ReLU
// is vmath.ReLU, without a branch on the sign).
func LeakyReLU[T Float](slope float64, y, x []T) {
	if slope == 0 {
		elementwise(y, x, vmath.ReLU[T])
		return
	}
	elementwise(y, x, func(y, x []T) {
		for i, v := range x {
			if v > 0 || v != v {
				y[i] = v
			} else {
				y[i] = T(slope) * v
			}
		}
	})
}

// LeakySlope sets y to LeakyReLU's derivative: 1 where x > 0, slope
// elsewhere (NaN included), with vmath.Positive.
func LeakySlope[T Float](slope float64, y, x []T) {
	elementwise(y, x, func(y, x []T) { vmath.Positive(y, x, 1, T(slope)) })
}

// LeakyGrad sets y to LeakyReLU's gradient for the upstream u: u·slope,
// slope as LeakySlope decides it, the product rounded once (bitwise u ⊙
// LeakySlope(x)), with vmath.PositiveMul in one pass. u is as long as x.
func LeakyGrad[T Float](slope float64, y, x, u []T) {
	y, u = y[:len(x)], u[:len(x)]
	par.ForWork(len(x), 2*len(x), func(lo, hi int) { vmath.PositiveMul(y[lo:hi], x[lo:hi], u[lo:hi], 1, T(slope)) })
}

// Erf sets y to erf(x) (torch.erf), computed in float64.
func Erf[T Float](y, x []T) {
	elementwise(y, x, func(y, x []T) {
		for i, v := range x {
			y[i] = T(math.Erf(float64(v)))
		}
	})
}
