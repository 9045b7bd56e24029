package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gorgonia.org/tensor"
)

// torch.nn.init: initialisers that fill a dense float32 or float64 tensor in
// place, and torch's module defaults (LinearInit, Conv2dInit) that make new
// ones.
//
// The distributions, bounds, fans and gains are torch's (torch 1.13's
// torch/nn/init.py, formulas in each doc comment); the random numbers are
// not: they come from the caller's *rand.Rand (math/rand/v2), so a seed
// gives the same tensors on every run and platform, but not torch's
// tensors for torch.manual_seed of that seed (torch's mt19937 / Philox
// streams are not reproduced). Elements are drawn in row-major order, one
// draw per element, computed in float64 and rounded to the tensor's dtype:
// U(a, b) is a + (b−a)·rng.Float64(), N(mean, std²) is
// mean + std·rng.NormFloat64().
//
// Errors: a nil tensor or rng, a tensor that is not a *tensor.Dense of
// float32 or float64 (or is a view), NaN or infinite arguments, and the
// argument errors torch raises (a > b, std < 0, an unknown mode or
// nonlinearity, fans of a tensor with fewer than 2 dimensions). A tensor
// without elements is left as it is (torch warns and does nothing).

// CalculateGain is torch.nn.init.calculate_gain: the recommended gain for a
// nonlinearity, by its torch.nn.functional name:
//
//	linear, conv1d, conv2d, conv3d, conv_transpose1d/2d/3d, sigmoid  1
//	tanh                                                             5/3
//	relu                                                             √2
//	leaky_relu                                         √(2 / (1 + param²))
//	selu                                                             3/4
//
// param is leaky_relu's negative slope and ignored otherwise; torch's
// default param=None means 0.01, which here must be passed as 0.01 (0 is a
// slope of 0, gain √2, as torch's calculate_gain('leaky_relu', 0)).
// Errors: an unknown nonlinearity; a NaN or infinite slope for leaky_relu.
func CalculateGain(nonlinearity string, param float64) (float64, error) {
	switch nonlinearity {
	case "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid":
		return 1, nil
	case "tanh":
		return 5.0 / 3, nil
	case "relu":
		return math.Sqrt(2), nil
	case "leaky_relu":
		if math.IsNaN(param) || math.IsInf(param, 0) {
			return 0, fmt.Errorf("nn: CalculateGain: leaky_relu's negative slope %v is not a finite number", param)
		}
		return math.Sqrt(2 / (1 + param*param)), nil
	case "selu":
		return 3.0 / 4, nil
	}
	return 0, fmt.Errorf("nn: CalculateGain: unsupported nonlinearity %q (want linear, conv1d, conv2d, conv3d, "+
		"conv_transpose1d, conv_transpose2d, conv_transpose3d, sigmoid, tanh, relu, leaky_relu or selu)", nonlinearity)
}

// FanInAndFanOut is torch.nn.init._calculate_fan_in_and_fan_out for a
// weight of shape [out, in, k...] (Linear's [out, in], Conv2d's
// [out, in/groups, kh, kw]): fanIn = in·Πk, fanOut = out·Πk. Errors: fewer
// than 2 dimensions, a negative size.
func FanInAndFanOut(shape tensor.Shape) (fanIn, fanOut int, err error) {
	if len(shape) < 2 {
		return 0, 0, fmt.Errorf("nn: FanInAndFanOut: fan in and fan out can not be computed for a tensor with fewer than 2 dimensions, got shape %v", shape)
	}
	receptive := 1
	for i, d := range shape {
		if d < 0 {
			return 0, 0, fmt.Errorf("nn: FanInAndFanOut: negative size %d in axis %d of shape %v", d, i, shape)
		}
		if i >= 2 {
			receptive *= d
		}
	}
	return shape[1] * receptive, shape[0] * receptive, nil
}

