//go:build cgo && linux && amd64

package gops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/cuda/emu"
	et "github.com/gops-dev/gops/internal/cuda/emu/emutest"
	"github.com/gops-dev/gops/internal/cuda/pack"
	"github.com/gops-dev/gops/internal/golden"
)

// The emulation tests of the gops kernels whose CPU twins are in
// internal/cpu (TestEmulatedKernels, emu_test.go, runs them): each kernel,
// named by its PTX entry, runs with the host code's launch (*_cuda.go: the
// same work items and arguments, the boxes gridded or binned by the same
// CPU functions) on fixed and random cases, empty ones included, and for
// the RoI ops on the inputs of the torch golden files, in every order and
// grid of emutest.Configs, and is compared with its CPU twin. These
// kernels promise the CPU's results (compiled with -fmad=false, the CPU's
// order), so every comparison is bitwise.

func randF[T et.Float](r *rand.Rand, n int) []T {
	x := make([]T, n)
	for i := range x {
		x[i] = T(r.NormFloat64())
	}
	return x
}

// out is an output of n elements of E and its emutest region.
func out[E any](t *testing.T, n int) (*emu.Buffer, emu.Region) {
	b := et.Out[E](t, n)
	return b, et.Region[E](b)
}

func check[T et.Float](b *emu.Buffer, want []T) func() error {
	return func() error { return et.Equal(emu.Slice[T](b), want, 0, 0) }
}

func testLayout[T et.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	r := rand.New(rand.NewPCG(1, 2))
	emuRan.Kernel(t, "layout_copy"+sfx, func(t *testing.T) {
		for _, n := range []int{0, 1, 255, 257, 3001} {
			x := randF[T](r, n)
			b, reg := out[T](t, n)
			et.Run(t, et.Case{Name: "layout_copy" + sfx, N: n, Args: []any{et.Up(t, x), b.Ptr(), n}, Outs: []emu.Region{reg}, Check: check(b, x)})
		}
	})
	for _, bias := range []bool{false, true} {
		name := "layout_swap01" + sfx
		if bias {
			name = "layout_swap01_bias" + sfx
		}
		emuRan.Kernel(t, name, func(t *testing.T) {
			for _, s := range [][3]int{{0, 3, 2}, {3, 0, 2}, {2, 3, 0}, {1, 1, 1}, {3, 5, 7}, {17, 9, 13}, {2, 300, 1}} {
				a, bb, inner := s[0], s[1], s[2]
				n := a * bb * inner
				x, bv := randF[T](r, n), randF[T](r, a)
				want := make([]T, n)
				var bp []T
				if bias {
					bp = bv
				}
				cpu.Swap01(x, bp, want, a, bb)
				o, reg := out[T](t, n)
				args := []any{et.Up(t, x), o.Ptr(), a, bb, n / max(a*bb, 1)}
				if bias {
					args = []any{et.Up(t, x), et.Up(t, bv), o.Ptr(), a, bb, n / max(a*bb, 1)}
				}
				et.Run(t, et.Case{Name: name, N: n, Args: args, Outs: []emu.Region{reg}, Check: check(o, want)})
			}
		})
	}
}

// roiCase is an RoI op's geometry and boxes count.
type roiCase struct {
	N, C, H, W, PH, PW, K int
	scale                 float64
	sr                    int
	aligned               bool
	// x, bx, gr: a golden case's input, boxes and output gradient
	// (testdata/*_golden.json.gz, from torch), used instead of random ones.
	x, bx, gr []float64
}

// goldenCases are file's cases as roiCases; ps: C is the output channels
// (the input's over PH·PW).
func goldenCases(t *testing.T, file string, ps bool) []roiCase {
	var cs []roiCase
	for _, g := range golden.Load[golden.RoI](t, filepath.Join("..", "testdata", file)) {
		c := roiCase{N: g.InputShape[0], C: g.InputShape[1], H: g.InputShape[2], W: g.InputShape[3], PH: g.OutputSize[0], PW: g.OutputSize[1],
			K: len(g.Boxes) / 5, scale: g.SpatialScale, sr: g.SamplingRatio, aligned: g.Aligned, x: g.Input, bx: g.Boxes, gr: g.GradOutput}
		if ps {
			c.C /= c.PH * c.PW
		}
		cs = append(cs, c)
	}
	return cs
}

