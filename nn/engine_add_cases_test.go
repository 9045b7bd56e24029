package nn_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/nn"
	"gorgonia.org/tensor"
)

// addDesc describes a tensor for TestEngineAddCases: shape, dtype, data
// order and elements' bits, every NaN as one canonical NaN (of two NaN
// operands, which payload the sum keeps depends on the compiler).
func addDesc(t tensor.Tensor) string {
	if t == nil {
		return "nil"
	}
	d := t.(*tensor.Dense)
	bits := rawBits(d)
	switch x := d.Data().(type) {
	case []float64:
		for i, v := range x {
			if v != v {
				bits[i] = 0x7ff8000000000000
			}
		}
	case []float32:
		for i, v := range x {
			if v != v {
				bits[i] = 0x7fc00000
			}
		}
	}
	if bits == nil {
		return fmt.Sprintf("%v %v order=%v data=%v", d.Shape(), d.Dtype(), d.DataOrder(), d.Data())
	}
	return fmt.Sprintf("%v %v order=%v data=%v", d.Shape(), d.Dtype(), d.DataOrder(), bits)
}

// TestEngineAddCases: Engine's and BitwiseEngine's Add against StdEng's on
// the cases easy to get wrong: column-major operands (one or both), an
// incr tensor of another shape, incr NaNs, incr or reuse that is a, a
// that is b (safe and unsafe), a reuse overlapping an operand shifted
// (either way), ints, empty and 0-d tensors, shapes that differ, a lazily
// transposed operand, a view, a masked tensor, a reuse of another dtype,
// reuse with unsafe: the same values (NaNs as NaN), result tensor (which
// of the operands, or a new one), shape, data order and error, a left as
// StdEng leaves it, and no panic where StdEng has none.
func TestEngineAddCases(t *testing.T) {
	nan := func(p uint64) float64 { return math.Float64frombits(0x7ff8000000000000 | p) }
	type mk func() (a, b tensor.Tensor, opts []tensor.FuncOpt, ids []tensor.Tensor)
	cases := map[string]mk{
		"colmajor-a": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}), tensor.AsFortran(nil))
			b := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{10, 20, 30, 40, 50, 60}))
			return a, b, nil, []tensor.Tensor{a, b}
		},
		"colmajor-both": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}), tensor.AsFortran(nil))
			b := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{10, 20, 30, 40, 50, 60}), tensor.AsFortran(nil))
			return a, b, nil, []tensor.Tensor{a, b}
		},
		"incr-other-shape": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))
			b := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{10, 20, 30, 40, 50, 60}))
			d := tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 1, 1, 1, 1, 1}))
			return a, b, []tensor.FuncOpt{tensor.WithIncr(d)}, []tensor.Tensor{a, b, d}
		},
		"incr-nan-payloads": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{nan(1), 1, nan(3)}))
			b := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{nan(2), nan(5), 2}))
			d := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{nan(7), nan(8), nan(9)}))
			return a, b, []tensor.FuncOpt{tensor.WithIncr(d)}, []tensor.Tensor{a, b, d}
		},
		"incr-nan-payloads-f32": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			n32 := func(p uint32) float32 { return math.Float32frombits(0x7fc00000 | p) }
			a := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{n32(1), 1, n32(3)}))
			b := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{n32(2), n32(5), 2}))
			d := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{n32(7), n32(8), n32(9)}))
			return a, b, []tensor.FuncOpt{tensor.WithIncr(d)}, []tensor.Tensor{a, b, d}
		},
		"incr-is-a": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{nan(1), 1, 3}))
			b := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{nan(2), nan(5), 2}))
			return a, b, []tensor.FuncOpt{tensor.WithIncr(a)}, []tensor.Tensor{a, b}
		},
		"a-is-b-unsafe": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{nan(1), 1, 3}))
			return a, a, []tensor.FuncOpt{tensor.UseUnsafe()}, []tensor.Tensor{a}
		},
		"a-is-b": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{nan(1), 1, 3}))
			return a, a, nil, []tensor.Tensor{a}
		},
		"overlap-shift-reuse": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			buf := []float64{1, 2, 3, 4, 5, 6, 7}
			a := tensor.New(tensor.WithShape(6), tensor.WithBacking(buf[0:6]))
			b := tensor.New(tensor.WithShape(6), tensor.WithBacking([]float64{10, 20, 30, 40, 50, 60}))
			r := tensor.New(tensor.WithShape(6), tensor.WithBacking(buf[1:7]))
			return a, b, []tensor.FuncOpt{tensor.WithReuse(r)}, []tensor.Tensor{a, b, r}
		},
		"overlap-shift-reuse-back": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			buf := []float64{1, 2, 3, 4, 5, 6, 7}
			a := tensor.New(tensor.WithShape(6), tensor.WithBacking(buf[1:7]))
			b := tensor.New(tensor.WithShape(6), tensor.WithBacking([]float64{10, 20, 30, 40, 50, 60}))
			r := tensor.New(tensor.WithShape(6), tensor.WithBacking(buf[0:6]))
			return a, b, []tensor.FuncOpt{tensor.WithReuse(r)}, []tensor.Tensor{a, b, r}
		},
		"ints": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.WithShape(3), tensor.WithBacking([]int{1, 2, 3}))
			b := tensor.New(tensor.WithShape(3), tensor.WithBacking([]int{1, 2, 3}))
			return a, b, nil, []tensor.Tensor{a, b}
		},
		"empty": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.WithShape(0), tensor.Of(tensor.Float64))
			b := tensor.New(tensor.WithShape(0), tensor.Of(tensor.Float64))
			return a, b, nil, []tensor.Tensor{a, b}
		},
		"scalar0d": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.FromScalar(nan(3)))
			b := tensor.New(tensor.FromScalar(nan(4)))
			return a, b, nil, []tensor.Tensor{a, b}
		},
		"scalar0d-unsafe": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.FromScalar(1.5))
			b := tensor.New(tensor.FromScalar(2.5))
			return a, b, []tensor.FuncOpt{tensor.UseUnsafe()}, []tensor.Tensor{a, b}
		},
		"shape-mismatch-same-size": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))
			b := tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))
			return a, b, nil, []tensor.Tensor{a, b}
		},
		"transposed": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))
			a.T()
			b := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{10, 20, 30, 40, 50, 60}))
			return a, b, nil, []tensor.Tensor{a, b}
		},
		"view": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			x := tensor.New(tensor.WithShape(4, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
			v, _ := x.Slice(tensor.S(1, 3))
			b := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{10, 20, 30, 40, 50, 60}))
			return v, b, []tensor.FuncOpt{tensor.UseUnsafe()}, []tensor.Tensor{v, b}
		},
		"masked": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3}, []bool{false, true, false}))
			b := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{10, 20, 30}))
			return a, b, nil, []tensor.Tensor{a, b}
		},
		"reuse-f32-for-f64": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3}))
			b := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{10, 20, 30}))
			r := tensor.New(tensor.WithShape(3), tensor.Of(tensor.Float32))
			return a, b, []tensor.FuncOpt{tensor.WithReuse(r)}, []tensor.Tensor{a, b, r}
		},
		"reuse-and-unsafe": func() (tensor.Tensor, tensor.Tensor, []tensor.FuncOpt, []tensor.Tensor) {
			a := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3}))
			b := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{10, 20, 30}))
			r := tensor.New(tensor.WithShape(3), tensor.Of(tensor.Float64))
			return a, b, []tensor.FuncOpt{tensor.WithReuse(r), tensor.UseUnsafe()}, []tensor.Tensor{a, b, r}
		},
	}
	for name, c := range cases {
		for _, e := range []tensor.Engine{nn.Engine{}, nn.BitwiseEngine{}} {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s %T: panic %v", name, e, r)
					}
				}()
				var want, got tensor.Tensor
				var werr, gerr error
				var wi, gi = -1, -1
				var wa, ga string
				func() {
					defer func() {
						if r := recover(); r != nil {
							werr = fmt.Errorf("panic %v", r)
						}
					}()
					a, b, opts, ids := c()
					want, werr = tensor.StdEng{}.Add(a, b, opts...)
					for i, x := range ids {
						if x == want {
							wi = i
						}
					}
					wa = addDesc(a)
				}()
				func() {
					defer func() {
						if r := recover(); r != nil {
							if werr == nil || !strings.HasPrefix(werr.Error(), "panic") {
								t.Errorf("%s %T: panic %v where StdEng has none", name, e, r)
							}
							gerr = fmt.Errorf("panic %v", r)
						}
					}()
					a, b, opts, ids := c()
					got, gerr = e.(tensor.Adder).Add(a, b, opts...)
					for i, x := range ids {
						if x == got {
							gi = i
						}
					}
					ga = addDesc(a)
				}()
				if (werr == nil) != (gerr == nil) || werr == nil && (addDesc(want) != addDesc(got) || wi != gi || wa != ga) {
					t.Errorf("%s %T:\n got  %s id %d err %v a %s\n want %s id %d err %v a %s", name, e, addDesc(got), gi, gerr, ga, addDesc(want), wi, werr, wa)
				}
			}()
		}
	}
}