// Uniform is torch.nn.init.uniform_: fills t with values drawn from
// U(a, b) (torch's defaults a = 0, b = 1). Errors: a > b, a or b NaN or
// infinite, and those of every initialiser (above).
func Uniform(t tensor.Tensor, a, b float64, rng *rand.Rand) error {
	if err := finite("Uniform", initArg{"a", a}, initArg{"b", b}); err != nil {
		return err
	}
	if a > b {
		return fmt.Errorf("nn: Uniform: a = %v > b = %v", a, b)
	}
	if math.IsInf(b-a, 0) {
		return fmt.Errorf("nn: Uniform: b − a = %v − %v overflows float64", b, a)
	}
	return fillDrawn("Uniform", t, rng, halfOpen(t, a, b, rng))
}

// halfOpen draws from U(a, b) as torch's uniform_, [a, b) in t's dtype: a
// draw that rounds to b (float32, or float64's last place) is drawn again,
// the stream otherwise one Float64 per element. a == b gives a.
func halfOpen(t tensor.Tensor, a, b float64, rng *rand.Rand) func() float64 {
	f32 := t != nil && t.Dtype() == tensor.Float32
	return func() float64 {
		v := a
		for range 64 {
			v = a + (b-a)*rng.Float64()
			if f32 {
				v = float64(float32(v))
			}
			if v < b || a == b {
				return v
			}
		}
		if f32 { // [a, b) holds no float32 above float32(a): the one below b
			return float64(math.Nextafter32(float32(b), float32(math.Inf(-1))))
		}
		return math.Nextafter(b, math.Inf(-1))
	}
}

// Normal is torch.nn.init.normal_: fills t with values drawn from
// N(mean, std²) (torch's defaults mean = 0, std = 1). Errors: std < 0,
// mean or std NaN or infinite, and those of every initialiser (above).
func Normal(t tensor.Tensor, mean, std float64, rng *rand.Rand) error {
	if err := finite("Normal", initArg{"mean", mean}, initArg{"std", std}); err != nil {
		return err
	}
	if std < 0 {
		return fmt.Errorf("nn: Normal: std = %v, want std >= 0", std)
	}
	return fillDrawn("Normal", t, rng, func() float64 { return mean + std*rng.NormFloat64() })
}

// TruncNormal is torch.nn.init.trunc_normal_: values from N(mean, std²)
// truncated to [a, b] (torch's defaults mean = 0, std = 1, a = −2, b = 2),
// drawn as torch does, by the inverse CDF: u from U(2·Φ((a−mean)/std) − 1,
// 2·Φ((b−mean)/std) − 1), then mean + std·√2·erfinv(u), clamped to [a, b].
// It works best for a ≤ mean ≤ b (torch warns when mean is more than 2 std
// outside). Errors: std <= 0, a > b, NaN or infinite arguments, and those of
// every initialiser (above).
func TruncNormal(t tensor.Tensor, mean, std, a, b float64, rng *rand.Rand) error {
	if err := finite("TruncNormal", initArg{"mean", mean}, initArg{"std", std}, initArg{"a", a}, initArg{"b", b}); err != nil {
		return err
	}
	if std <= 0 {
		return fmt.Errorf("nn: TruncNormal: std = %v, want std > 0", std)
	}
	if a > b {
		return fmt.Errorf("nn: TruncNormal: a = %v > b = %v", a, b)
	}
	cdf := func(x float64) float64 { return (1 + math.Erf(x/math.Sqrt2)) / 2 }
	lo, hi := 2*cdf((a-mean)/std)-1, 2*cdf((b-mean)/std)-1
	return fillDrawn("TruncNormal", t, rng, func() float64 {
		v := mean + std*math.Sqrt2*math.Erfinv(lo+(hi-lo)*rng.Float64())
		return min(max(v, a), b)
	})
}

// Constant is torch.nn.init.constant_: fills t with val. Errors: val NaN
// or infinite, and those of every initialiser (above) but the rng's.
func Constant(t tensor.Tensor, val float64) error {
	if err := finite("Constant", initArg{"val", val}); err != nil {
		return err
	}
	return fillValues("Constant", t, func() float64 { return val })
}