// or is c's golden data v as T, or n random values.
func or[T et.Float](v []float64, r *rand.Rand, n int) []T {
	if v == nil {
		return randF[T](r, n)
	}
	x := make([]T, len(v))
	for i, f := range v {
		x[i] = T(f)
	}
	return x
}

var roiCases = []roiCase{
	{N: 1, C: 1, H: 1, W: 1, PH: 1, PW: 1, K: 1, scale: 1, sr: 1},
	{N: 2, C: 3, H: 7, W: 5, PH: 2, PW: 3, K: 0, scale: 1, sr: 2},
	{N: 2, C: 3, H: 7, W: 5, PH: 2, PW: 3, K: 5, scale: 0.5, sr: 0, aligned: true},
	{N: 3, C: 2, H: 9, W: 11, PH: 3, PW: 3, K: 7, scale: 0.25, sr: 2},
	{N: 1, C: 4, H: 6, W: 13, PH: 1, PW: 2, K: 4, scale: 1, sr: 3, aligned: true},
	// Sample points exactly on the bilinear rule's clamp edges, y or x =
	// 0 and H−1, W−1 (H = 3, W = 4): with sampling ratio 2 (points at
	// start + bin/4, start + 3·bin/4) and 1 (the bin's centre), unaligned
	// (a box narrower than 1 widens to 1 from its start) and aligned
	// (coordinates − 0.5; PSRoIAlign always so).
	{N: 1, C: 2, H: 3, W: 4, PH: 1, PW: 1, K: 4, scale: 1, sr: 2, bx: []float64{
		0, -0.25, -0.25, 0.25, 0.25, // points 0 and 0.5
		0, 2.25, 1.25, 2.75, 1.75, // points x 2.5, 3; y 1.5, 2
		0, -0.25, 1.25, 2.75, 1.75,
		0, 2.25, -0.25, 2.75, 0.25}},
	{N: 1, C: 2, H: 3, W: 4, PH: 1, PW: 1, K: 4, scale: 1, sr: 2, aligned: true, bx: []float64{
		0, 0.25, 0.25, 1.25, 1.25, // points 0 and 0.5
		0, 2.75, 1.75, 3.75, 2.75, // points x 2.5, 3; y 1.5, 2
		0, 0.25, 1.75, 3.75, 2.75,
		0, 2.75, 0.25, 3.75, 1.25}},
	{N: 1, C: 2, H: 3, W: 4, PH: 1, PW: 1, K: 2, scale: 1, sr: 1, bx: []float64{
		0, -0.5, -0.5, 0.5, 0.5, // centre 0, 0
		0, 2.5, 1.5, 3.5, 2.5}}, // centre 3, 2
	{N: 1, C: 2, H: 3, W: 4, PH: 1, PW: 1, K: 2, scale: 1, sr: 1, aligned: true, bx: []float64{
		0, 0, 0, 1, 1, // centre 0, 0
		0, 3, 2, 4, 3}}, // centre 3, 2
}

// boxes draws k boxes [batch, x1, y1, x2, y2] for images of h×w pixels at
// scale: inside, crossing the border, outside, tiny, on pixel edges.
func boxes[T et.Float](r *rand.Rand, c roiCase) []T {
	if c.bx != nil {
		return or[T](c.bx, r, 0)
	}
	bx := make([]T, 0, 5*c.K)
	sh, sw := float64(c.H)/c.scale, float64(c.W)/c.scale
	for k := 0; k < c.K; k++ {
		var x1, y1, x2, y2 float64
		switch k % 5 {
		case 0: // inside
			x1, y1 = r.Float64()*sw/2, r.Float64()*sh/2
			x2, y2 = x1+r.Float64()*sw/2, y1+r.Float64()*sh/2
		case 1: // crossing the border
			x1, y1 = -r.Float64()*sw/3, sh/2
			x2, y2 = sw*(0.8+r.Float64()/2), sh*(1+r.Float64()/3)
		case 2: // outside
			x1, y1 = sw+2/c.scale, -3/c.scale
			x2, y2 = x1+3, y1+1
		case 3: // tiny
			x1, y1 = r.Float64()*sw, r.Float64()*sh
			x2, y2 = x1+0.1, y1+0.05
		default: // on pixel edges
			x1, y1 = math.Floor(r.Float64()*sw), math.Floor(r.Float64()*sh)
			x2, y2 = x1+math.Floor(r.Float64()*4)+1, y1+math.Floor(r.Float64()*4)+1
		}
		bx = append(bx, T(r.IntN(c.N)), T(x1), T(y1), T(x2), T(y2))
	}
	return bx
}

