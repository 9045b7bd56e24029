//go:build cgo && linux && amd64

package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/cuda/emu"
	et "github.com/gops-dev/gops/internal/cuda/emu/emutest"
)

// emuGridSample runs internal/cuda/kernels/nn/gridsample.cu's entries on the emulator with
// the host code's launches (gridGPUPlan, the same tap tables) and compares
// them, bitwise, with the Go kernels (gridKernel, cpu.GridSplit/Embed,
// cpu.AffineGrid/T): every member kind over modes, paddings, align_corners,
// orders, with and without masks, grids with NaN, ±Inf, huge, border and
// integer coordinates.
func emuGridSample(t *testing.T) {
	emuGrid[float32](t)
	emuGrid[float64](t)
}

// emuGridCoords is a grid of n points: mostly in [−1.3, 1.3], with special
// coordinates.
func emuGridCoords[T ad.Float](r *rand.Rand, n int) []T {
	g := make([]T, n)
	for i := range g {
		g[i] = T(r.Float64()*2.6 - 1.3)
		switch r.IntN(24) {
		case 0:
			g[i] = T(math.NaN())
		case 1:
			g[i] = T(math.Inf(1 - 2*r.IntN(2)))
		case 2:
			g[i] = T([]float64{-1, 1, 0, 0.5, -0.5}[r.IntN(5)])
		case 3:
			g[i] = T(r.NormFloat64() * 1e10)
		case 4:
			g[i] = T(r.Float64()*8 - 4)
		}
	}
	return g
}

type emuGridCase[T ad.Float] struct {
	d    gridGPU
	ins  [][]T
	want []T
	pl   gridPlan
}

