package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// winoGeoms are Winograd's test geometries: 48 random ones (channels 1 to
// 40, batch 0 to 3, maps 1×1 to 40×37, padding 0 to 2 on each axis) and
// the odd maps 1×1, 1×5, 2×2, 3×3, 7×9 at every padding that leaves an
// output, and blocks of several tile rows, the last one partial.
func winoGeoms() []ConvGeom {
	r := rand.New(rand.NewPCG(28, 26))
	var gs []ConvGeom
	add := func(n, c, cout, h, w, ph, pw int) {
		g := ConvGeom{N: n, C: c, H: h, W: w, Cout: cout, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: ph, PW: pw, DH: 1, DW: 1}
		var err1, err2 error
		g.HO, err1 = OutSize(h, 3, 1, ph, 1)
		g.WO, err2 = OutSize(w, 3, 1, pw, 1)
		if err1 == nil && err2 == nil {
			gs = append(gs, g)
		}
	}
	for len(gs) < 48 {
		add(r.IntN(4), 1+r.IntN(40), 1+r.IntN(40), 1+r.IntN(40), 1+r.IntN(40), r.IntN(3), r.IntN(3))
	}
	for _, hw := range [][2]int{{1, 1}, {1, 5}, {2, 2}, {3, 3}, {7, 9}} {
		for p := 0; p <= 2; p++ {
			add(2, 3, 5, hw[0], hw[1], p, p)
			add(1, 4, 2, hw[0], hw[1], p, 2-p)
		}
	}
	add(2, 40, 36, 75, 61, 1, 1)   // 1 channel pair: blocks of 4 rows of 31 tiles
	add(1, 300, 290, 24, 24, 1, 0) // many channels: a block of winoBlockTiles
	return gs
}

// Winograd's ConvForward (bias or not) and ConvInput equal im2col's
// (convGEMM) within 1e-12 (float64) or 1e-5 (float32) of Σ|w|·|x| of each
// output element, write every output element, are bitwise the same for
// GOMAXPROCS 1, 2 and 4, and with U_ξ packed once (a nil Product) bitwise
// what they are on gemm.Gemm a product at a time.
func TestConvWinoMatchesIm2col(t *testing.T) {
	for _, g := range winoGeoms() {
		p := newWinoPlan(&g, ConvForward)
		t.Run(fmt.Sprintf("%+v/rb=%d", g, p.rb), func(t *testing.T) {
			checkWino[float32](t, &g, 1e-5)
			checkWino[float64](t, &g, 1e-12)
		})
	}
}

func checkWino[T float32 | float64](t *testing.T, g *ConvGeom, tol float64) {
	r := newRand(g)
	rnd := func(n int) []T { return normals[T](r, n) }
	abs := func(s []T) []T {
		a := make([]T, len(s))
		for i, v := range s {
			a[i] = T(math.Abs(float64(v)))
		}
		return a
	}
	nx, ny := g.N*g.C*g.H*g.W, g.N*g.Cout*g.L()
	x, w, gr, bias := rnd(nx), rnd(g.Cout*g.Rows()), rnd(ny), rnd(g.Cout)
	for _, c := range []struct {
		name       string
		mode       ConvMode
		a, w, bias []T
		size       int
	}{
		{"forward", ConvForward, x, w, nil, ny},
		{"forward+bias", ConvForward, x, w, bias, ny},
		{"input", ConvInput, gr, w, nil, nx},
	} {
		want, scale := make([]T, c.size), make([]T, c.size)
		must(t, convGEMM(g, c.mode, gemmProduct[T], want, c.a, c.w, c.bias))
		must(t, convGEMM(g, c.mode, gemmProduct[T], scale, abs(c.a), abs(c.w), abs(c.bias)))
		got := winoAcrossProcs(t, c.size, func(out []T) error {
			_, err := convWino(g, c.mode, gemmProduct[T], out, c.a, c.w, c.bias)
			return err
		})
		packed := winoAcrossProcs(t, c.size, func(out []T) error { // gops' own product: U_ξ packed once
			_, err := convWino(g, c.mode, nil, out, c.a, c.w, c.bias)
			return err
		})
		if !slices.Equal(bitsOf(packed), bitsOf(got)) {
			t.Fatalf("%s %T: with U_ξ packed once (a nil Product), not bitwise gemm.Gemm's", c.name, got[0])
		}
		for i, v := range got {
			if d := math.Abs(float64(v) - float64(want[i])); !(d <= tol*float64(scale[i])) {
				t.Fatalf("%s %T: out[%d] = %v, im2col %v (Σ|w||x| %v)", c.name, v, i, v, want[i], scale[i])
			}
		}
	}
}

// newRand is a generator seeded by g's sizes.
func newRand(g *ConvGeom) *rand.Rand { return rand.New(rand.NewPCG(uint64(g.C), uint64(g.H*g.W))) }