// Zeros is torch.nn.init.zeros_: fills t with 0. Errors: those of every
// initialiser (above) but the rng's.
func Zeros(t tensor.Tensor) error { return fillValues("Zeros", t, func() float64 { return 0 }) }

// Ones is torch.nn.init.ones_: fills t with 1. Errors: those of every
// initialiser (above) but the rng's.
func Ones(t tensor.Tensor) error { return fillValues("Ones", t, func() float64 { return 1 }) }

// XavierUniform is torch.nn.init.xavier_uniform_ (Glorot): U(−a, a) with
// a = gain·√(6 / (fanIn + fanOut)) (FanInAndFanOut; torch's default
// gain = 1). Errors: gain NaN or infinite, t with fewer than 2 dimensions,
// and those of every initialiser (above).
func XavierUniform(t tensor.Tensor, gain float64, rng *rand.Rand) error {
	std, err := xavierStd("XavierUniform", t, gain)
	if err != nil {
		return err
	}
	a := math.Sqrt(3) * std
	return fillDrawn("XavierUniform", t, rng, halfOpen(t, -a, a, rng))
}

// XavierNormal is torch.nn.init.xavier_normal_ (Glorot): N(0, std²) with
// std = gain·√(2 / (fanIn + fanOut)) (FanInAndFanOut; torch's default
// gain = 1). Errors as XavierUniform's.
func XavierNormal(t tensor.Tensor, gain float64, rng *rand.Rand) error {
	std, err := xavierStd("XavierNormal", t, gain)
	if err != nil {
		return err
	}
	return fillDrawn("XavierNormal", t, rng, func() float64 { return std * rng.NormFloat64() })
}

// xavierStd is gain·√(2 / (fanIn + fanOut)) of t.
func xavierStd(name string, t tensor.Tensor, gain float64) (float64, error) {
	if err := finite(name, initArg{"gain", gain}); err != nil {
		return 0, err
	}
	if err := checkTensor(name, t); err != nil {
		return 0, err
	}
	fanIn, fanOut, err := FanInAndFanOut(t.Shape())
	if err != nil {
		return 0, fmt.Errorf("nn: %s: %w", name, err)
	}
	if fanIn+fanOut == 0 {
		return 0, nil // no elements: nothing is drawn
	}
	return gain * math.Sqrt(2/float64(fanIn+fanOut)), nil
}

// KaimingUniform is torch.nn.init.kaiming_uniform_ (He): U(−bound, bound)
// with bound = gain·√(3 / fan), gain = CalculateGain(nonlinearity, a) and
// fan = fanIn or fanOut of FanInAndFanOut as mode says. a is leaky_relu's
// negative slope (only used with "leaky_relu"); mode is "fan_in" (keeps
// the forward pass's variance) or "fan_out" (the backward pass's). torch's
// defaults: a = 0, mode "fan_in", nonlinearity "leaky_relu" (gain √2, as
// relu's); here "" for mode or nonlinearity means torch's default.
// torch.nn.Linear and Conv2d use a = √5 (LinearInit, Conv2dInit).
// Errors: an unknown mode or nonlinearity, a NaN or infinite a, t with
// fewer than 2 dimensions, and those of every initialiser (above).
func KaimingUniform(t tensor.Tensor, a float64, mode, nonlinearity string, rng *rand.Rand) error {
	std, err := kaimingStd("KaimingUniform", t, a, mode, nonlinearity)
	if err != nil {
		return err
	}
	bound := math.Sqrt(3) * std
	return fillDrawn("KaimingUniform", t, rng, halfOpen(t, -bound, bound, rng))
}