func emuGrid[T ad.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	r := rand.New(rand.NewPCG(61, 62))
	byEntry := map[string][]emuGridCase[T]{}
	for _, s := range [][6]int{{1, 1, 1, 1, 1, 1}, {2, 3, 4, 5, 3, 4}, {1, 10, 3, 3, 2, 5}, {2, 2, 1, 6, 4, 3}, {1, 8, 3, 9, 2, 9}} {
		for mode := 0; mode < 3; mode++ {
			for pad := cpu.GridZeros; pad <= cpu.GridReflection; pad++ {
				for _, align := range []bool{false, true} {
					g := cpu.GridSampleGeom{N: s[0], C: s[1], H: s[2], W: s[3], HO: s[4], WO: s[5], Nearest: mode == 0, Bicubic: mode == 2, Padding: pad, AlignCorners: align}
					f := &gridFamily{g: g}
					orders := [][2]int{{0, 0}}
					switch mode {
					case 1:
						orders = [][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}}
					case 2:
						orders = [][2]int{{0, 0}, {1, 0}, {0, 1}, {2, 1}, {3, 2}, {3, 3}}
					}
					in, grid, out, pix := f.shapes()
					gr := emuGridCoords[T](r, grid.TotalSize())
					x := emuIn[T](r, in.TotalSize(), true)
					u := emuIn[T](r, out.TotalSize(), true)
					m1, m2 := emuIn[T](r, pix.TotalSize(), false), emuIn[T](r, pix.TotalSize(), false)
					for _, ab := range orders {
						a, b := ab[0], ab[1]
						add := func(kind gridKind, outN int, ins ...[]T) {
							d := gridGPU{g, kind, a, b, len(ins)}
							var ts []ad.Tensor[T]
							for _, v := range ins {
								ts = append(ts, data(v))
							}
							want := goKernel(t, gridKernel[T](&d.g, kind, a, b), outN, false, ts...).Data
							pl, err := gridGPUPlan(d, func(i int) ([]T, error) { return ins[i], nil })
							if err != nil {
								t.Fatal(err)
							}
							name := pl.steps[len(pl.steps)-1].name
							byEntry[name] = append(byEntry[name], emuGridCase[T]{d, ins, want, pl})
						}
						add(gridS, out.TotalSize(), x, gr)
						add(gridS, out.TotalSize(), x, gr, m1)
						add(gridT, in.TotalSize(), u, gr)
						add(gridT, in.TotalSize(), u, gr, m1)
						add(gridC, pix.TotalSize(), x, gr, u)
						if f.gridDiff(a, b) {
							add(gridO, grid.TotalSize(), x, gr, u)
							add(gridO, grid.TotalSize(), x, gr, u, m1)
						}
						if f.nonzero(a+1, b) && f.nonzero(a, b+1) {
							add(gridS2, out.TotalSize(), x, gr, m1, m2)
							add(gridT2, in.TotalSize(), u, gr, m1, m2)
							if f.gridDiff(a+1, b) || f.gridDiff(a, b+1) {
								add(gridO2, grid.TotalSize(), x, gr, u, m1, m2)
							}
						}
					}
				}
			}
		}
	}
	for _, e := range []string{"gridsample_sample", "gridsample_scatter", "gridsample_contract", "gridsample_obilinear", "gridsample_o2"} {
		cases := byEntry[e]
		nnRan.Kernel(t, e+sfx, func(t *testing.T) {
			if len(cases) == 0 {
				t.Fatal("no cases")
			}
			for _, c := range cases {
				t.Run(fmt.Sprintf("%v_%d%d_n%d_%+v", c.d.kind, c.d.a, c.d.b, c.d.n, c.d.g), func(t *testing.T) { emuGridRun(t, sfx, c) })
			}
		})
	}
	nnRan.Kernel(t, "gridsample_split"+sfx, func(t *testing.T) {
		for which := 0; which < 2; which++ {
			src := emuIn[T](r, 2*37, true)
			want := make([]T, 37)
			cpu.GridSplit(which, src, want)
			o, reg := emuOut[T](t, 37)
			et.Run(t, et.Case{Name: "gridsample_split" + sfx, N: 37, Outs: reg, Check: emuCheck(o, want, 0, 0), Args: []any{et.Up(t, src), o.Ptr(), 37, which}})
		}
	})
	nnRan.Kernel(t, "gridsample_embed"+sfx, func(t *testing.T) {
		for which := 0; which < 2; which++ {
			src := emuIn[T](r, 37, true)
			want := make([]T, 2*37)
			cpu.GridEmbed(which, src, want)
			o, reg := emuOut[T](t, 2*37)
			et.Run(t, et.Case{Name: "gridsample_embed" + sfx, N: 2 * 37, Outs: reg, Check: emuCheck(o, want, 0, 0), Args: []any{et.Up(t, src), o.Ptr(), 37, which}})
		}
	})
	for _, fwd := range []bool{true, false} {
		name := "gridsample_affine" + sfx
		if !fwd {
			name = "gridsample_affine_t" + sfx
		}
		nnRan.Kernel(t, name, func(t *testing.T) {
			for _, s := range [][3]int{{1, 1, 1}, {2, 3, 5}, {3, 7, 4}} {
				for _, align := range []bool{false, true} {
					n, h, w := s[0], s[1], s[2]
					inN, outN := 6*n, 2*n*h*w
					if !fwd {
						inN, outN = outN, inN
					}
					src := emuIn[T](r, inN, true)
					want := goKernel(t, affineGridKernel[T](n, h, w, align, fwd), outN, false, data(src)).Data
					o, reg := emuOut[T](t, outN)
					et.Run(t, et.Case{Name: name, N: outN, Outs: reg, Check: emuCheck(o, want, 0, 0),
						Args: []any{et.Up(t, src), o.Ptr(), n, h, w, et.Up(t, cpu.AffineGridBase[T](w, align)), et.Up(t, cpu.AffineGridBase[T](h, align))}})
				}
			}
		})
	}
}

// emuGridRun runs case c's plan: the steps before the last once, the last
// under every configuration (et.Run), checked against the Go kernel.
func emuGridRun[T ad.Float](t *testing.T, sfx string, c emuGridCase[T]) {
	temps := make([]*emu.Buffer, c.pl.temps)
	for k := range temps {
		temps[k] = et.Out[T](t, c.pl.tempN)
	}
	o, reg := emuOut[T](t, len(c.want))
	args := func(st gridStep) []any {
		var as []any
		for _, a := range st.args {
			switch v := a.(type) {
			case gridIn:
				a = et.Up(t, c.ins[v])
			case gridOut:
				a = o.Ptr()
			case gridTemp:
				a = temps[v].Ptr()
			case []int64:
				a = et.Up(t, v)
			case []T:
				a = et.Up(t, v)
			}
			as = append(as, a)
		}
		return as
	}
	last := len(c.pl.steps) - 1
	for _, st := range c.pl.steps[:last] {
		if err := emu.Launch(st.name+sfx, st.n, emu.Config{Order: emu.Forward}, args(st)...); err != nil {
			t.Fatal(err)
		}
	}
	st := c.pl.steps[last]
	et.Run(t, et.Case{Name: st.name + sfx, N: st.n, Outs: reg, Check: emuCheck(o, c.want, 0, 0), Args: args(st)})
}
