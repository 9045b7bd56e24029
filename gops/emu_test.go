//go:build cgo && linux && amd64

package gops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/cuda/emu"
	et "github.com/gops-dev/gops/internal/cuda/emu/emutest"
	"gorgonia.org/tensor"
)

// The emulation tests of gops' kernels (internal/cuda/kernels/gops/*.cu,
// run on the CPU by internal/cuda/emu), one subtest per PTX entry, every
// entry required. The kernels whose CPU twins are in internal/cpu are
// tested in emu_kernels_test.go; here, those whose twins live in this
// package: the box functions' small ops (boxops.cu), MultiScaleRoIAlign's
// row moves (multiscale.cu) and the box gradient's coordinate moves
// (roialignbox_coords). Each runs with its host code's launch
// (boxops_cuda.go, multiscale_cuda.go, roialignbox_cuda.go: the same work
// items and arguments) in every order and grid of emutest.Configs and is
// compared with the Go kernel: bitwise, except boxops_point's atan,
// sigmoid, softplus and pow (the C library's functions here, CUDA's on a
// GPU, Go's math on the CPU: emutest.Tol).

var emuRan et.Ran

func TestEmulatedKernels(t *testing.T) {
	t.Run("boxops", func(t *testing.T) { emuBoxOps[float32](t); emuBoxOps[float64](t) })
	t.Run("deformconv", func(t *testing.T) { testDeform[float32](t); testDeform[float64](t) })
	t.Run("layout", func(t *testing.T) { testLayout[float32](t); testLayout[float64](t) })
	t.Run("multiscale", func(t *testing.T) { emuMultiScale[float32](t); emuMultiScale[float64](t) })
	t.Run("psroialign", func(t *testing.T) { testPSRoIAlign[float32](t); testPSRoIAlign[float64](t) })
	t.Run("psroipool", func(t *testing.T) { testPSRoIPool[float32](t); testPSRoIPool[float64](t) })
	t.Run("roialign", func(t *testing.T) { testRoIAlign[float32](t); testRoIAlign[float64](t) })
	t.Run("roialignbox", func(t *testing.T) {
		testBoxDeriv[float32](t)
		testBoxDeriv[float64](t)
		emuBoxCoords[float32](t)
		emuBoxCoords[float64](t)
	})
	t.Run("roipool", func(t *testing.T) { testRoIPool[float32](t); testRoIPool[float64](t) })
	emuRan.Check(t, "gops")
}

// emuValues are n values with the special ones first: ±0, ±Inf, NaN,
// ties, integers and values at clamp bounds, then normal draws.
func emuValues[T ad.Float](r *rand.Rand, n int) []T {
	special := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1, -1, 2, 0.5, 40, -40, 1e-300, 3.5}
	x := make([]T, n)
	for i := range x {
		if i < len(special) {
			x[i] = T(special[i])
		} else {
			x[i] = T(3 * r.NormFloat64())
		}
	}
	return x
}

// emuRun launches kernel name (n work items, args) with out [len(want)]
// filled by init (nil: the poison pattern), and compares out with want:
// bitwise for tol 0, else within tol relative to want with no floor
// (Equal's floor 0: the kernels with a tolerance are elementwise, one
// rounding of one function value, so the error is relative at any
// magnitude).
func emuRun[T ad.Float](t *testing.T, name string, n int, want []T, tol float64, init []T, args func(out emu.Ptr) []any) {
	t.Helper()
	b := et.Out[T](t, len(want))
	c := et.Case{Name: name, N: n, Args: args(b.Ptr()), Outs: []emu.Region{et.Region[T](b)},
		Check: func() error { return et.Equal(emu.Slice[T](b), want, tol, 0) }}
	if init != nil {
		c.Init = func() { copy(emu.Slice[T](b), init) }
	}
	et.Run(t, c)
}

func tensorOf[T ad.Float](x []T) ad.Tensor[T] { return ad.Tensor[T]{Data: x} }

