package nn

import "github.com/gops-dev/gops/internal/cpu"

// The launches of GridSample's CUDA twins (internal/cuda/kernels/nn/gridsample.cu), in an
// untagged file so that the emulator tests (emu_gridsample_test.go) run
// the kernels with the host code's own arguments. The taps are the Go
// kernels' (cpu.GridTable), computed on the host from the grid and the
// masks (downloaded by the twin) and uploaded with the launch.

// The placeholders of gridStep's arguments: an input of the op, its
// result, a temporary of gridPlan.tempN elements.
type (
	gridIn   int
	gridOut  struct{}
	gridTemp int
)

// gridStep is one launch: the entry without its dtype suffix, its work
// items and its arguments (placeholders, host slices to upload, ints).
type gridStep struct {
	name string
	n    int
	args []any
}

// gridPlan is a member's launches, in order, and its temporaries.
type gridPlan struct {
	temps, tempN int
	steps        []gridStep
}

// gridGPUPlan is member d's launches; host(i) is input i's data on the
// host (the grid and the masks, which the tables are built from).
func gridGPUPlan[T cpu.Float](d gridGPU, host func(i int) ([]T, error)) (gridPlan, error) {
	g := &d.g
	var pl gridPlan
	grid, err := host(1)
	if err != nil {
		return pl, err
	}
	hostIf := func(i int) ([]T, error) {
		if i < d.n {
			return host(i)
		}
		return nil, nil
	}
	hw, p := g.H*g.W, g.HO*g.WO
	geo := []any{g.N, g.C, hw, p}
	chunk := 8 // gridContract's gridChunk
	if g.Bicubic {
		chunk = g.C
	}
	// oSteps is O_ab into dst with mask (a gridIn or nil).
	oSteps := func(a, b int, m []T, mask any, dst any) gridStep {
		if !g.Bicubic {
			tb := cpu.GridOTable(g, a, b, grid, m)
			return gridStep{"gridsample_obilinear", g.N * p, append(append([]any{gridIn(0), gridIn(2), dst}, geo...), tb.Idx, tb.W)}
		}
		h0, h1 := d.f().nonzero(a+1, b), d.f().nonzero(a, b+1)
		var t0, t1 *cpu.GridTable[T]
		if h0 {
			t0 = cpu.GridSampleTable(g, a+1, b, grid, nil)
		}
		if h1 {
			t1 = cpu.GridSampleTable(g, a, b+1, grid, nil)
		}
		if t0 == nil {
			t0 = t1
		}
		if t1 == nil {
			t1 = t0
		}
		hasMask := mask != nil
		if mask == nil {
			mask = gridIn(2) // not read
		}
		return gridStep{"gridsample_contract", g.N * p, append(append([]any{gridIn(0), gridIn(2), dst, mask}, geo...),
			t0.Mode, chunk, 2, h0, h1, hasMask, t0.Idx, t0.W, t1.Idx, t1.W)}
	}
	switch d.kind {
	case gridS, gridS2, gridT, gridT2:
		var tb *cpu.GridTable[T]
		if d.kind == gridS || d.kind == gridT {
			m, err := hostIf(2)
			if err != nil {
				return pl, err
			}
			tb = cpu.GridSampleTable(g, d.a, d.b, grid, m)
		} else {
			m1, err := host(2)
			if err != nil {
				return pl, err
			}
			m2, err := host(3)
			if err != nil {
				return pl, err
			}
			tb = cpu.GridSampleTable2(g, d.a, d.b, grid, m1, m2)
		}
		if d.kind == gridS || d.kind == gridS2 {
			pl.steps = []gridStep{{"gridsample_sample", g.N * g.C * p, append(append([]any{gridIn(0), gridOut{}}, geo...), tb.Mode, tb.Sets, tb.Idx, tb.W)}}
		} else {
			off, ent := tb.Inverse()
			pl.steps = []gridStep{{"gridsample_scatter", g.N * g.C * hw, append(append([]any{gridIn(0), gridOut{}}, geo...), tb.Mode, off, ent, tb.W)}}
		}
	case gridC:
		tb := cpu.GridSampleTable(g, d.a, d.b, grid, nil)
		pl.steps = []gridStep{{"gridsample_contract", g.N * p, append(append([]any{gridIn(0), gridIn(2), gridOut{}, gridIn(2)}, geo...),
			tb.Mode, chunk, 1, true, false, false, tb.Idx, tb.W, tb.Idx, tb.W)}}
	case gridO:
		m, err := hostIf(3)
		if err != nil {
			return pl, err
		}
		var mask any
		if m != nil {
			mask = gridIn(3)
		}
		pl.steps = []gridStep{oSteps(d.a, d.b, m, mask, gridOut{})}
	case gridO2:
		mo := g.MaxOrder()
		outer := d.a+2 <= mo || d.b+2 <= mo
		pl.temps, pl.tempN = 1, 2*g.N*p
		pl.steps = []gridStep{oSteps(d.a+1, d.b, nil, nil, gridTemp(0))}
		tb := gridTemp(0)
		if outer {
			pl.temps, tb = 2, gridTemp(1)
			pl.steps = append(pl.steps, oSteps(d.a, d.b+1, nil, nil, tb))
		}
		pl.steps = append(pl.steps, gridStep{"gridsample_o2", g.N * p, []any{gridTemp(0), tb, gridIn(3), gridIn(4), gridOut{}, g.N * p, outer}})
	}
	return pl, nil
}

// f is the family of d's geometry (for nonzero).
func (d *gridGPU) f() *gridFamily { return &gridFamily{g: d.g} }
