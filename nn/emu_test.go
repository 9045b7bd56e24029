//go:build cgo && linux && amd64

package nn

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/cuda/emu"
	et "github.com/gops-dev/gops/internal/cuda/emu/emutest"
	"gorgonia.org/tensor"
)

// The emulation tests of nn's kernels (internal/cuda/kernels/nn/*.cu, internal/cuda/emu):
// each kernel, named by its PTX entry, runs with the host code's launch
// (nn/*_cuda.go: the same work items, arguments and host-built tables) on
// fixed and random cases, empty ones included, in every order and grid of
// emutest.Configs, and is compared with the Go kernel: bitwise where the
// kernel's comment says so, else within et.Tol (exp, log, erf: the C
// library's against Go's) or looseTol (the Go kernel sums in vector lanes
// or rounds to T in between; the CUDA kernel sums in double).

var nnRan et.Ran

func TestEmulatedKernels(t *testing.T) {
	t.Run("activation", func(t *testing.T) { emuActivation[float32](t); emuActivation[float64](t) })
	t.Run("conv", func(t *testing.T) { emuConv[float32](t); emuConv[float64](t) })
	t.Run("dropout", func(t *testing.T) { emuDropout[float32](t); emuDropout[float64](t) })
	t.Run("gridsample", emuGridSample)
	t.Run("interp", func(t *testing.T) { emuInterp[float32](t); emuInterp[float64](t) })
	t.Run("layout", func(t *testing.T) { emuLayout[float32](t); emuLayout[float64](t) })
	t.Run("loss", func(t *testing.T) { emuLoss[float32](t); emuLoss[float64](t) })
	t.Run("norm", func(t *testing.T) { emuNorm[float32](t); emuNorm[float64](t) })
	t.Run("pool", func(t *testing.T) { emuPool[float32](t); emuPool[float64](t) })
	t.Run("softmax", func(t *testing.T) { emuSoftmax[float32](t); emuSoftmax[float64](t) })
	nnRan.Check(t, "nn")
}

// looseTol is the tolerance of the kernels that sum in double where the Go
// kernel sums in T across vector lanes, rounds in between or fuses a
// multiply-add (rows, rows_grad, rows_invstd, channel_affine, channel_dot,
// group_stats, group_grad_x, softmax_rows, softmax_grad): 4e-6 relative for float32, 3e-14 for
// float64 (measured at most 6.4e-7 and 3.9e-15).
// looseFloor is Equal's floor for the looseTol kernels: their outputs
// are sums of terms of both signs of scale about 1 to 3 (inputs
// 3·N(0, 1)), so a result near 0 carries the terms' rounding, not its
// own: below 1 the difference is measured against 1. The smallest floors
// that pass: 0.16 (softmax_grad, float32), 0.041 (softmax_grad, float64),
// 0.013 (norm_channel_affine), 0.0034 (norm_rows_grad); 0 for norm_rows,
// norm_rows_invstd, norm_channel_dot and softmax_rows.
const looseFloor = 1.0

func looseTol[T ad.Float]() float64 {
	if et.Sfx[T]() == "_f32" {
		return 4e-6
	}
	return 3e-14
}

// emuIn is random data with the special values: NaN, ±Inf, ±0, large.
func emuIn[T ad.Float](r *rand.Rand, n int, special bool) []T {
	x := make([]T, n)
	for i := range x {
		x[i] = T(r.NormFloat64() * 3)
		if special {
			switch v, k := et.Special[T](r, 16); {
			case k < 4:
				x[i] = v
			case k == 4:
				x[i] = T(r.NormFloat64() * 80)
			}
		}
	}
	return x
}

// goKernel runs a Go kernel into a zeroed output of n elements (ints:
// an Int output), as ad does.
func goKernel[T ad.Float](t *testing.T, k func(ad.Tensor[T], []ad.Tensor[T]) error, n int, ints bool, in ...ad.Tensor[T]) ad.Tensor[T] {
	t.Helper()
	out := ad.Tensor[T]{Shape: tensor.Shape{n}, Data: make([]T, n)}
	if ints {
		out.Data, out.Ints = nil, make([]int, n)
	}
	if err := k(out, in); err != nil {
		t.Fatal(err)
	}
	return out
}

func data[T ad.Float](x []T) ad.Tensor[T] { return ad.Tensor[T]{Shape: tensor.Shape{len(x)}, Data: x} }

func emuOut[E any](t *testing.T, n int) (*emu.Buffer, []emu.Region) {
	b := et.Out[E](t, n)
	return b, []emu.Region{et.Region[E](b)}
}

func emuCheck[T ad.Float](b *emu.Buffer, want []T, tol, floor float64) func() error {
	return func() error { return et.Equal(emu.Slice[T](b), want, tol, floor) }
}

var emuSizes = []int{0, 1, 7, 256, 1001}