func (c roiCase) ra() cpu.RoIAlignGeom {
	return cpu.RoIAlignGeom{N: c.N, C: c.C, H: c.H, W: c.W, PH: c.PH, PW: c.PW, Scale: c.scale, SamplingRatio: c.sr, Aligned: c.aligned}
}

func (c roiCase) ps() cpu.PoolGeom {
	return cpu.PoolGeom{N: c.N, C: c.C * c.PH * c.PW, H: c.H, W: c.W, PH: c.PH, PW: c.PW, Scale: c.scale, SamplingRatio: c.sr}
}

// packGrids is the host code's packing of the boxes' grids (gops'
// boxGrids: pack.Grids).
func packGrids[T et.Float](t *testing.T, grids []cpu.RoIAlignBox[T], bx []T) []T {
	p, err := pack.Grids("test", grids, bx)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testRoIAlign[T et.Float](t *testing.T) {
	alignKernels(t, "roialign", false, [4]uint64{3, 4, 5, 6}, roiCase.ra, cpu.RoIAlignForward[T], cpu.RoIAlignTranspose[T], cpu.RoIAlignGrids[T])
}

// alignKernels tests an aligned pooling's forward and transpose kernels
// (name+"_forward", name+"_transpose": roialign, psroialign) on psCases
// and the cases of name's golden file. The input holds C channels, or
// C·PH·PW position-sensitive ones (ps); geom is the CPU kernels'
// geometry, grids the boxes' sampling grids the host code packs, seeds
// the two kernels' random draws.
func alignKernels[T et.Float, G any](t *testing.T, name string, ps bool, seeds [4]uint64, geom func(roiCase) G,
	fwd, tr func(*G, []T, []T, []T) error, grids func(*G, []T) ([]cpu.RoIAlignBox[T], error)) {
	sfx := et.Sfx[T]()
	cases := func() []roiCase { return append(psCases, goldenCases(t, name+"_golden.json.gz", ps)...) }
	chans := func(c roiCase) int {
		if ps {
			return c.C * c.PH * c.PW
		}
		return c.C
	}
	emuRan.Kernel(t, name+"_forward"+sfx, func(t *testing.T) {
		r := rand.New(rand.NewPCG(seeds[0], seeds[1]))
		for _, c := range cases() {
			g, ch := geom(c), chans(c)
			x, bx := or[T](c.x, r, c.N*ch*c.H*c.W), boxes[T](r, c)
			n := c.K * c.C * c.PH * c.PW
			want := make([]T, n)
			if err := fwd(&g, x, bx, want); err != nil {
				t.Fatal(err)
			}
			gs, err := grids(&g, bx)
			if err != nil {
				t.Fatal(err)
			}
			o, reg := out[T](t, n)
			et.Run(t, et.Case{Name: name + "_forward" + sfx, N: n, Outs: []emu.Region{reg}, Check: check(o, want),
				Args: []any{et.Up(t, x), et.Up(t, packGrids(t, gs, bx)), o.Ptr(), c.K, ch, c.H, c.W, c.PH, c.PW}})
		}
	})
	emuRan.Kernel(t, name+"_transpose"+sfx, func(t *testing.T) {
		r := rand.New(rand.NewPCG(seeds[2], seeds[3]))
		for _, c := range cases() {
			g, ch := geom(c), chans(c)
			gr, bx := or[T](c.gr, r, c.K*c.C*c.PH*c.PW), boxes[T](r, c)
			want := make([]T, c.N*ch*c.H*c.W)
			if err := tr(&g, gr, bx, want); err != nil {
				t.Fatal(err)
			}
			gs, err := grids(&g, bx)
			if err != nil {
				t.Fatal(err)
			}
			o, reg := out[T](t, len(want))
			et.Run(t, et.Case{Name: name + "_transpose" + sfx, N: c.N * ch, Outs: []emu.Region{reg}, Check: check(o, want),
				Args: []any{et.Up(t, gr), et.Up(t, packGrids(t, gs, bx)), o.Ptr(), c.K, c.N, ch, c.H, c.W, c.PH, c.PW}})
		}
	})
}

// psCases adds to roiCases one whose boxes hold more than 16384 sample
// points (the CPU kernels' chunks).
var psCases = append(append([]roiCase(nil), roiCases...), roiCase{N: 1, C: 1, H: 8, W: 8, PH: 2, PW: 2, K: 3, scale: 1, sr: 70})

func testPSRoIAlign[T et.Float](t *testing.T) {
	grids := func(g *cpu.PoolGeom, bx []T) ([]cpu.RoIAlignBox[T], error) {
		_, gs, err := cpu.PSRoIAlignGrids(g, bx)
		return gs, err
	}
	alignKernels(t, "psroialign", true, [4]uint64{7, 8, 9, 10}, roiCase.ps, cpu.PSRoIAlignForward[T], cpu.PSRoIAlignTranspose[T], grids)
}

// bins is the host code's bins of the boxes (gops' poolBinsOf:
// pack.PoolBins).
func bins[T et.Float](t *testing.T, g *cpu.PoolGeom, bx []T, inclusive bool) []int64 {
	p, err := pack.PoolBins("test", g, bx, inclusive)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testPSRoIPool[T et.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	emuRan.Kernel(t, "psroipool_forward"+sfx, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		for _, c := range append(roiCases, goldenCases(t, "psroipool_golden.json.gz", true)...) {
			g := c.ps()
			nb := c.PH * c.PW
			x, bx := or[T](c.x, r, g.N*g.C*g.H*g.W), boxes[T](r, c)
			n := c.K * c.C * nb
			want := make([]T, n)
			if err := cpu.PSRoIPoolForward(&g, x, bx, want); err != nil {
				t.Fatal(err)
			}
			o, reg := out[T](t, n)
			et.Run(t, et.Case{Name: "psroipool_forward" + sfx, N: n, Outs: []emu.Region{reg}, Check: check(o, want),
				Args: []any{et.Up(t, x), et.Up(t, bx), et.Up(t, bins(t, &g, bx, false)), o.Ptr(), c.K, g.C, c.H, c.W, nb}})
		}
	})
	emuRan.Kernel(t, "psroipool_transpose"+sfx, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 14))
		for _, c := range append(roiCases, goldenCases(t, "psroipool_golden.json.gz", true)...) {
			g := c.ps()
			nb := c.PH * c.PW
			gr, bx := or[T](c.gr, r, c.K*c.C*nb), boxes[T](r, c)
			want := make([]T, g.N*g.C*g.H*g.W)
			if err := cpu.PSRoIPoolTranspose(&g, gr, bx, want); err != nil {
				t.Fatal(err)
			}
			o, reg := out[T](t, len(want))
			et.Run(t, et.Case{Name: "psroipool_transpose" + sfx, N: g.N * g.C, Outs: []emu.Region{reg}, Check: check(o, want),
				Args: []any{et.Up(t, gr), et.Up(t, bx), et.Up(t, bins(t, &g, bx, false)), o.Ptr(), c.K, g.N, g.C, c.H, c.W, nb}})
		}
	})
}