// winoAcrossProcs runs f into a buffer of n elements first set to NaN (so
// that every element must be written) at GOMAXPROCS 1, 2 and 4, and fails
// unless the runs agree bitwise; it returns the first run's result.
func winoAcrossProcs[T Float](t *testing.T, n int, f func(out []T) error) []T {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var first []T
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		out := make([]T, n)
		for i := range out {
			out[i] = T(math.NaN())
		}
		must(t, f(out))
		if first == nil {
			first = out
			continue
		}
		if !slices.Equal(bitsOf(out), bitsOf(first)) {
			t.Fatalf("GOMAXPROCS=%d: results differ from GOMAXPROCS=1", procs)
		}
	}
	return first
}

// Conv runs Winograd only where winoWins says so, and then only on finite
// values: an input (or G) or weight holding NaN or ±Inf runs im2col, so
// that the result is the direct sum's, bitwise (Winograd's transforms turn
// one Inf into NaN: Inf − Inf in Aᵀ M A).
func TestConvWinoNonFinite(t *testing.T) {
	g := ConvGeom{N: 2, C: 260, H: 27, W: 28, Cout: 256, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, HO: 27, WO: 28}
	if !winoWins(&g, ConvForward) || !winoWins(&g, ConvInput) {
		t.Fatal("winoWins: false for the test's geometry")
	}
	r := rand.New(rand.NewPCG(5, 5))
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, mode := range []ConvMode{ConvForward, ConvInput} {
			x, w, gr := normals[float64](r, g.N*g.C*g.H*g.W), normals[float64](r, g.Cout*g.Rows()), normals[float64](r, g.N*g.Cout*g.L())
			a, size := x, len(gr)
			if mode == ConvInput {
				a, size = gr, len(x)
			}
			for _, where := range [][]float64{a, w} {
				where[len(where)/3] = bad
				want, got := make([]float64, size), make([]float64, size)
				must(t, convGEMM(&g, mode, gemmProduct[float64], want, a, w, nil))
				must(t, Conv(&g, mode, gemmProduct[float64], got, a, w, nil))
				if !slices.Equal(bitsOf(got), bitsOf(want)) {
					t.Fatalf("%v, mode %d: Conv differs from im2col", bad, mode)
				}
				where[len(where)/3] = 1
			}
		}
	}
	// Why: one +Inf in the input, Winograd's own output holds NaN where
	// im2col's holds Inf.
	x, w := normals[float64](r, g.N*g.C*g.H*g.W), normals[float64](r, g.Cout*g.Rows())
	x[5*g.W+5] = math.Inf(1)
	want, got := make([]float64, g.N*g.Cout*g.L()), make([]float64, g.N*g.Cout*g.L())
	must(t, convGEMM(&g, ConvForward, gemmProduct[float64], want, x, w, nil))
	if _, err := convWino(&g, ConvForward, gemmProduct[float64], got, x, w, nil); err != nil {
		t.Fatal(err)
	}
	nan := 0
	for i, v := range got {
		if math.IsNaN(v) && !math.IsNaN(want[i]) {
			nan++
		}
	}
	t.Logf("Winograd alone: %d outputs NaN where im2col's are not", nan)
}

// Conv takes Winograd for the geometries of winoWins and im2col for the
// others, and winoForce overrides it both ways.
func TestConvWinoRule(t *testing.T) {
	geom := func(n, c, side int) ConvGeom {
		return ConvGeom{N: n, C: c, H: side, W: side, Cout: c, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, HO: side, WO: side}
	}
	strided, grouped := geom(1, 64, 56), geom(1, 64, 56)
	strided.SH, strided.HO = 2, 28
	grouped.Groups = 2
	for _, c := range []struct {
		name           string
		g              ConvGeom
		force          int
		forward, input bool
	}{
		{"64 channels, 56x56", geom(1, 64, 56), 0, true, false},
		{"64 channels, 56x56, batch 2", geom(2, 64, 56), 0, true, false},
		{"64 channels, 56x56, batch 4", geom(4, 64, 56), 0, true, true},
		{"64 channels, 16x16, batch 4", geom(4, 64, 16), 0, true, true},
		{"64 channels, 14x14, batch 4", geom(4, 64, 14), 0, true, false},
		{"64 channels, 14x14, batch 8", geom(8, 64, 14), 0, true, true},
		{"64 channels, 8x8, batch 8", geom(8, 64, 8), 0, true, false},
		{"256 channels, 28x28", geom(1, 256, 28), 0, true, false},
		{"256 channels, 28x28, batch 2", geom(2, 256, 28), 0, true, true},
		{"256 channels, 16x16", geom(1, 256, 16), 0, true, false},
		{"256 channels, 16x16, batch 2", geom(2, 256, 16), 0, true, true},
		{"128 channels, 32x32, batch 2", geom(2, 128, 32), 0, true, true},
		{"128 channels, 16x16, batch 2", geom(2, 128, 16), 0, true, true},
		{"256 channels, 8x8, batch 2", geom(2, 256, 8), 0, false, false},
		{"64 channels, 16x16, batch 2", geom(2, 64, 16), 0, true, false},
		{"256 channels, 14x14", geom(1, 256, 14), 0, false, false},
		{"256 channels, 14x14, batch 2", geom(2, 256, 14), 0, false, false},
		{"256 channels, 14x14, batch 8", geom(8, 256, 14), 0, true, true},
		{"32 channels", geom(8, 32, 56), 0, false, false},
		{"forced", geom(1, 8, 4), 1, true, true},
		{"off", geom(8, 256, 56), -1, false, false},
		{"strided", strided, 1, false, false},
		{"grouped", grouped, 1, false, false},
	} {
		winoForce = c.force
		if got := winoWins(&c.g, ConvForward); got != c.forward {
			t.Errorf("%s: winoWins(ConvForward) = %v, want %v", c.name, got, c.forward)
		}
		if got := winoWins(&c.g, ConvInput); got != c.input {
			t.Errorf("%s: winoWins(ConvInput) = %v, want %v", c.name, got, c.input)
		}
		if winoWins(&c.g, ConvWeight) {
			t.Errorf("%s: winoWins(ConvWeight) = true", c.name)
		}
	}
	winoForce = 0
}