func emuActivation[T ad.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	r := rand.New(rand.NewPCG(21, 22))
	type act struct {
		name string
		k    func(ad.Tensor[T], []ad.Tensor[T]) error
		args func(x, y emu.Ptr, n int) []any
		tol  float64
	}
	var acts []act
	for _, slope := range []float64{0.01, 0, -0.3} {
		acts = append(acts,
			act{"act_leaky", leakyKernel[T](slope), func(x, y emu.Ptr, n int) []any { return []any{x, y, T(slope), slope == 0, n} }, 0},
			act{"act_leaky_slope", slopeKernel[T](slope), func(x, y emu.Ptr, n int) []any { return []any{x, y, T(slope), n} }, 0})
	}
	for _, beta := range []float64{1, 0.25} {
		for order := 0; order < 3; order++ {
			acts = append(acts, act{"loss_smoothl1", smoothL1Kernel[T](beta, order), func(x, y emu.Ptr, n int) []any { return []any{x, y, T(beta), order, n} }, 0})
		}
	}
	// Equal's floor is 0 for these (emuCheck below): one rounding of one
	// function value, relative at any magnitude, so a tiny result (sigmoid
	// of −40) is checked as closely as a large one.
	acts = append(acts,
		act{"act_sigmoid", sigmoidKernel[T], func(x, y emu.Ptr, n int) []any { return []any{x, y, n} }, et.Tol[T]()},
		act{"act_tanh", tanhKernel[T], func(x, y emu.Ptr, n int) []any { return []any{x, y, n} }, et.Tol[T]()},
		act{"act_erf", erfKernel[T], func(x, y emu.Ptr, n int) []any { return []any{x, y, n} }, et.Tol[T]()},
		act{"loss_softplus", softplusKernel[T], func(x, y emu.Ptr, n int) []any { return []any{x, y, n} }, et.Tol[T]()})
	byName := map[string][]act{}
	var names []string
	for _, a := range acts {
		if byName[a.name] == nil {
			names = append(names, a.name)
		}
		byName[a.name] = append(byName[a.name], a)
	}
	for _, name := range names {
		nnRan.Kernel(t, name+sfx, func(t *testing.T) {
			for _, a := range byName[name] {
				for _, n := range emuSizes {
					x := emuIn[T](r, n, true)
					want := goKernel(t, a.k, n, false, data(x)).Data
					o, reg := emuOut[T](t, n)
					et.Run(t, et.Case{Name: name + sfx, N: n, Args: a.args(et.Up(t, x), o.Ptr(), n), Outs: reg, Check: emuCheck(o, want, a.tol, 0)})
				}
			}
		})
	}
	// LeakyReLU's gradient, of two inputs x and u (both with the special
	// values), bitwise.
	ru := rand.New(rand.NewPCG(26, 27))
	nnRan.Kernel(t, "act_leaky_grad"+sfx, func(t *testing.T) {
		for _, slope := range []float64{0.01, 0, -0.3} {
			for _, n := range emuSizes {
				x, u := emuIn[T](ru, n, true), emuIn[T](ru, n, true)
				want := goKernel(t, leakyGradKernel[T](slope), n, false, data(x), data(u)).Data
				o, reg := emuOut[T](t, n)
				args := []any{et.Up(t, x), et.Up(t, u), o.Ptr(), T(slope), n}
				et.Run(t, et.Case{Name: "act_leaky_grad" + sfx, N: n, Args: args, Outs: reg, Check: emuCheck(o, want, 0, 0)})
			}
		}
	})
}