// KaimingNormal is torch.nn.init.kaiming_normal_ (He): N(0, std²) with
// std = gain / √fan, gain and fan as KaimingUniform's (torch's defaults
// a = 0, mode "fan_in", nonlinearity "leaky_relu"; "" means the default).
// Errors as KaimingUniform's.
func KaimingNormal(t tensor.Tensor, a float64, mode, nonlinearity string, rng *rand.Rand) error {
	std, err := kaimingStd("KaimingNormal", t, a, mode, nonlinearity)
	if err != nil {
		return err
	}
	return fillDrawn("KaimingNormal", t, rng, func() float64 { return std * rng.NormFloat64() })
}

// kaimingStd is gain / √fan (torch's _calculate_correct_fan and
// calculate_gain).
func kaimingStd(name string, t tensor.Tensor, a float64, mode, nonlinearity string) (float64, error) {
	if err := finite(name, initArg{"a", a}); err != nil {
		return 0, err
	}
	if mode == "" {
		mode = "fan_in"
	}
	if nonlinearity == "" {
		nonlinearity = "leaky_relu"
	}
	if mode != "fan_in" && mode != "fan_out" {
		return 0, fmt.Errorf("nn: %s: mode %q not supported, want fan_in or fan_out", name, mode)
	}
	gain, err := CalculateGain(nonlinearity, a)
	if err != nil {
		return 0, fmt.Errorf("nn: %s: %w", name, err)
	}
	if err := checkTensor(name, t); err != nil {
		return 0, err
	}
	fanIn, fanOut, err := FanInAndFanOut(t.Shape())
	if err != nil {
		return 0, fmt.Errorf("nn: %s: %w", name, err)
	}
	fan := fanIn
	if mode == "fan_out" {
		fan = fanOut
	}
	if fan == 0 {
		return 0, nil // no elements: nothing is drawn
	}
	return gain / math.Sqrt(float64(fan)), nil
}

// LinearInit returns a weight [out, in] and, if bias, a bias [out] of
// dtype dt, initialised as torch.nn.Linear(in, out).reset_parameters:
// KaimingUniform(weight, √5, "fan_in", "leaky_relu"), that is
// U(−1/√in, 1/√in), then the bias from U(−1/√in, 1/√in) (0 for in = 0),
// drawn from rng in that order. bias false gives a nil bias. Errors: in or
// out negative, dt not float32 or float64, a nil rng.
func LinearInit(in, out int, bias bool, dt tensor.Dtype, rng *rand.Rand) (weight, b tensor.Tensor, err error) {
	if in < 0 || out < 0 {
		return nil, nil, fmt.Errorf("nn: LinearInit: in = %d and out = %d, want sizes >= 0", in, out)
	}
	return moduleInit("LinearInit", tensor.Shape{out, in}, bias, dt, rng)
}

// Conv2dInit returns a weight [out, in/groups, kh, kw] and, if bias, a
// bias [out] of dtype dt, initialised as torch.nn.Conv2d(in, out, kernel,
// groups=groups).reset_parameters: KaimingUniform(weight, √5, "fan_in",
// "leaky_relu"), that is U(−1/√fanIn, 1/√fanIn) with
// fanIn = in/groups·kh·kw, then the bias from the same U(−1/√fanIn,
// 1/√fanIn) (0 for fanIn = 0), drawn from rng in that order. bias false
// gives a nil bias. Errors: in or out negative, groups < 1 or not dividing
// in and out, a kernel size < 1, dt not float32 or float64, a nil rng.
func Conv2dInit(in, out int, kernel [2]int, groups int, bias bool, dt tensor.Dtype, rng *rand.Rand) (weight, b tensor.Tensor, err error) {
	switch {
	case in < 0 || out < 0:
		return nil, nil, fmt.Errorf("nn: Conv2dInit: in = %d and out = %d, want sizes >= 0", in, out)
	case kernel[0] < 1 || kernel[1] < 1:
		return nil, nil, fmt.Errorf("nn: Conv2dInit: kernel %v, want sizes >= 1", kernel)
	case groups < 1 || in%groups != 0 || out%groups != 0:
		return nil, nil, fmt.Errorf("nn: Conv2dInit: groups = %d must be >= 1 and divide in = %d and out = %d", groups, in, out)
	}
	return moduleInit("Conv2dInit", tensor.Shape{out, in / groups, kernel[0], kernel[1]}, bias, dt, rng)
}