// roiPoolInput is a random input with ties, −0, NaN and ±Inf (roi_pool's
// order of values).
func roiPoolInput[T et.Float](r *rand.Rand, n int) []T {
	x := make([]T, n)
	for i := range x {
		switch v, k := et.Special[T](r, 12); {
		case k < 4:
			x[i] = v
		case k < 6:
			x[i] = T(r.IntN(3)) // ties
		default:
			x[i] = T(r.NormFloat64())
		}
	}
	return x
}

func testRoIPool[T et.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	type prepared struct {
		c        roiCase
		g        cpu.PoolGeom
		x, bx    []T
		idx      []int
		badGrad  []int // idx with bad entries for the scatter
		badGathr []int // idx with bad entries for the gather
	}
	r := rand.New(rand.NewPCG(15, 16))
	var ps []prepared
	for _, c := range append(roiCases, goldenCases(t, "roipool_golden.json.gz", false)...) {
		g := c.ra()
		pg := cpu.PoolGeom{N: g.N, C: g.C, H: g.H, W: g.W, PH: g.PH, PW: g.PW, Scale: g.Scale}
		x := roiPoolInput[T](r, c.N*c.C*c.H*c.W)
		if c.x != nil {
			x = or[T](c.x, r, 0)
		}
		p := prepared{c: c, g: pg, x: x, bx: boxes[T](r, c)}
		p.idx = make([]int, c.K*c.C*c.PH*c.PW)
		if err := cpu.RoIPoolArgmax(&p.g, p.x, p.bx, p.idx); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	emuRan.Kernel(t, "roipool_argmax"+sfx, func(t *testing.T) {
		for _, p := range ps {
			nb := p.c.PH * p.c.PW
			o, reg := out[int64](t, len(p.idx))
			et.Run(t, et.Case{Name: "roipool_argmax" + sfx, N: len(p.idx), Outs: []emu.Region{reg},
				Check: func() error { return et.EqualInts(emu.Slice[int64](o), p.idx) },
				Args:  []any{et.Up(t, p.x), et.Up(t, p.bx), et.Up(t, bins(t, &p.g, p.bx, true)), o.Ptr(), p.c.K, p.c.C, p.c.H, p.c.W, nb}})
		}
	})
	// badSlot is the kernels' error slot and its check against the CPU's
	// error ("... at %d ...", the first bad position; MaxInt64 for none).
	badSlot := func(t *testing.T, cpuErr error) (*emu.Buffer, func() error) {
		b := et.Out[int64](t, 1)
		want := int64(math.MaxInt64)
		if cpuErr != nil {
			var at int
			var idx int
			var rest string
			if _, err := fmt.Sscanf(cpuErr.Error()[len("gops: RoIGather: "):], "index %d at %d %s", &idx, &at, &rest); err != nil {
				if _, err := fmt.Sscanf(cpuErr.Error()[len("gops: RoIScatterAdd: "):], "index %d at %d %s", &idx, &at, &rest); err != nil {
					t.Fatalf("CPU error %q: %v", cpuErr, err)
				}
			}
			want = int64(at)
		}
		return b, func() error {
			if got := emu.Slice[int64](b)[0]; got != want {
				return fmt.Errorf("error slot %d, want %d (CPU: %v)", got, want, cpuErr)
			}
			return nil
		}
	}
	emuRan.Kernel(t, "roipool_gather"+sfx, func(t *testing.T) {
		for _, p := range ps {
			nb := p.c.PH * p.c.PW
			idxs := [][]int{p.idx}
			if len(p.idx) > 2 {
				bad := append([]int(nil), p.idx...)
				bad[len(bad)-1] = len(p.x)
				bad[len(bad)/2] = -2
				idxs = append(idxs, bad)
			}
			for _, idx := range idxs {
				want := make([]T, len(idx))
				cpuErr := cpu.RoIGather(p.x, idx, want, nb)
				o, reg := out[T](t, len(idx))
				slot, slotOK := badSlot(t, cpuErr)
				n := len(idx)
				et.Run(t, et.Case{Name: "roipool_gather" + sfx, N: n, Outs: []emu.Region{reg},
					Init: func() {
						emu.Slice[int64](slot)[0] = math.MaxInt64
						o.Fill()
					},
					Check: func() error {
						if err := slotOK(); err != nil || cpuErr != nil {
							return err // the host reports the error; the output is not used
						}
						return et.Equal(emu.Slice[T](o), want, 0, 0)
					},
					Args: []any{et.Up(t, p.x), et.Up(t, idx), o.Ptr(), n, int64(len(p.x)), slot.Ptr()}})
			}
		}
	})
	emuRan.Kernel(t, "roipool_scatteradd"+sfx, func(t *testing.T) {
		for _, p := range ps {
			nb := p.c.PH * p.c.PW
			idxs := [][]int{p.idx}
			if p.c.K > 1 && p.c.C > 1 {
				bad := append([]int(nil), p.idx...)
				bad[len(bad)-1] = 0 // channel 0's plane in a row of channel C−1
				idxs = append(idxs, bad)
			}
			for _, idx := range idxs {
				gr := randF[T](r, len(idx))
				want := make([]T, p.c.N*p.c.C*p.c.H*p.c.W)
				cpuErr := cpu.RoIScatterAdd(&p.g, gr, idx, want)
				o, reg := out[T](t, len(want))
				slot, slotOK := badSlot(t, cpuErr)
				et.Run(t, et.Case{Name: "roipool_scatteradd" + sfx, N: p.c.N * p.c.C, Outs: []emu.Region{reg},
					Init: func() {
						emu.Slice[int64](slot)[0] = math.MaxInt64
						o.Fill()
					},
					Check: func() error {
						if err := slotOK(); err != nil || cpuErr != nil {
							return err
						}
						return et.Equal(emu.Slice[T](o), want, 0, 0)
					},
					Args: []any{et.Up(t, gr), et.Up(t, idx), o.Ptr(), p.c.K, p.c.N, p.c.C, p.c.H, p.c.W, nb, slot.Ptr()}})
			}
		}
	})
}

// deformCases are DeformConv2d geometries (cpu.DeformGeom); HO and WO are
// set by deformGeom.
var deformCases = []cpu.DeformGeom{
	{N: 1, C: 1, H: 1, W: 1, KH: 1, KW: 1, SH: 1, SW: 1, OG: 1, Groups: 1},
	{N: 0, C: 2, H: 4, W: 4, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, OG: 1, Groups: 1},
	{N: 2, C: 4, H: 5, W: 6, KH: 3, KW: 2, SH: 1, SW: 2, PH: 1, PW: 0, DH: 1, DW: 2, OG: 2, Groups: 1},
	{N: 1, C: 3, H: 7, W: 4, KH: 2, KW: 2, SH: 2, SW: 1, PH: 2, PW: 1, DH: 2, DW: 1, OG: 3, Groups: 1},
	// 16 channels per offset group: the CPU reads channels-last.
	{N: 1, C: 32, H: 3, W: 4, KH: 2, KW: 2, SH: 1, SW: 1, PH: 1, PW: 0, DH: 1, DW: 1, OG: 2, Groups: 1},
}

func deformGeom(g cpu.DeformGeom) cpu.DeformGeom {
	if g.DH == 0 {
		g.DH, g.DW = 1, 1
	}
	g.HO = (g.H+2*g.PH-g.DH*(g.KH-1)-1)/g.SH + 1
	g.WO = (g.W+2*g.PW-g.DW*(g.KW-1)-1)/g.SW + 1
	return g
}

// offsets draws the offsets [N, 2·OG·K, HO, WO]: random, integers (taps
// on pixels) and ones that put the taps on the image's edges (−1, H−1).
func offsets[T et.Float](r *rand.Rand, g *cpu.DeformGeom) []T {
	off := make([]T, 2*g.MaskLen())
	for i := range off {
		switch r.IntN(4) {
		case 0:
			off[i] = T(r.IntN(5) - 2)
		case 1:
			off[i] = T(float64(r.IntN(3)-1) * 1.5)
		default:
			off[i] = T(r.NormFloat64() * 2)
		}
	}
	return off
}

func geomArgs(g *cpu.DeformGeom, rest ...any) []any {
	return append([]any{g.N, g.C, g.H, g.W, g.KH, g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW, g.HO, g.WO, g.OG}, rest...)
}

var orders = [][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}}

