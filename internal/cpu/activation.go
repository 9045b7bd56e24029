package cpu

import (
	"math"

	"github.com/chewxy/math32"
	"github.com/gops-dev/gops/internal/par"
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
// x > 0 (and NaN), slope·x elsewhere, 0 for slope 0 (−Inf included).
// With slope 0 (ReLU) that is max(x, 0) (Go's max keeps NaN and takes
// +0 over −0), without a branch on the sign.
func LeakyReLU[T Float](slope float64, y, x []T) {
	if slope == 0 {
		elementwise(y, x, func(y, x []T) {
			for i, v := range x {
				y[i] = max(v, 0)
			}
		})
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
// elsewhere (NaN included).
// It selects between the two values' bits with the test on x's bits
// (0 < bits ≤ those of +Inf: x > 0), which compiles to a conditional
// move rather than a branch on the sign.
func LeakySlope[T Float](slope float64, y, x []T) {
	switch ys := any(y).(type) {
	case []float32:
		one, s := math.Float32bits(1), math.Float32bits(float32(slope))
		elementwise(ys, any(x).([]float32), func(y, x []float32) {
			for i, v := range x {
				b := s
				if uint32(int32(math.Float32bits(v))-1) < 0x7f800000 {
					b = one
				}
				y[i] = math.Float32frombits(b)
			}
		})
	case []float64:
		one, s := math.Float64bits(1), math.Float64bits(slope)
		elementwise(ys, any(x).([]float64), func(y, x []float64) {
			for i, v := range x {
				b := s
				if uint64(int64(math.Float64bits(v))-1) < 0x7ff0000000000000 {
					b = one
				}
				y[i] = math.Float64frombits(b)
			}
		})
	}
}

// Erf sets y to erf(x) (torch.erf), computed in float64.
func Erf[T Float](y, x []T) {
	elementwise(y, x, func(y, x []T) {
		for i, v := range x {
			y[i] = T(math.Erf(float64(v)))
		}
	})
}