// winoAsmModes lists the assembly loops of Winograd's transforms this CPU
// runs ("avx512", "avx2"; AVX2's where AVX-512's are too), skipping t
// when there are none; setWinoAsm switches to one of them or to "go" (the
// Go loops) until t ends.
func winoAsmModes(t *testing.T) []string {
	var modes []string
	if winoAVX512 {
		modes = append(modes, "avx512")
	}
	if winoAVX2 {
		modes = append(modes, "avx2")
	}
	if len(modes) == 0 {
		t.Skip("no assembly loops on this machine or build")
	}
	return modes
}

func setWinoAsm(t *testing.T, mode string) {
	a512, a2 := winoAVX512, winoAVX2
	t.Cleanup(func() { winoAVX512, winoAVX2 = a512, a2 })
	winoAVX512, winoAVX2 = mode == "avx512", mode == "avx2"
}

// Winograd's assembly loops (winoAVX512, winoAVX2) give the Go loops'
// bits.
func TestConvWinoAsmMatchesGo(t *testing.T) {
	for _, mode := range winoAsmModes(t) {
		t.Run(mode, func(t *testing.T) { convWinoAsmMatchesGo(t, mode) })
	}
}

func convWinoAsmMatchesGo(t *testing.T, asm string) {
	wide, eights := 0, 0 // the geometries with a block of 16 tiles for the assembly, and with one of 8 (the input transform's)
	for _, g := range winoGeoms() {
		if min(g.WO, g.W) >= 32 {
			wide++
		}
		if (g.WO+1)/2%16 >= 8 {
			eights++
		}
		for _, mode := range []ConvMode{ConvForward, ConvInput} {
			r := newRand(&g)
			a, w, bias := normals[float32](r, g.N*g.C*g.H*g.W), normals[float32](r, g.Cout*g.Rows()), normals[float32](r, g.Cout)
			size := g.N * g.Cout * g.L()
			if mode == ConvInput {
				a, bias, size = normals[float32](r, size), nil, len(a)
			}
			var outs [2][]float32
			for i, m := range []string{asm, "go"} {
				setWinoAsm(t, m)
				outs[i] = make([]float32, size)
				if _, err := convWino(&g, mode, gemmProduct[float32], outs[i], a, w, bias); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(bitsOf(outs[0]), bitsOf(outs[1])) {
				t.Fatalf("%+v, mode %d: %s assembly and Go loops differ", g, mode, asm)
			}
		}
	}
	if wide == 0 || eights == 0 {
		t.Fatalf("%d geometries reach the assembly loops' blocks of 16, %d the input transform's block of 8", wide, eights)
	}
}

// winoWeights reports a float32 weight holding ±Inf or NaN as not finite
// wherever it is: among the kernels the assembly transforms (blocks of 16
// input channels) and among those the Go loop does, weight as it is
// (ConvForward) and turned (ConvInput).
func TestConvWinoWeightsNonFinite32(t *testing.T) {
	g := ConvGeom{N: 1, C: 37, H: 8, W: 8, Cout: 35, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, HO: 8, WO: 8}
	r := rand.New(rand.NewPCG(9, 9))
	for _, mode := range []ConvMode{ConvForward, ConvInput} {
		p := newWinoPlan(&g, mode)
		su := winoStride(p.cout * p.cin)
		u := make([]float32, 16*su)
		w := normals[float32](r, g.Cout*g.Rows())
		if !winoWeights(p, w, u, su) {
			t.Fatalf("mode %d: finite weight reported not finite", mode)
		}
		// Kernel (o, i) of the plan: w[o, i] or, turned, w[i, o].
		at := func(o, i int) int {
			if p.flip {
				return (i*p.cout + o) * 9
			}
			return (o*p.cin + i) * 9
		}
		for _, bad := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
			for _, k := range []int{at(3, 5) + 4, at(p.cout-1, 31) + 8, at(2, p.cin-1)} { // in the assembly's blocks, and past them
				old := w[k]
				w[k] = bad
				if winoWeights(p, w, u, su) {
					t.Errorf("mode %d: %v at %d reported finite", mode, bad, k)
				}
				w[k] = old
			}
		}
	}
}
