package optim

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"gorgonia.org/tensor"
)

// float is the element type of the tensors the optimizers update.
type float interface{ float32 | float64 }

// checkParams checks an optimizer's parameters: each a dense, contiguous
// float32 or float64 tensor (not nil), none listed twice (the same tensor
// or data starting at the same address), and returns them as
// *tensor.Dense.
func checkParams(who string, params []tensor.Tensor) ([]*tensor.Dense, error) {
	if len(params) == 0 {
		return nil, fmt.Errorf("optim: %s: no parameters", who)
	}
	out := make([]*tensor.Dense, len(params))
	first := make(map[uintptr]int, len(params))
	for i, p := range params {
		d, err := denseFloat(p)
		if err != nil {
			return nil, fmt.Errorf("optim: %s: params[%d]: %w", who, i, err)
		}
		for j := 0; j < i; j++ {
			if out[j] == d {
				return nil, fmt.Errorf("optim: %s: params[%d] is params[%d] again", who, i, j)
			}
		}
		if d.Shape().TotalSize() > 0 {
			if j, ok := first[d.Uintptr()]; ok {
				return nil, fmt.Errorf("optim: %s: params[%d] shares its data with params[%d]", who, i, j)
			}
			first[d.Uintptr()] = i
		}
		out[i] = d
	}
	return out, nil
}

// denseFloat is t as a *tensor.Dense whose elements lie contiguously in
// its backing (Float32s or Float64s), or an error saying why it is not.
func denseFloat(t tensor.Tensor) (*tensor.Dense, error) {
	if t == nil {
		return nil, fmt.Errorf("nil tensor")
	}
	d, ok := t.(*tensor.Dense)
	if !ok || d == nil {
		return nil, fmt.Errorf("want a *tensor.Dense, got %T", t)
	}
	n := d.Shape().TotalSize()
	switch d.Dtype() {
	case tensor.Float32:
		if n > 0 && len(d.Float32s()) != n {
			return nil, fmt.Errorf("shape %v holds %d elements, its backing %d (a strided view?)", d.Shape(), n, len(d.Float32s()))
		}
	case tensor.Float64:
		if n > 0 && len(d.Float64s()) != n {
			return nil, fmt.Errorf("shape %v holds %d elements, its backing %d (a strided view?)", d.Shape(), n, len(d.Float64s()))
		}
	default:
		return nil, fmt.Errorf("dtype %v, want float32 or float64", d.Dtype())
	}
	if n > 1 && d.RequiresIterator() {
		return nil, fmt.Errorf("a non-contiguous view (shape %v)", d.Shape())
	}
	return d, nil
}

// checkGrads checks Step's gradients against the parameters: as many,
// each nil or a tensor of its parameter's shape and dtype.
func checkGrads(who string, params []*tensor.Dense, grads []tensor.Tensor) ([]*tensor.Dense, error) {
	if len(grads) != len(params) {
		return nil, fmt.Errorf("optim: %s.Step: %d gradients for %d parameters", who, len(grads), len(params))
	}
	out := make([]*tensor.Dense, len(grads))
	for i, g := range grads {
		if g == nil {
			continue
		}
		if d, ok := g.(*tensor.Dense); ok && d == nil {
			continue
		}
		d, err := denseFloat(g)
		if err != nil {
			return nil, fmt.Errorf("optim: %s.Step: grads[%d]: %w", who, i, err)
		}
		if err := sameLayout(params[i], d); err != nil {
			return nil, fmt.Errorf("optim: %s.Step: grads[%d]: %w", who, i, err)
		}
		out[i] = d
	}
	return out, nil
}

// grain is the elements of one worker's piece of an update (par.ForGrains):
// an update costs 2 to 10 ns an element, so a piece is tens of µs.
const grain = 1 << 13

// stepEach checks Step's gradients (checkGrads) and calls update for
// each parameter that has one, in order.
func stepEach(who string, params []*tensor.Dense, grads []tensor.Tensor, update func(i int, p, g *tensor.Dense)) error {
	gs, err := checkGrads(who, params, grads)
	if err != nil {
		return err
	}
	for i, g := range gs {
		if g != nil {
			update(i, params[i], g)
		}
	}
	return nil
}