var emuConvGeoms = []cpu.ConvGeom{
	{N: 1, C: 1, H: 1, W: 1, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1},
	{N: 1, C: 2, H: 5, W: 7, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
	{N: 1, C: 3, H: 9, W: 6, KH: 2, KW: 3, SH: 2, SW: 3, PH: 2, PW: 0, DH: 2, DW: 1},
	{N: 1, C: 1, H: 4, W: 4, KH: 5, KW: 5, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
}

func emuConv[T ad.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	r := rand.New(rand.NewPCG(23, 24))
	args := func(g *cpu.ConvGeom, a, b emu.Ptr) []any {
		return []any{a, b, g.C, g.H, g.W, g.KH, g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW, g.HO, g.WO}
	}
	geoms := make([]cpu.ConvGeom, len(emuConvGeoms))
	for i, g := range emuConvGeoms {
		g.HO = max(cpu.PoolOutSize(g.H, g.KH, g.SH, g.PH, g.DH, false), 0)
		g.WO = max(cpu.PoolOutSize(g.W, g.KW, g.SW, g.PW, g.DW, false), 0)
		g.Cout, g.Groups = 1, 1
		geoms[i] = g
	}
	nnRan.Kernel(t, "conv_im2col"+sfx, func(t *testing.T) {
		for _, g := range geoms {
			x := emuIn[T](r, g.C*g.H*g.W, true)
			n := g.C * g.K() * g.L()
			want := make([]T, n)
			cpu.Im2col(&g, x, want)
			o, reg := emuOut[T](t, n)
			et.Run(t, et.Case{Name: "conv_im2col" + sfx, N: n, Args: args(&g, et.Up(t, x), o.Ptr()), Outs: reg, Check: emuCheck(o, want, 0, 0)})
		}
	})
	nnRan.Kernel(t, "conv_col2im"+sfx, func(t *testing.T) {
		for _, g := range geoms {
			cols := emuIn[T](r, g.C*g.K()*g.L(), false)
			n := g.C * g.H * g.W
			want := make([]T, n)
			cpu.Col2im(&g, cols, want)
			o, reg := emuOut[T](t, n)
			et.Run(t, et.Case{Name: "conv_col2im" + sfx, N: n, Args: args(&g, et.Up(t, cols), o.Ptr()), Outs: reg, Check: emuCheck(o, want, 0, 0)})
		}
	})
}

func emuDropout[T ad.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	nnRan.Kernel(t, "dropout_mask"+sfx, func(t *testing.T) {
		for _, p := range []float64{0, 0.3, 1} {
			for _, n := range emuSizes {
				var runs atomic.Uint64
				want := goKernel(t, dropoutKernel[T](p, 7, &runs), n, false).Data
				// The host code's draws (dropout_cuda.go): run 0 of seed 7.
				rr := rand.New(rand.NewPCG(7, 0))
				kept := make([]uint8, n)
				for i := range kept {
					if rr.Float64() >= p {
						kept[i] = 1
					}
				}
				keep := 0.0
				if p < 1 {
					keep = 1 / (1 - p)
				}
				o, reg := emuOut[T](t, n)
				et.Run(t, et.Case{Name: "dropout_mask" + sfx, N: n, Args: []any{et.Up(t, kept), o.Ptr(), T(keep), n}, Outs: reg, Check: emuCheck(o, want, 0, 0)})
			}
		}
	})
}

func emuInterp[T ad.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	r := rand.New(rand.NewPCG(25, 26))
	var geoms []cpu.InterpGeom
	for _, s := range [][5]int{{1, 1, 1, 1, 1}, {2, 3, 4, 7, 9}, {3, 8, 6, 3, 4}, {0, 4, 4, 8, 8}, {1, 5, 5, 5, 5}} {
		planes, h, w, ho, wo := s[0], s[1], s[2], s[3], s[4]
		geoms = append(geoms,
			cpu.InterpGeom{Planes: planes, H: h, W: w, Rows: cpu.NearestAxis(h, ho, 0), Cols: cpu.NearestAxis(w, wo, 0), Nearest: true},
			cpu.InterpGeom{Planes: planes, H: h, W: w, Rows: cpu.LinearAxis(h, ho, 0, false), Cols: cpu.LinearAxis(w, wo, 0, false)},
			cpu.InterpGeom{Planes: planes, H: h, W: w, Rows: cpu.LinearAxis(h, ho, 0, true), Cols: cpu.LinearAxis(w, wo, 0, true)})
	}
	for _, fwd := range []bool{true, false} {
		name := "interp_transpose" + sfx
		if fwd {
			name = "interp_forward" + sfx
		}
		nnRan.Kernel(t, name, func(t *testing.T) {
			for _, g := range geoms {
				ho, wo := len(g.Rows.I0), len(g.Cols.I0)
				inN, outN := g.Planes*g.H*g.W, g.Planes*ho*wo
				if !fwd {
					inN, outN = outN, inN
				}
				x := emuIn[T](r, inN, false)
				want := goKernel(t, interpKernel[T](&g, fwd), outN, false, data(x)).Data
				o, reg := emuOut[T](t, outN)
				et.Run(t, et.Case{Name: name, N: outN, Outs: reg, Check: emuCheck(o, want, 0, 0),
					Args: []any{et.Up(t, x), o.Ptr(), g.Planes, g.H, g.W, ho, wo, et.Up(t, interpTable(&g.Rows, g.H)), et.Up(t, g.Rows.L),
						et.Up(t, interpTable(&g.Cols, g.W)), et.Up(t, g.Cols.L), g.Nearest}})
			}
		})
	}
}

func emuLayout[T ad.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	r := rand.New(rand.NewPCG(27, 28))
	shapes := []tensor.Shape{{0, 3}, {2, 3, 4}, {5, 1, 7}, {3, 300}}
	nnRan.Kernel(t, "layout_concat_copy"+sfx, func(t *testing.T) {
		for _, s := range shapes {
			for axis := range s {
				// three inputs of lengths 1, s[axis], 2 along axis
				var ins []ad.Tensor[T]
				outS := s.Clone()
				outS[axis] = 0
				for _, l := range []int{1, s[axis], 2} {
					is := s.Clone()
					is[axis] = l
					ins = append(ins, ad.Tensor[T]{Shape: is, Data: emuIn[T](r, is.TotalSize(), true)})
					outS[axis] += l
				}
				want := goKernel(t, concatKernel[T](outS, axis), outS.TotalSize(), false, ins...).Data
				outer, inner := blocks(outS, axis)
				row, off := outS[axis]*inner, 0
				o, reg := emuOut[T](t, len(want))
				var cases []et.Case
				for _, x := range ins {
					n := x.Shape[axis] * inner
					cases = append(cases, et.Case{Name: "layout_concat_copy" + sfx, N: outer * n, Outs: reg,
						Args: []any{et.Up(t, x.Data), o.Ptr(), outer, n, row, off}})
					off += n
				}
				// Each launch writes its own blocks: run them all per
				// order, then compare.
				for _, cfg := range et.Configs {
					o.Fill()
					for _, c := range cases {
						if err := emu.Launch(c.Name, c.N, cfg, c.Args...); err != nil {
							t.Fatal(err)
						}
					}
					if err := et.Equal(emu.Slice[T](o), want, 0, 0); err != nil {
						t.Fatalf("%v axis %d, %+v: %v", outS, axis, cfg, err)
					}
				}
				for _, c := range cases {
					if c.N > 0 {
						if _, err := emu.CheckExclusive(c.Name, c.N, emu.Config{GridMax: 2}, c.Outs, c.Args...); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	})
	for _, fwd := range []bool{true, false} {
		name := "layout_narrow_embed" + sfx
		if fwd {
			name = "layout_narrow" + sfx
		}
		nnRan.Kernel(t, name, func(t *testing.T) {
			for _, s := range shapes {
				for axis := range s {
					for _, se := range [][2]int{{0, s[axis]}, {s[axis] / 2, s[axis] - s[axis]/2}, {s[axis] - 1, 1}} {
						start, length := se[0], se[1]
						if start < 0 || length < 0 {
							continue
						}
						outer, inner := blocks(s, axis)
						n, full := length*inner, s[axis]*inner
						inN, outN := outer*full, outer*n
						if !fwd {
							inN, outN = outN, inN
						}
						x := emuIn[T](r, inN, true)
						want := goKernel(t, narrowKernel[T](outer, inner, s[axis], start, length, fwd), outN, false, data(x)).Data
						o, reg := emuOut[T](t, outN)
						et.Run(t, et.Case{Name: name, N: outN, Outs: reg, Check: emuCheck(o, want, 0, 0),
							Args: []any{et.Up(t, x), o.Ptr(), outer, n, full, start * inner}})
					}
				}
			}
		})
	}
	nnRan.Kernel(t, "layout_fill"+sfx, func(t *testing.T) {
		for _, v := range []float64{0, -1.5, math.Inf(-1), 1e300} {
			for _, n := range emuSizes {
				want := make([]T, n) // ad.EmptyResult's fill on the host
				for i := range want {
					want[i] = T(v)
				}
				o, reg := emuOut[T](t, n)
				et.Run(t, et.Case{Name: "layout_fill" + sfx, N: n, Outs: reg, Check: emuCheck(o, want, 0, 0), Args: []any{o.Ptr(), T(v), n}})
			}
		}
	})
}

func emuLoss[T ad.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	r := rand.New(rand.NewPCG(29, 30))
	type pc struct{ n, c, ignore int }
	cases := []pc{{0, 3, -100}, {1, 1, -100}, {7, 5, -100}, {300, 10, 3}, {9, 4, 0}}
	targets := func(p pc) []int {
		ts := make([]int, p.n)
		for i := range ts {
			ts[i] = r.IntN(p.c)
			if r.IntN(5) == 0 {
				ts[i] = p.ignore
			}
		}
		return ts
	}
	ints := func(ts []int) ad.Tensor[T] { return ad.Tensor[T]{Shape: tensor.Shape{len(ts)}, Ints: ts} }
	nnRan.Kernel(t, "loss_pick"+sfx, func(t *testing.T) {
		for _, p := range cases {
			for _, vec := range []bool{false, true} {
				ts := targets(p)
				xn := p.n * p.c
				if vec {
					xn = p.c
				}
				x := emuIn[T](r, xn, true)
				want := goKernel(t, pickKernel[T](vec, p.c, p.ignore, true), p.n, false, data(x), ints(ts)).Data
				o, reg := emuOut[T](t, p.n)
				et.Run(t, et.Case{Name: "loss_pick" + sfx, N: p.n, Outs: reg, Check: emuCheck(o, want, 0, 0),
					Args: []any{et.Up(t, x), et.Up(t, ts), o.Ptr(), p.n, p.c, p.ignore, vec}})
			}
		}
	})
	for _, vec := range []bool{false, true} {
		name := "loss_scatter" + sfx
		if vec {
			name = "loss_scatter_vec" + sfx
		}
		nnRan.Kernel(t, name, func(t *testing.T) {
			for _, p := range cases {
				ts := targets(p)
				g := emuIn[T](r, p.n, true)
				outN := p.n * p.c
				if vec {
					outN = p.c
				}
				want := goKernel(t, pickKernel[T](vec, p.c, p.ignore, false), outN, false, data(g), ints(ts)).Data
				o, reg := emuOut[T](t, outN)
				et.Run(t, et.Case{Name: name, N: outN, Outs: reg, Check: emuCheck(o, want, 0, 0),
					Args: []any{et.Up(t, g), et.Up(t, ts), o.Ptr(), p.n, p.c, p.ignore}})
			}
		})
	}
	// CrossEntropy's row ops (lse.go): rows × n with an ignored row in
	// five; the x of every other case holds NaN, ±Inf and large values, so
	// LogSumExp's and LogSumExpGrad's non-finite rows are covered. The last
	// case's logits are shifted by 1e8 (float32) or 1e17 (float64), where
	// lse's rounding takes log Σ exp(x − max) and the gradients must
	// divide by their row's sum.
	rowCases := []pc{{0, 3, -100}, {1, 1, -100}, {3, 5, 1}, {7, 17, -100}, {4, 700, 0}, {6, 9, -100}, {5, 4, -100}}
	rowIn := func(i int, p pc) (x, lse []T) {
		x = emuIn[T](r, p.n*p.c, i%2 == 1 && i < len(rowCases)-1)
		if i == len(rowCases)-1 {
			shift := 1e17
			if sfx == "_f32" {
				shift = 1e8
			}
			for k := range x {
				x[k] += T(shift)
			}
		}
		return x, goKernel(t, lseKernel[T](p.n, p.c), p.n, false, data(x)).Data
	}
	nnRan.Kernel(t, "loss_lse"+sfx, func(t *testing.T) {
		for i, p := range rowCases {
			x, want := rowIn(i, p)
			o, reg := emuOut[T](t, p.n)
			et.Run(t, et.Case{Name: "loss_lse" + sfx, N: p.n, Outs: reg, Check: emuCheck(o, want, looseTol[T](), looseFloor),
				Args: []any{et.Up(t, x), o.Ptr(), p.n, p.c}})
		}
	})
	nnRan.Kernel(t, "loss_nll"+sfx, func(t *testing.T) {
		for i, p := range rowCases {
			x, _ := rowIn(i, p)
			ts := targets(p)
			want := goKernel(t, nllKernel[T](p.c, p.ignore), p.n, false, data(x), ints(ts)).Data
			o, reg := emuOut[T](t, p.n)
			et.Run(t, et.Case{Name: "loss_nll" + sfx, N: p.n, Outs: reg, Check: emuCheck(o, want, looseTol[T](), looseFloor),
				Args: []any{et.Up(t, x), et.Up(t, ts), o.Ptr(), p.n, p.c, p.ignore}})
		}
	})
	for _, target := range []bool{false, true} {
		name := "loss_lse_grad" + sfx
		if target {
			name = "loss_nll_grad" + sfx
		}
		nnRan.Kernel(t, name, func(t *testing.T) {
			for i, p := range rowCases {
				x, lse := rowIn(i, p)
				u := emuIn[T](r, p.n, false)
				o, reg := emuOut[T](t, p.n*p.c)
				var want []T
				var args []any
				if target {
					ts := targets(p)
					want = goKernel(t, lseGradKernel[T](p.c, &lseTarget{p.ignore}), p.n*p.c, false, data(x), data(u), ints(ts)).Data
					args = []any{et.Up(t, x), et.Up(t, u), et.Up(t, ts), o.Ptr(), p.n, p.c, p.ignore}
				} else {
					want = goKernel(t, lseGradKernel[T](p.c, nil), p.n*p.c, false, data(x), data(lse), data(u)).Data
					args = []any{et.Up(t, x), et.Up(t, lse), et.Up(t, u), o.Ptr(), p.n, p.c}
				}
				et.Run(t, et.Case{Name: name, N: p.n, Outs: reg, Check: emuCheck(o, want, looseTol[T](), looseFloor), Args: args})
			}
		})
	}
	nnRan.Kernel(t, "loss_mask"+sfx, func(t *testing.T) {
		for _, p := range rowCases {
			v, ts := emuIn[T](r, p.n, true), targets(p)
			want := goKernel(t, maskKernel[T](p.ignore), p.n, false, data(v), ints(ts)).Data
			o, reg := emuOut[T](t, p.n)
			et.Run(t, et.Case{Name: "loss_mask" + sfx, N: p.n, Outs: reg, Check: emuCheck(o, want, 0, 0),
				Args: []any{et.Up(t, v), et.Up(t, ts), o.Ptr(), p.n, p.ignore}})
		}
	})
}

// emuNCL are [N, C, L] sizes of the per-channel kernels.
var emuNCL = [][3]int{{0, 3, 4}, {1, 1, 1}, {2, 3, 5}, {3, 7, 33}, {4, 2, 1}}

func emuNorm[T ad.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	r := rand.New(rand.NewPCG(31, 32))
	nnRan.Kernel(t, "norm_bias_add"+sfx, func(t *testing.T) {
		for _, s := range emuNCL {
			n, c, l := s[0], s[1], s[2]
			x, b := emuIn[T](r, n*c*l, true), emuIn[T](r, c, false)
			want := make([]T, n*c*l) // biasAddKernel's
			cpu.AddChannelBias(x, b, want, n, c, l)
			o, reg := emuOut[T](t, n*c*l)
			et.Run(t, et.Case{Name: "norm_bias_add" + sfx, N: n * c * l, Outs: reg, Check: emuCheck(o, want, 0, 0),
				Args: []any{et.Up(t, x), et.Up(t, b), o.Ptr(), n, c, l}})
			// Conv2d's bias adds in place (conv_cuda.go): out is x.
			io := emu.Upload(x)
			t.Cleanup(io.Free)
			et.Run(t, et.Case{Name: "norm_bias_add" + sfx, N: n * c * l, Shared: true, Outs: []emu.Region{et.Region[T](io)},
				Init: func() { copy(emu.Slice[T](io), x) }, Check: emuCheck(io, want, 0, 0),
				Args: []any{io.Ptr(), et.Up(t, b), io.Ptr(), n, c, l}})
		}
	})
	nnRan.Kernel(t, "norm_channel_sum"+sfx, func(t *testing.T) {
		for _, s := range emuNCL {
			n, c, l := s[0], s[1], s[2]
			x := emuIn[T](r, n*c*l, false)
			want := make([]T, c)
			cpu.ChannelSum(x, want, n, c, l)
			o, reg := emuOut[T](t, c)
			et.Run(t, et.Case{Name: "norm_channel_sum" + sfx, N: c, Outs: reg, Check: emuCheck(o, want, 0, 0), Args: []any{et.Up(t, x), o.Ptr(), n, c, l}})
		}
	})
	nnRan.Kernel(t, "norm_channel_broadcast"+sfx, func(t *testing.T) {
		for _, s := range emuNCL {
			n, c, l := s[0], s[1], s[2]
			x := emuIn[T](r, c, true)
			want := make([]T, n*c*l)
			cpu.ChannelBroadcast(x, want, n, c, l)
			o, reg := emuOut[T](t, n*c*l)
			et.Run(t, et.Case{Name: "norm_channel_broadcast" + sfx, N: n * c * l, Outs: reg, Check: emuCheck(o, want, 0, 0), Args: []any{et.Up(t, x), o.Ptr(), n, c, l}})
		}
	})
	nnRan.Kernel(t, "norm_channel_mean"+sfx, func(t *testing.T) {
		for _, s := range emuNCL {
			n, c, l := s[0], s[1], s[2]
			x := emuIn[T](r, n*c*l, false)
			for _, withStats := range []bool{false, true} {
				// The Go kernel's running statistics, and the host code's
				// fold of the kernel's (norm_cuda.go), from the same start.
				newStats := func() *runningStats {
					return &runningStats{mean: tensor.New(tensor.WithShape(c), tensor.WithBacking(make([]T, c))), variance: tensor.New(tensor.WithShape(c), tensor.WithBacking(make([]T, c))), momentum: 0.1}
				}
				var cpuStats *runningStats
				if withStats {
					cpuStats = newStats()
				}
				want := goKernel(t, channelMeanKernel[T](n, c, l, cpuStats), c, false, data(x)).Data
				o, reg := emuOut[T](t, c)
				var st emu.Ptr
				var stBuf *emu.Buffer
				if withStats {
					stBuf = et.Out[float64](t, 2*c)
					st = stBuf.Ptr()
				}
				et.Run(t, et.Case{Name: "norm_channel_mean" + sfx, N: c, Outs: reg, Args: []any{et.Up(t, x), o.Ptr(), st, n, c, l},
					Check: func() error {
						if err := et.Equal(emu.Slice[T](o), want, 0, 0); err != nil || !withStats {
							return err
						}
						got := newStats()
						s := emu.Slice[float64](stBuf)
						for ci := 0; ci < c; ci++ {
							got.update(ci, s[2*ci], s[2*ci+1])
						}
						if err := et.Equal(got.mean.Data().([]T), cpuStats.mean.Data().([]T), 0, 0); err != nil {
							return err
						}
						return et.Equal(got.variance.Data().([]T), cpuStats.variance.Data().([]T), 0, 0)
					}})
			}
		}
	})
	type rg struct{ rows, n int }
	rgs := []rg{{0, 4}, {1, 1}, {3, 17}, {5, 300}}
	for _, kind := range []string{"norm_rows", "norm_rows_grad", "norm_rows_invstd"} {
		nnRan.Kernel(t, kind+sfx, func(t *testing.T) {
			for _, s := range rgs {
				g := rowGeom{s: tensor.Shape{s.rows, s.n}, rows: s.rows, n: s.n, eps: 1e-5}
				x, u := emuIn[T](r, s.rows*s.n, false), emuIn[T](r, s.rows*s.n, false)
				var want []T
				var args []any
				outN := s.rows * s.n
				if kind == "norm_rows_invstd" {
					outN = s.rows
				}
				o, reg := emuOut[T](t, outN)
				switch kind {
				case "norm_rows":
					want = goKernel(t, rowNormKernel[T](g), outN, false, data(x)).Data
					args = []any{et.Up(t, x), o.Ptr(), s.rows, s.n, g.eps}
				case "norm_rows_grad":
					want = goKernel(t, rowNormGradKernel[T](g), outN, false, data(x), data(u)).Data
					args = []any{et.Up(t, x), et.Up(t, u), o.Ptr(), s.rows, s.n, g.eps}
				default:
					want = goKernel(t, rowInvStdKernel[T](g), outN, false, data(x)).Data
					args = []any{et.Up(t, x), o.Ptr(), s.rows, s.n, g.eps}
				}
				et.Run(t, et.Case{Name: kind + sfx, N: s.rows, Outs: reg, Check: emuCheck(o, want, looseTol[T](), looseFloor), Args: args})
			}
		})
	}
	nnRan.Kernel(t, "norm_channel_affine"+sfx, func(t *testing.T) {
		for _, s := range emuNCL {
			g := chanGeom{s[0], s[1], s[2]}
			x, w, b := emuIn[T](r, g.outer*g.c*g.inner, false), emuIn[T](r, g.c, false), emuIn[T](r, g.c, false)
			for _, wb := range [][2]bool{{true, true}, {true, false}, {false, true}, {false, false}} {
				in := []ad.Tensor[T]{data(x)}
				var wp, bp emu.Ptr
				if wb[0] {
					in, wp = append(in, data(w)), et.Up(t, w)
				}
				if wb[1] {
					in, bp = append(in, data(b)), et.Up(t, b)
				}
				n := g.outer * g.c * g.inner
				want := goKernel(t, channelAffineKernel[T](g, wb[0], wb[1]), n, false, in...).Data
				o, reg := emuOut[T](t, n)
				et.Run(t, et.Case{Name: "norm_channel_affine" + sfx, N: n, Outs: reg, Check: emuCheck(o, want, looseTol[T](), looseFloor),
					Args: []any{et.Up(t, x), wp, bp, o.Ptr(), g.outer, g.c, g.inner}})
			}
		}
	})
	nnRan.Kernel(t, "norm_channel_dot"+sfx, func(t *testing.T) {
		for _, s := range emuNCL {
			g := chanGeom{s[0], s[1], s[2]}
			u, y := emuIn[T](r, g.outer*g.c*g.inner, false), emuIn[T](r, g.outer*g.c*g.inner, false)
			for _, dot := range []bool{true, false} {
				in := []ad.Tensor[T]{data(u)}
				var yp emu.Ptr
				if dot {
					in, yp = append(in, data(y)), et.Up(t, y)
				}
				want := goKernel(t, channelReduceKernel[T](g, dot), g.c, false, in...).Data
				o, reg := emuOut[T](t, g.c)
				et.Run(t, et.Case{Name: "norm_channel_dot" + sfx, N: g.c, Outs: reg, Check: emuCheck(o, want, looseTol[T](), looseFloor),
					Args: []any{et.Up(t, u), yp, o.Ptr(), g.outer, g.c, g.inner}})
			}
		}
	})
	// GroupNorm's statistics and the gradients from them, on [outer, c,
	// inner] in groups: the statistics' slots compared as float64, the
	// gradients given the Go kernel's statistics.
	type gc struct{ outer, c, inner, groups int }
	gcs := []gc{{0, 4, 3, 2}, {1, 2, 1, 1}, {2, 6, 5, 3}, {3, 4, 17, 2}, {2, 8, 16, 4}}
	geoms := func(s gc) (rowGeom, chanGeom) {
		rows := s.outer * s.groups
		return rowGeom{s: tensor.Shape{s.outer, s.c, s.inner}, rows: rows, n: s.c / s.groups * s.inner, eps: 1e-5}, chanGeom{s.outer, s.c, s.inner}
	}
	slots := func(p []T) []float64 {
		v := make([]float64, len(p)/2)
		for k := range v {
			v[k] = cpu.StatSlot(p, k)
		}
		return v
	}
	nnRan.Kernel(t, "norm_group_stats"+sfx, func(t *testing.T) {
		for _, s := range gcs {
			rg, cg := geoms(s)
			u, x := emuIn[T](r, s.outer*s.c*s.inner, false), emuIn[T](r, s.outer*s.c*s.inner, false)
			n := statsShape(rg, cg).TotalSize()
			want := slots(goKernel(t, groupNormStatsKernel[T](rg, cg), n, false, data(u), data(x)).Data)
			o, reg := emuOut[T](t, n)
			et.Run(t, et.Case{Name: "norm_group_stats" + sfx, N: rg.rows, Outs: reg,
				Check: func() error { return et.Equal(slots(emu.Slice[T](o)[:n]), want, looseTol[T](), looseFloor) },
				Args:  []any{et.Up(t, u), et.Up(t, x), o.Ptr(), rg.rows, rg.n, cg.inner, rg.eps}})
		}
	})
	nnRan.Kernel(t, "norm_group_grad_x"+sfx, func(t *testing.T) {
		for _, s := range gcs {
			rg, cg := geoms(s)
			u, x, w := emuIn[T](r, s.outer*s.c*s.inner, false), emuIn[T](r, s.outer*s.c*s.inner, false), emuIn[T](r, s.c, false)
			st := goKernel(t, groupNormStatsKernel[T](rg, cg), statsShape(rg, cg).TotalSize(), false, data(u), data(x)).Data
			n := s.outer * s.c * s.inner
			want := goKernel(t, groupNormGradXStatsKernel[T](rg, cg), n, false, data(x), data(u), data(w), data(st)).Data
			o, reg := emuOut[T](t, n)
			et.Run(t, et.Case{Name: "norm_group_grad_x" + sfx, N: rg.rows, Outs: reg, Check: emuCheck(o, want, looseTol[T](), looseFloor),
				Args: []any{et.Up(t, x), et.Up(t, u), et.Up(t, w), et.Up(t, st), o.Ptr(), rg.rows, rg.n, cg.inner, cg.c}})
		}
	})
	nnRan.Kernel(t, "norm_group_stats_total"+sfx, func(t *testing.T) {
		for _, s := range gcs {
			rg, cg := geoms(s)
			u, x := emuIn[T](r, s.outer*s.c*s.inner, false), emuIn[T](r, s.outer*s.c*s.inner, false)
			st := goKernel(t, groupNormStatsKernel[T](rg, cg), statsShape(rg, cg).TotalSize(), false, data(u), data(x)).Data
			for which := range 2 {
				want := goKernel(t, groupNormStatsTotal[T](rg, cg, which), s.c, false, data(u), data(st)).Data
				o, reg := emuOut[T](t, s.c)
				et.Run(t, et.Case{Name: "norm_group_stats_total" + sfx, N: s.c, Outs: reg, Check: emuCheck(o, want, 0, 0),
					Args: []any{et.Up(t, st), o.Ptr(), rg.rows, cg.outer, cg.c, which}})
			}
		}
	})
}

func emuPool[T ad.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	r := rand.New(rand.NewPCG(33, 34))
	// planes, H, W, kernel, stride, pad, dilation, ceil mode
	type pc struct {
		planes, h, w, k, s, p, d int
		ceil                     bool
	}
	var geoms []cpu.Pool2dGeom
	for _, c := range []pc{{1, 1, 1, 1, 1, 0, 1, false}, {2, 5, 7, 3, 2, 1, 1, true}, {3, 8, 6, 2, 2, 0, 2, false}, {0, 4, 4, 2, 2, 0, 1, false}, {2, 6, 5, 3, 1, 1, 1, false}, {1, 5, 5, 2, 3, 1, 1, true}} {
		ho, wo := cpu.PoolOutSize(c.h, c.k, c.s, c.p, c.d, c.ceil), cpu.PoolOutSize(c.w, c.k, c.s, c.p, c.d, c.ceil)
		geoms = append(geoms, cpu.Pool2dGeom{Planes: c.planes, H: c.h, W: c.w, Rows: cpu.NewPoolAxis(c.h, ho, c.k, c.s, c.p, c.d), Cols: cpu.NewPoolAxis(c.w, wo, c.k, c.s, c.p, c.d)})
	}
	geoms = append(geoms, cpu.Pool2dGeom{Planes: 2, H: 7, W: 5, Rows: cpu.NewAdaptiveAxis(7, 3), Cols: cpu.NewAdaptiveAxis(5, 4)})
	tables := func(t *testing.T, g *cpu.Pool2dGeom) (emu.Ptr, emu.Ptr) {
		return et.Up(t, poolTable(&g.Rows, g.H)), et.Up(t, poolTable(&g.Cols, g.W))
	}
	argmax := func(g *cpu.Pool2dGeom, x []T) []int {
		idx := make([]int, g.Planes*g.Rows.Out()*g.Cols.Out())
		cpu.MaxPoolArgmax(g, x, idx)
		return idx
	}
	nnRan.Kernel(t, "pool_max_argmax"+sfx, func(t *testing.T) {
		for _, g := range geoms {
			x := emuIn[T](r, g.Planes*g.H*g.W, true)
			for i := range x {
				if r.IntN(4) == 0 {
					x[i] = T(r.IntN(2)) // ties
				}
			}
			want := argmax(&g, x)
			ho, wo := g.Rows.Out(), g.Cols.Out()
			rt, ct := tables(t, &g)
			o, reg := emuOut[int64](t, len(want))
			et.Run(t, et.Case{Name: "pool_max_argmax" + sfx, N: len(want), Outs: reg,
				Check: func() error { return et.EqualInts(emu.Slice[int64](o), want) },
				Args:  []any{et.Up(t, x), o.Ptr(), g.Planes, g.H, g.W, ho, wo, rt, ct, g.Rows.Step, g.Cols.Step}})
		}
	})
	nnRan.Kernel(t, "pool_max_gather"+sfx, func(t *testing.T) {
		for _, g := range geoms {
			x := emuIn[T](r, g.Planes*g.H*g.W, true)
			idx := argmax(&g, x)
			l := g.Rows.Out() * g.Cols.Out()
			want := make([]T, len(idx))
			cpu.PlaneGather(x, idx, want, g.Planes, g.H*g.W, l)
			o, reg := emuOut[T](t, len(want))
			et.Run(t, et.Case{Name: "pool_max_gather" + sfx, N: len(want), Outs: reg, Check: emuCheck(o, want, 0, 0),
				Args: []any{et.Up(t, x), et.Up(t, idx), o.Ptr(), g.Planes, g.H * g.W, l}})
		}
	})
	nnRan.Kernel(t, "pool_max_scatteradd"+sfx, func(t *testing.T) {
		for _, g := range geoms {
			x := emuIn[T](r, g.Planes*g.H*g.W, false)
			for i := range x {
				x[i] = T(r.IntN(3)) // ties: one input the argmax of several windows
			}
			idx := argmax(&g, x)
			ho, wo := g.Rows.Out(), g.Cols.Out()
			gr := emuIn[T](r, len(idx), false)
			want := make([]T, len(x))
			cpu.PlaneScatterAdd(gr, idx, want, g.Planes, g.H*g.W, ho*wo)
			rt, ct := tables(t, &g)
			o, reg := emuOut[T](t, len(want))
			et.Run(t, et.Case{Name: "pool_max_scatteradd" + sfx, N: len(want), Outs: reg, Check: emuCheck(o, want, 0, 0),
				Args: []any{et.Up(t, gr), et.Up(t, idx), o.Ptr(), g.Planes, g.H, g.W, ho, wo, rt, ct}})
		}
	})
	nnRan.Kernel(t, "pool_max_emptyfill"+sfx, func(t *testing.T) {
		for _, n := range emuSizes {
			idx := make([]int, n)
			for i := range idx {
				idx[i] = r.IntN(3) - 1
			}
			want := goKernel(t, emptyFillKernel[T](n), n, false, ad.Tensor[T]{}, ad.Tensor[T]{Ints: idx}).Data
			o, reg := emuOut[T](t, n)
			et.Run(t, et.Case{Name: "pool_max_emptyfill" + sfx, N: n, Outs: reg, Check: emuCheck(o, want, 0, 0), Args: []any{et.Up(t, idx), o.Ptr(), n}})
		}
	})
	divs := []cpu.AvgDivisor{{}, {IncludePad: true}, {Override: 3}}
	for _, fwd := range []bool{true, false} {
		name := "pool_avg_transpose" + sfx
		if fwd {
			name = "pool_avg" + sfx
		}
		nnRan.Kernel(t, name, func(t *testing.T) {
			for _, g := range geoms {
				if g.Rows.Step != 1 || g.Cols.Step != 1 {
					continue // average pooling has no dilation (cpu.window)
				}
				for _, d := range divs {
					ho, wo := g.Rows.Out(), g.Cols.Out()
					inN, outN := g.Planes*g.H*g.W, g.Planes*ho*wo
					if !fwd {
						inN, outN = outN, inN
					}
					x := emuIn[T](r, inN, false)
					want := make([]T, outN)
					if fwd {
						cpu.AvgPool(&g, d, x, want)
					} else {
						cpu.AvgPoolT(&g, d, x, want)
					}
					rt, ct := tables(t, &g)
					o, reg := emuOut[T](t, outN)
					et.Run(t, et.Case{Name: name, N: outN, Outs: reg, Check: emuCheck(o, want, 0, 0),
						Args: []any{et.Up(t, x), o.Ptr(), g.Planes, g.H, g.W, ho, wo, rt, ct, g.Rows.Step, g.Cols.Step, d.IncludePad, d.Override}})
				}
			}
		})
	}
}

func emuSoftmax[T ad.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	r := rand.New(rand.NewPCG(35, 36))
	lines := [][3]int{{0, 3, 2}, {1, 1, 1}, {2, 5, 3}, {4, 17, 1}, {1, 300, 2}, {3, 4, 0}}
	for _, kind := range []string{"softmax_rows", "softmax_grad"} {
		nnRan.Kernel(t, kind+sfx, func(t *testing.T) {
			for _, s := range lines {
				outer, n, inner := s[0], s[1], s[2]
				for _, log := range []bool{false, true} {
					x, u := emuIn[T](r, outer*n*inner, false), emuIn[T](r, outer*n*inner, false)
					o, reg := emuOut[T](t, len(x))
					var want []T
					var args []any
					if kind == "softmax_rows" {
						want = goKernel(t, softmaxKernel[T](outer, n, inner, log), len(x), false, data(x)).Data
						args = []any{et.Up(t, x), o.Ptr(), outer, n, inner, log}
					} else {
						y := goKernel(t, softmaxKernel[T](outer, n, inner, log), len(x), false, data(x)).Data
						want = goKernel(t, softmaxGradKernel[T](outer, n, inner, log), len(x), false, data(y), data(u)).Data
						args = []any{et.Up(t, y), et.Up(t, u), o.Ptr(), outer, n, inner, log}
					}
					et.Run(t, et.Case{Name: kind + sfx, N: outer * inner, Outs: reg, Check: emuCheck(o, want, looseTol[T](), looseFloor), Args: args})
				}
			}
		})
	}
	nnRan.Kernel(t, "softmax_axis_sum"+sfx, func(t *testing.T) {
		for _, s := range lines {
			outer, n, inner := s[0], s[1], s[2]
			x := emuIn[T](r, outer*n*inner, true)
			want := goKernel(t, axisSumKernel[T](outer, n, inner), outer*inner, false, data(x)).Data
			o, reg := emuOut[T](t, len(want))
			et.Run(t, et.Case{Name: "softmax_axis_sum" + sfx, N: outer * inner, Outs: reg, Check: emuCheck(o, want, 0, 0), Args: []any{et.Up(t, x), o.Ptr(), outer, n, inner}})
		}
	})
	nnRan.Kernel(t, "softmax_axis_broadcast"+sfx, func(t *testing.T) {
		for _, s := range lines {
			outer, n, inner := s[0], s[1], s[2]
			x := emuIn[T](r, outer*inner, true)
			want := goKernel(t, axisBroadcastKernel[T](outer, n, inner), outer*n*inner, false, data(x)).Data
			o, reg := emuOut[T](t, len(want))
			et.Run(t, et.Case{Name: "softmax_axis_broadcast" + sfx, N: len(want), Outs: reg, Check: emuCheck(o, want, 0, 0), Args: []any{et.Up(t, x), o.Ptr(), outer, n, inner}})
		}
	})
}