func testDeform[T et.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	type prep struct {
		g               cpu.DeformGeom
		x, off, mask    []T
		colsIn, maskLen []T
	}
	r := rand.New(rand.NewPCG(17, 18))
	var ps []prep
	for _, dg := range deformCases {
		g := deformGeom(dg)
		p := prep{g: g, x: randF[T](r, g.N*g.C*g.H*g.W), off: offsets[T](r, &g), mask: randF[T](r, g.MaskLen())}
		p.colsIn = randF[T](r, g.C*g.K()*g.N*g.L())
		ps = append(ps, p)
	}
	masks := func(p prep) [][]T { return [][]T{nil, p.mask} }
	up := func(t *testing.T, m []T) emu.Ptr {
		if m == nil {
			return 0
		}
		return et.Up(t, m)
	}
	emuRan.Kernel(t, "deform_s"+sfx, func(t *testing.T) {
		for _, p := range ps {
			for _, m := range masks(p) {
				for _, ab := range orders {
					g := p.g
					n := g.C * g.K() * g.N * g.L()
					want := make([]T, n)
					cpu.DeformS(&g, ab[0], ab[1], p.x, p.off, m, want)
					o, reg := out[T](t, n)
					et.Run(t, et.Case{Name: "deform_s" + sfx, N: n, Outs: []emu.Region{reg}, Check: check(o, want),
						Args: geomArgs(&g, et.Up(t, p.x), et.Up(t, p.off), up(t, m), o.Ptr(), ab[0], ab[1])})
				}
			}
		}
	})
	emuRan.Kernel(t, "deform_t"+sfx, func(t *testing.T) {
		for _, p := range ps {
			for _, m := range masks(p) {
				for _, ab := range orders {
					g := p.g
					want := make([]T, g.N*g.C*g.H*g.W)
					cpu.DeformT(&g, ab[0], ab[1], p.colsIn, p.off, m, want)
					o, reg := out[T](t, len(want))
					et.Run(t, et.Case{Name: "deform_t" + sfx, N: g.N * g.C, Outs: []emu.Region{reg}, Check: check(o, want),
						Args: geomArgs(&g, et.Up(t, p.colsIn), et.Up(t, p.off), up(t, m), o.Ptr(), ab[0], ab[1])})
				}
			}
		}
	})
	emuRan.Kernel(t, "deform_c"+sfx, func(t *testing.T) {
		for _, p := range ps {
			for _, ab := range orders {
				g := p.g
				want := make([]T, g.MaskLen())
				cpu.DeformC(&g, ab[0], ab[1], p.x, p.off, p.colsIn, want)
				o, reg := out[T](t, len(want))
				et.Run(t, et.Case{Name: "deform_c" + sfx, N: len(want), Outs: []emu.Region{reg}, Check: check(o, want),
					Args: geomArgs(&g, et.Up(t, p.x), et.Up(t, p.off), et.Up(t, p.colsIn), o.Ptr(), ab[0], ab[1])})
			}
		}
	})
	emuRan.Kernel(t, "deform_o"+sfx, func(t *testing.T) {
		for _, p := range ps {
			for _, m := range masks(p) {
				for _, ab := range orders {
					g := p.g
					want := make([]T, 2*g.MaskLen())
					cpu.DeformO(&g, ab[0], ab[1], p.x, p.off, p.colsIn, m, want)
					o, reg := out[T](t, len(want))
					et.Run(t, et.Case{Name: "deform_o" + sfx, N: g.MaskLen(), Outs: []emu.Region{reg}, Check: check(o, want),
						Args: geomArgs(&g, et.Up(t, p.x), et.Up(t, p.off), et.Up(t, p.colsIn), up(t, m), o.Ptr(), ab[0], ab[1])})
				}
			}
		}
	})
	for _, embed := range []bool{true, false} {
		name := "offset_split" + sfx
		if embed {
			name = "offset_embed" + sfx
		}
		emuRan.Kernel(t, name, func(t *testing.T) {
			for _, p := range ps {
				g := p.g
				for which := 0; which < 2; which++ {
					src, want := p.mask, make([]T, 2*g.MaskLen())
					if embed {
						cpu.OffsetEmbed(&g, which, src, want)
					} else {
						src, want = p.off, make([]T, g.MaskLen())
						cpu.OffsetSplit(&g, which, src, want)
					}
					o, reg := out[T](t, len(want))
					et.Run(t, et.Case{Name: name, N: len(want), Outs: []emu.Region{reg}, Check: check(o, want),
						Args: []any{et.Up(t, src), o.Ptr(), g.MaskLen() / max(g.L(), 1), g.L(), which}})
				}
			}
		})
	}
}