func emuBoxOps[T ad.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	r := rand.New(rand.NewPCG(3, 4))
	emuRan.Kernel(t, "boxops_point"+sfx, func(t *testing.T) {
		ops := []pointOp{{Fn: cpu.PointMaximum}, {Fn: cpu.PointMinimum}, {Fn: cpu.PointMaxShare}, {Fn: cpu.PointClamp, P1: -1, P2: 2}, {Fn: cpu.PointClampMask, P1: 0, P2: 0.5},
			{Fn: cpu.PointAtan}, {Fn: cpu.PointSigmoid}, {Fn: cpu.PointSoftplus}, {Fn: cpu.PointPow, P1: 1.5}, {Fn: cpu.PointPow, P1: 2}, {Fn: cpu.PointDiv}, {Fn: cpu.PointCopy}, {Fn: cpu.PointMasked}, {Fn: cpu.PointBothPositive}}
		for _, op := range ops {
			for _, n := range []int{0, 1, 300} {
				a, b := emuValues[T](r, n), emuValues[T](r, n)
				for i := 0; i < n; i += 7 { // ties
					b[i] = a[i]
				}
				unary := op.Fn == cpu.PointClamp || op.Fn == cpu.PointClampMask || op.Fn == cpu.PointAtan || op.Fn == cpu.PointSigmoid || op.Fn == cpu.PointSoftplus || op.Fn == cpu.PointPow || op.Fn == cpu.PointCopy
				in := []ad.Tensor[T]{tensorOf(a), tensorOf(b)}
				if unary {
					in = in[:1]
				}
				want := make([]T, n)
				k := pointKernel[T](op)
				if op.Fn == cpu.PointDiv {
					k = divKernel[T]
				}
				if err := k(tensorOf(want), in); err != nil {
					t.Fatal(err)
				}
				tol := 0.0
				if op.Fn == cpu.PointAtan || op.Fn == cpu.PointSigmoid || op.Fn == cpu.PointSoftplus || op.Fn == cpu.PointPow {
					tol = et.Tol[T]()
				}
				t.Run(fmt.Sprintf("fn%d/n%d", op.Fn, n), func(t *testing.T) {
					emuRun(t, "boxops_point"+sfx, n, want, tol, nil, func(out emu.Ptr) []any {
						bp := emu.Ptr(0) // a unary function: b = 0, as the host code
						if !unary {
							bp = et.Up(t, b)
						}
						return []any{et.Up(t, a), bp, out, n, int(op.Fn), op.P1, op.P2}
					})
				})
			}
		}
	})
	shapes := [][2]int{{0, 4}, {1, 1}, {7, 4}, {300, 5}}
	emuRan.Kernel(t, "boxops_column_select"+sfx, func(t *testing.T) {
		for _, s := range shapes {
			p, c := s[0], s[1]
			x := emuValues[T](r, p*c)
			for j := 0; j < c; j++ {
				want := make([]T, p)
				columnKernel[T](c, j, true)(tensorOf(want), []ad.Tensor[T]{tensorOf(x)})
				emuRun(t, "boxops_column_select"+sfx, p, want, 0, nil, func(out emu.Ptr) []any { return []any{et.Up(t, x), out, p, c, j} })
			}
		}
	})
	emuRan.Kernel(t, "boxops_column_embed"+sfx, func(t *testing.T) {
		for _, s := range shapes {
			p, c := s[0], s[1]
			x := emuValues[T](r, p)
			for j := 0; j < c; j++ {
				want := make([]T, p*c) // the CPU kernel writes into a zeroed result
				columnKernel[T](c, j, false)(tensorOf(want), []ad.Tensor[T]{tensorOf(x)})
				emuRun(t, "boxops_column_embed"+sfx, p*c, want, 0, nil, func(out emu.Ptr) []any { return []any{et.Up(t, x), out, p, c, j} })
			}
		}
	})
	emuRan.Kernel(t, "boxops_column_put"+sfx, func(t *testing.T) {
		for _, s := range shapes {
			p, c := s[0], s[1]
			cols := make([]ad.Tensor[T], c)
			for j := range cols {
				cols[j] = tensorOf(emuValues[T](r, p))
			}
			want := make([]T, p*c)
			stackKernel(tensorOf(want), cols)
			// StackColumns launches once per column: each puts its column
			// and leaves the others as the earlier launches wrote them.
			for j := 0; j < c; j++ {
				before := append([]T(nil), want...)
				for i := 0; i < p; i++ {
					for jj := j; jj < c; jj++ {
						before[i*c+jj] = -7 // not yet written
					}
				}
				after := append([]T(nil), before...)
				for i := 0; i < p; i++ {
					after[i*c+j] = want[i*c+j]
				}
				emuRun(t, "boxops_column_put"+sfx, p, after, 0, before, func(out emu.Ptr) []any { return []any{et.Up(t, cols[j].Data), out, p, c, j} })
			}
		}
	})
	idxCases := []struct {
		k   int
		idx []int
	}{{0, nil}, {3, nil}, {1, []int{0, 0, 0}}, {5, []int{4, 0, 4, 2, 2, 2, 1}}, {40, nil}}
	for i := range idxCases {
		if idxCases[i].k == 40 {
			for j := 0; j < 97; j++ {
				idxCases[i].idx = append(idxCases[i].idx, r.IntN(40))
			}
		}
	}
	emuRan.Kernel(t, "boxops_gather_rows"+sfx, func(t *testing.T) {
		for _, c := range idxCases {
			for _, n := range []int{1, 4, 5} {
				x := emuValues[T](r, c.k*n)
				want := make([]T, len(c.idx)*n)
				cpu.GatherRows(want, x, c.idx, n)
				p := len(c.idx) // c.idx: Go ints, the kernel's long longs on amd64
				emuRun(t, "boxops_gather_rows"+sfx, p*n, want, 0, nil, func(out emu.Ptr) []any { return []any{et.Up(t, x), et.Up(t, c.idx), out, p, n} })
			}
		}
	})
	emuRan.Kernel(t, "boxops_scatter_rows"+sfx, func(t *testing.T) {
		for _, c := range idxCases {
			for _, n := range []int{1, 4, 5} {
				g := emuValues[T](r, len(c.idx)*n)
				want := make([]T, c.k*n)
				cpu.ScatterAddRows(want, g, c.idx, n)
				start, rows := inverseRows(c.idx, c.k)
				k := c.k
				emuRun(t, "boxops_scatter_rows"+sfx, k*n, want, 0, nil, func(out emu.Ptr) []any {
					return []any{et.Up(t, g), et.Up(t, start), et.Up(t, rows), out, k, n}
				})
			}
		}
	})
	emuRan.Kernel(t, "boxops_convert"+sfx, func(t *testing.T) {
		for _, k := range []int{0, 1, 37} {
			x := emuValues[T](r, 4*k)
			for kind := cpu.XYXYToXYWH; kind <= cpu.CXCYWHToXYXY; kind++ {
				for _, tr := range []bool{false, true} {
					want := make([]T, 4*k)
					if err := convertKernel[T](kind, tr)(tensorOf(want), []ad.Tensor[T]{tensorOf(x)}); err != nil {
						t.Fatal(err)
					}
					emuRun(t, "boxops_convert"+sfx, k, want, 0, nil, func(out emu.Ptr) []any { return []any{et.Up(t, x), out, k, int(kind), tr} })
				}
			}
		}
	})
	emuRan.Kernel(t, "boxops_clip"+sfx, func(t *testing.T) {
		for _, k := range []int{0, 1, 50} {
			x := emuValues[T](r, 4*k)
			for i := range x {
				if i%5 == 0 {
					x[i] = T(float64(i % 9)) // on the bounds
				}
			}
			for _, mask := range []bool{false, true} {
				w, h := 8.0, 3.0
				want := make([]T, 4*k)
				cpu.ClipBoxes(want, x, [4]float64{w, h, w, h}, mask)
				n := 4 * k
				emuRun(t, "boxops_clip"+sfx, n, want, 0, nil, func(out emu.Ptr) []any { return []any{et.Up(t, x), out, n, w, h, mask} })
			}
		}
	})
	emuRan.Kernel(t, "boxops_rois"+sfx, func(t *testing.T) {
		counts := []int{2, 0, 5}
		var in []ad.Tensor[T]
		total := 0
		for _, c := range counts {
			in = append(in, tensorOf(emuValues[T](r, 4*c)))
			total += c
		}
		all := make([]T, 5*total)
		if err := boxesToRoIsKernel(tensorOf(all), in); err != nil {
			t.Fatal(err)
		}
		off := 0
		for i, n := range counts { // BoxesToRoIs launches once per image
			before := make([]T, 5*total)
			for j := range before {
				before[j] = -7
			}
			after := append([]T(nil), before...)
			copy(after[5*off:5*(off+n)], all[5*off:5*(off+n)])
			o := off
			emuRun(t, "boxops_rois"+sfx, 5*n, after, 0, before, func(out emu.Ptr) []any { return []any{et.Up(t, in[i].Data), out, o, n, i} })
			off += n
		}
	})
	emuRan.Kernel(t, "boxops_roi_rows"+sfx, func(t *testing.T) {
		for _, c := range [][3]int{{0, 0, 0}, {4, 0, 4}, {6, 2, 3}, {9, 8, 1}} {
			k, off, n := c[0], c[1], c[2]
			boxes, rois := emuValues[T](r, 4*n), emuValues[T](r, 5*k)
			embed := make([]T, 5*k)
			roiRowsKernel[T](off, n, true)(tensorOf(embed), []ad.Tensor[T]{tensorOf(boxes)})
			emuRun(t, "boxops_roi_rows"+sfx, 5*k, embed, 0, nil, func(out emu.Ptr) []any { return []any{et.Up(t, boxes), out, k, off, n, true} })
			rows := make([]T, 4*n)
			roiRowsKernel[T](off, n, false)(tensorOf(rows), []ad.Tensor[T]{tensorOf(rois)})
			emuRun(t, "boxops_roi_rows"+sfx, 4*n, rows, 0, nil, func(out emu.Ptr) []any { return []any{et.Up(t, rois), out, k, off, n, false} })
		}
	})
}