// moduleInit is torch's reset_parameters of Linear and Conv2d for a weight
// of shape s.
func moduleInit(name string, s tensor.Shape, bias bool, dt tensor.Dtype, rng *rand.Rand) (weight, b tensor.Tensor, err error) {
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, nil, fmt.Errorf("nn: %s: dtype %v, want float32 or float64", name, dt)
	}
	if rng == nil {
		return nil, nil, fmt.Errorf("nn: %s: rng is nil", name)
	}
	w := tensor.New(tensor.Of(dt), tensor.WithShape(s...))
	if err := KaimingUniform(w, math.Sqrt(5), "fan_in", "leaky_relu", rng); err != nil {
		return nil, nil, fmt.Errorf("nn: %s: %w", name, err)
	}
	if !bias {
		return w, nil, nil
	}
	bv := tensor.New(tensor.Of(dt), tensor.WithShape(s[0]))
	fanIn, _, _ := FanInAndFanOut(s) // s has rank >= 2, sizes >= 0
	bound := 0.0
	if fanIn > 0 {
		bound = 1 / math.Sqrt(float64(fanIn))
	}
	if err := Uniform(bv, -bound, bound, rng); err != nil {
		return nil, nil, fmt.Errorf("nn: %s: %w", name, err)
	}
	return w, bv, nil
}

// initArg is a named argument of an initialiser, for finite.
type initArg struct {
	name string
	v    float64
}

// finite checks that no argument is NaN or infinite.
func finite(fn string, args ...initArg) error {
	for _, a := range args {
		if math.IsNaN(a.v) || math.IsInf(a.v, 0) {
			return fmt.Errorf("nn: %s: %s = %v, want a finite number", fn, a.name, a.v)
		}
	}
	return nil
}

// checkTensor checks that t is a dense float32 or float64 tensor, not a
// view, that an initialiser can fill.
func checkTensor(fn string, t tensor.Tensor) error {
	if t == nil {
		return fmt.Errorf("nn: %s: tensor is nil", fn)
	}
	d, ok := t.(*tensor.Dense)
	if !ok || d == nil {
		return fmt.Errorf("nn: %s: tensor is a %T, want a *tensor.Dense", fn, t)
	}
	if dt := d.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return fmt.Errorf("nn: %s: tensor dtype %v, want float32 or float64", fn, dt)
	}
	if d.IsView() {
		return fmt.Errorf("nn: %s: tensor %v is a view, want a tensor that owns its elements (materialize it first)", fn, d.Shape())
	}
	return nil
}

// fillDrawn draws t's elements in row-major order with draw, after checking t
// and rng.
func fillDrawn(fn string, t tensor.Tensor, rng *rand.Rand, draw func() float64) error {
	if rng == nil {
		return fmt.Errorf("nn: %s: rng is nil", fn)
	}
	return fillValues(fn, t, draw)
}

// fillValues sets t's elements in row-major order to next(), each rounded
// to t's dtype, after checking t.
func fillValues(fn string, t tensor.Tensor, next func() float64) error {
	if err := checkTensor(fn, t); err != nil {
		return err
	}
	d := t.(*tensor.Dense)
	if d.Shape().IsScalar() {
		// A 0-d Dense's Data is its element, not a slice.
		if d.Dtype() == tensor.Float32 {
			d.Set(0, float32(next()))
		} else {
			d.Set(0, next())
		}
		return nil
	}
	if d.Shape().TotalSize() == 0 {
		return nil // Data of an empty Dense panics
	}
	switch s := d.Data().(type) {
	case []float32:
		for i := range s {
			s[i] = float32(next())
		}
	case []float64:
		for i := range s {
			s[i] = next()
		}
	}
	return nil
}