// boxDerivPack is the host code's packing of the box-derivative grids
// (gops' boxDerivGrids: pack.BoxDerivGrids).
func boxDerivPack[T et.Float](t *testing.T, grids []cpu.RoIAlignBox[T], bx []T, scale float64, aligned bool) []T {
	p, err := pack.BoxDerivGrids("test", bx, grids, scale, aligned)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testBoxDeriv[T et.Float](t *testing.T) {
	sfx := et.Sfx[T]()
	type member struct {
		a, b   int
		xMajor bool
	}
	members := []member{{1, 0, false}, {0, 1, false}, {1, 1, false}, {1, 1, true}}
	for _, transpose := range []bool{false, true} {
		name := "roialignbox_deriv" + sfx
		if transpose {
			name = "roialignbox_transpose" + sfx
		}
		emuRan.Kernel(t, name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(19, 20))
			for _, c := range psCases {
				for _, ps := range []bool{false, true} {
					for _, m := range members {
						J := 1 << (m.a + m.b)
						var (
							bp                       []T
							C, cOut, cStride, binStr int
							scale                    float64
							cpuDeriv, cpuT           func(in, bx, out []T) error
						)
						bx := boxes[T](r, c)
						nb := c.PH * c.PW
						if ps {
							g := c.ps()
							_, grids, err := cpu.PSRoIAlignGrids(&g, bx)
							if err != nil {
								t.Fatal(err)
							}
							bp = boxDerivPack(t, grids, bx, g.Scale, true)
							C, cOut, cStride, binStr, scale = g.C, g.C/nb, nb, 1, g.Scale
							cpuDeriv = func(in, bx, out []T) error { return cpu.PSRoIAlignBoxDeriv(&g, m.a, m.b, m.xMajor, in, bx, out) }
							cpuT = func(in, bx, out []T) error {
								return cpu.PSRoIAlignBoxDerivTranspose(&g, m.a, m.b, m.xMajor, in, bx, out)
							}
						} else {
							g := c.ra()
							grids, err := cpu.RoIAlignGrids(&g, bx)
							if err != nil {
								t.Fatal(err)
							}
							bp = boxDerivPack(t, grids, bx, g.Scale, g.Aligned)
							C, cOut, cStride, binStr, scale = g.C, g.C, 1, 0, g.Scale
							cpuDeriv = func(in, bx, out []T) error { return cpu.RoIAlignBoxDeriv(&g, m.a, m.b, m.xMajor, in, bx, out) }
							cpuT = func(in, bx, out []T) error {
								return cpu.RoIAlignBoxDerivTranspose(&g, m.a, m.b, m.xMajor, in, bx, out)
							}
						}
						xm := 0
						if m.xMajor {
							xm = 1
						}
						small := c.K * J * cOut * nb
						big := c.N * C * c.H * c.W
						in, want := randF[T](r, big), make([]T, small)
						run := cpuDeriv
						if transpose {
							in, want, run = randF[T](r, small), make([]T, big), cpuT
						}
						if err := run(in, bx, want); err != nil {
							t.Fatal(err)
						}
						o, reg := out[T](t, len(want))
						args := []any{et.Up(t, in), et.Up(t, bp), o.Ptr(), c.K, C, c.H, c.W, c.PH, c.PW, cOut, cStride, binStr, m.a, m.b, xm, T(scale)}
						if transpose {
							args = []any{et.Up(t, in), et.Up(t, bp), o.Ptr(), c.K, c.N, C, c.H, c.W, c.PH, c.PW, cOut, cStride, binStr, m.a, m.b, xm, T(scale)}
						}
						et.Run(t, et.Case{Name: name, N: len(want), Outs: []emu.Region{reg}, Check: check(o, want), Args: args})
					}
				}
			}
		})
	}
}