func emuMultiScale[T ad.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	r := rand.New(rand.NewPCG(5, 6))
	cases := []struct {
		k   int
		idx []int
	}{{0, nil}, {1, []int{0}}, {6, []int{1, 4, 5}}, {50, nil}}
	for j := 0; j < 50; j += 3 {
		cases[3].idx = append(cases[3].idx, j)
	}
	emuRan.Kernel(t, "multiscale_rows"+sfx, func(t *testing.T) {
		for _, c := range cases {
			for _, row := range []int{1, 5, 49} {
				p := len(c.idx) // c.idx: Go ints, the kernel's long longs on amd64
				// gather: a level's rows of the gradient (cpu.PyramidTranspose)
				grad := emuValues[T](r, c.k*row)
				want := cpu.GatherLevelRows(nil, grad, c.idx, row)
				emuRun(t, "multiscale_rows"+sfx, p*row, want, 0, nil, func(out emu.Ptr) []any { return []any{et.Up(t, grad), et.Up(t, c.idx), out, p, row, 0} })
				// scatter: the level's pooled rows into the result (cpu.PyramidForward)
				pooled := emuValues[T](r, p*row)
				before := make([]T, c.k*row)
				for i := range before {
					before[i] = -7
				}
				after := append([]T(nil), before...)
				cpu.ScatterLevelRows(after, pooled, c.idx, row)
				emuRun(t, "multiscale_rows"+sfx, p*row, after, 0, before, func(out emu.Ptr) []any { return []any{et.Up(t, pooled), et.Up(t, c.idx), out, p, row, 1} })
			}
		}
	})
	emuRan.Kernel(t, "multiscale_zero"+sfx, func(t *testing.T) {
		for _, n := range []int{0, 1, 1000} {
			emuRun(t, "multiscale_zero"+sfx, n, make([]T, n), 0, nil, func(out emu.Ptr) []any { return []any{out, n} })
		}
	})
}

func emuBoxCoords[T ad.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	r := rand.New(rand.NewPCG(7, 8))
	emuRan.Kernel(t, "roialignbox_coords"+sfx, func(t *testing.T) {
		for _, k := range []int{0, 1, 33} {
			for dir := 0; dir < 2; dir++ {
				pairs, boxes := emuValues[T](r, 2*k), emuValues[T](r, 5*k)
				embed := make([]T, 5*k) // zeroed, as the CPU kernel's result
				boxCoordKernel[T](dir, true)(ad.Tensor[T]{Shape: tensor.Shape{k, 5}, Data: embed}, []ad.Tensor[T]{tensorOf(pairs)})
				emuRun(t, "roialignbox_coords"+sfx, 5*k, embed, 0, nil, func(out emu.Ptr) []any { return []any{et.Up(t, pairs), out, k, 2 - dir, 1} })
				sel := make([]T, 2*k)
				boxCoordKernel[T](dir, false)(tensorOf(sel), []ad.Tensor[T]{tensorOf(boxes)})
				emuRun(t, "roialignbox_coords"+sfx, 2*k, sel, 0, nil, func(out emu.Ptr) []any { return []any{et.Up(t, boxes), out, k, 2 - dir, 0} })
			}
		}
	})
}