// sameLayout says how t differs from the parameter p in dtype or shape.
func sameLayout(p, t *tensor.Dense) error {
	if t.Dtype() != p.Dtype() {
		return fmt.Errorf("dtype %v, its parameter's %v", t.Dtype(), p.Dtype())
	}
	if !slices.Equal(t.Shape(), p.Shape()) { // Shape.Eq would equate [n] with [1, n]
		return fmt.Errorf("shape %v, its parameter's %v", t.Shape(), p.Shape())
	}
	return nil
}

// checkLR is the learning rate check of every optimizer (torch: "Invalid
// learning rate"): finite and >= 0.
func checkLR(who string, lr float64) error {
	if !(lr >= 0) || math.IsInf(lr, 0) {
		return fmt.Errorf("optim: %s: lr = %v, want a finite value >= 0", who, lr)
	}
	return nil
}

// checkNonNegative checks a hyper-parameter that torch wants >= 0 (and
// we finite).
func checkNonNegative(who, name string, v float64) error {
	if !(v >= 0) || math.IsInf(v, 0) {
		return fmt.Errorf("optim: %s: %s = %v, want a finite value >= 0", who, name, v)
	}
	return nil
}

// elems is d's elements as a []T (T its dtype's Go type).
func elems[T float](d *tensor.Dense) []T {
	if d.Shape().TotalSize() == 0 {
		return nil
	}
	var z T
	if unsafe.Sizeof(z) == 4 {
		return any(d.Float32s()).([]T)
	}
	return any(d.Float64s()).([]T)
}

// zerosLike is a new tensor of p's dtype and shape holding zeros.
func zerosLike(p *tensor.Dense) *tensor.Dense {
	return tensor.New(tensor.Of(p.Dtype()), tensor.WithShape(p.Shape().Clone()...))
}

// fma is a·b + c rounded once to T, as torch's vectorised CPU kernels
// compute add(x, y, alpha) (fmadd(y, alpha, x)) and addcmul.
func fma[T float](a, b, c T) T {
	if unsafe.Sizeof(a) == 4 {
		return T(fma32(float32(a), float32(b), float32(c)))
	}
	return T(math.FMA(float64(a), float64(b), float64(c)))
}

// fma32 is a·b + c rounded once to float32. The product is exact in
// float64 and s = a·b + c is off the exact sum by the TwoSum error e; rounding s to odd (to its neighbour
// with an odd last bit where e != 0) and then to float32 is the exact sum
// rounded once, since float64 has more than 24 + 1 bits (Boldo and
// Melquiond, "Emulation of FMA and correctly rounded sums: proved
// algorithms using rounding to odd", 2008).
func fma32(a32, b32, c32 float32) float32 {
	p, c := float64(a32)*float64(b32), float64(c32)
	s := p + c
	bb := s - p
	e := (p - (s - bb)) + (c - bb) // NaN for infinite or NaN operands
	if u := math.Float64bits(s); u&1 == 0 && (e > 0 || e < 0) {
		d := int64(u^math.Float64bits(e)) >> 63 // 0: e has s's sign (away from 0), −1: not
		s = math.Float64frombits(u + uint64(1+2*d))
	}
	return float32(s)
}

// powInt is x**n for n >= 0, correctly rounded but in rare cases (as
// glibc's pow, which Python's float ** calls): exponentiation by squaring
// in double-double arithmetic, rounded once at the end.
func powInt(x float64, n int) float64 {
	rh, rl := 1.0, 0.0
	bh, bl := x, 0.0
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			rh, rl = ddMul(rh, rl, bh, bl)
		}
		bh, bl = ddMul(bh, bl, bh, bl)
	}
	return rh + rl
}

// ddMul multiplies two double-double numbers (ah+al)(bh+bl).
func ddMul(ah, al, bh, bl float64) (float64, float64) {
	p := ah * bh
	if p == 0 || math.IsInf(p, 0) || math.IsNaN(p) {
		return p, 0
	}
	e := math.FMA(ah, bh, -p) + (float64(ah*bl) + float64(al*bh))
	h := p + e
	return h, e - (h - p)
}

// checkFinite checks a hyper-parameter that may take any finite value.
func checkFinite(who, name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("optim: %s: %s = %v, want a finite value", who, name, v)
	}
	return nil
}

// errNilOptimizer is the error of a method called on a nil optimizer.
func errNilOptimizer(method string) error {
	return fmt.Errorf("optim: %s: nil optimizer", method)
}
