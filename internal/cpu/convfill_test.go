package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/gops-dev/gops/internal/gemm"
	"github.com/gops-dev/gops/internal/par"
)

// TestConvWeightFilled checks ConvWeight's filled-panel path bitwise
// against gemm.Gemm on the samples' gradients and Im2col columns laid side
// by side (G [Cout/Groups, N·L] times cols [Rows, N·L]ᵀ per group), and to
// 1e-4 relative against convGEMM's per-sample products, float32 and
// float64, on geometries with padding, stride, dilation, groups, pointwise
// and strided 1×1 kernels, widths that are and are not the output's,
// column rows that end in a partial panel and positions that end in a
// partial K block, batches of 1 to 3, at GOMAXPROCS 1, 2 and 3; a NaN in
// the input reaches the gradient as it does convGEMM's.
func TestConvWeightFilled(t *testing.T) {
	for _, g := range fillGeoms(t) {
		name := fmt.Sprintf("%dx%dx%dx%d-%d-k%dx%d-s%d-g%d", g.N, g.C, g.H, g.W, g.Cout, g.KH, g.KW, g.SH, g.Groups)
		t.Run(name+"/float32", func(t *testing.T) { testConvWeightFilled[float32](t, g) })
		t.Run(name+"/float64", func(t *testing.T) { testConvWeightFilled[float64](t, g) })
	}
}

// fillGeoms are the filled paths' test geometries, output sizes set.
func fillGeoms(t *testing.T) []ConvGeom {
	geoms := []ConvGeom{
		{N: 2, C: 64, H: 16, W: 16, Cout: 64, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 3, C: 37, H: 23, W: 19, Cout: 29, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 1, C: 40, H: 17, W: 21, Cout: 50, Groups: 1, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 2, C: 32, H: 12, W: 12, Cout: 24, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 2, PW: 2, DH: 2, DW: 2},
		{N: 2, C: 96, H: 9, W: 9, Cout: 40, Groups: 2, KH: 3, KW: 3, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1},
		{N: 2, C: 100, H: 30, W: 30, Cout: 70, Groups: 1, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1},
		{N: 2, C: 128, H: 14, W: 14, Cout: 64, Groups: 1, KH: 1, KW: 1, SH: 2, SW: 2, DH: 1, DW: 1},
		{N: 1, C: 3, H: 40, W: 40, Cout: 64, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 2, C: 24, H: 5, W: 40, Cout: 16, Groups: 1, KH: 1, KW: 5, SH: 1, SW: 1, PH: 0, PW: 2, DH: 1, DW: 1},
		{N: 2, C: 256, H: 2, W: 2, Cout: 40, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 1, C: 16, H: 70, W: 3, Cout: 33, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 2, C: 64, H: 3, W: 3, Cout: 64, Groups: 2, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 3, C: 200, H: 7, W: 5, Cout: 30, Groups: 1, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 2, C: 30, H: 19, W: 57, Cout: 20, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 2, C: 20, H: 9, W: 30, Cout: 12, Groups: 1, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2, DH: 1, DW: 1},
	}
	for i := range geoms {
		geoms[i] = edgeGeom(t, geoms[i])
	}
	return geoms
}

// TestConvForwardFilled checks ConvForward's filled-panel path bitwise
// against convGEMMWith (im2col of row blocks, then the products), with and
// without a bias and an epilogue (scale and shift, residual, ReLU),
// float32 and float64, on fillGeoms at GOMAXPROCS 1, 2 and 3, a NaN in
// the input included.
func TestConvForwardFilled(t *testing.T) {
	for _, g := range fillGeoms(t) {
		name := fmt.Sprintf("%dx%dx%dx%d-%d-k%dx%d-s%d-g%d", g.N, g.C, g.H, g.W, g.Cout, g.KH, g.KW, g.SH, g.Groups)
		t.Run(name+"/float32", func(t *testing.T) { testConvForwardWith[float32](t, g, convForwardFilled[float32]) })
		t.Run(name+"/float64", func(t *testing.T) { testConvForwardWith[float64](t, g, convForwardFilled[float64]) })
	}
}

// nanBias is n normal biases, every third a quiet NaN of its own
// payload: where the output is NaN too (the input's NaN under the
// kernel), the sum's payload shows how the bias was added.
func nanBias[T float32 | float64](r *rand.Rand, n int) []T {
	b := normals[T](r, n)
	for i := 0; i < n; i += 3 {
		if _, ok := any(b[i]).(float32); ok {
			b[i] = T(math.Float32frombits(0x7fc00000 | uint32(r.IntN(1<<22))))
		} else {
			b[i] = T(math.Float64frombits(0x7ff8000000000000 | uint64(r.Int64N(1<<51))))
		}
	}
	return b
}

// testConvForwardWith checks path, a ConvForward, bitwise against
// convGEMMWith on g (NaN payloads and signs of zero included).
func testConvForwardWith[T float32 | float64](t *testing.T, g ConvGeom, path func(g *ConvGeom, out, x, w, bias []T, ep *Epilogue[T]) error) {
	r := rand.New(rand.NewPCG(uint64(g.Cout), uint64(g.H)))
	x, w := normals[T](r, g.N*g.C*g.H*g.W), normals[T](r, g.Cout*g.Rows())
	x[len(x)/2] = T(math.NaN())
	y := g.N * g.Cout * g.L()
	for _, tc := range []struct {
		name string
		bias []T
		ep   *Epilogue[T]
	}{
		{"plain", nil, nil},
		{"bias", normals[T](r, g.Cout), nil},
		{"NaN bias", nanBias[T](r, g.Cout), nil},
		{"epilogue", normals[T](r, g.Cout), &Epilogue[T]{Scale: normals[T](r, g.Cout), Shift: normals[T](r, g.Cout), Residual: normals[T](r, y), ReLU: true}},
	} {
		want := make([]T, y)
		if err := convGEMMWith(&g, ConvForward, nil, want, x, w, tc.bias, tc.ep); err != nil {
			t.Fatal(err)
		}
		for _, procs := range []int{1, 2, 3} {
			got := make([]T, y)
			for i := range got {
				got[i] = T(math.Inf(-1)) // overwritten
			}
			old := runtime.GOMAXPROCS(procs)
			err := path(&g, got, x, w, tc.bias, tc.ep)
			runtime.GOMAXPROCS(old)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(bitsOf(got), bitsOf(want)) {
				t.Fatalf("%s, GOMAXPROCS %d: the path differs from convGEMMWith", tc.name, procs)
			}
		}
	}
}

func testConvWeightFilled[T float32 | float64](t *testing.T, g ConvGeom) {
	r := rand.New(rand.NewPCG(uint64(g.C), uint64(g.W)))
	x, gr := normals[T](r, g.N*g.C*g.H*g.W), normals[T](r, g.N*g.Cout*g.L())
	x[len(x)/3] = T(math.NaN())
	// An Inf at the end of an image row: the rows read in place
	// (shiftedPanel) read it at positions they then clear.
	x[len(x)/2/g.W*g.W+g.W-1] = T(math.Inf(1))
	l, rows, cog, nl := g.L(), g.Rows(), g.Cout/g.Groups, g.N*g.L()
	want := make([]T, g.Cout*rows)
	cols := make([]T, g.C*g.K()*l)
	for gi := 0; gi < g.Groups; gi++ {
		ga, ca := make([]T, cog*nl), make([]T, rows*nl) // the group's G and columns, samples side by side
		for n := 0; n < g.N; n++ {
			Im2col(&g, x[n*g.C*g.H*g.W:(n+1)*g.C*g.H*g.W], cols)
			for i := 0; i < cog; i++ {
				copy(ga[i*nl+n*l:][:l], gr[(n*g.Cout+gi*cog+i)*l:][:l])
			}
			for r := 0; r < rows; r++ {
				copy(ca[r*nl+n*l:][:l], cols[(gi*rows+r)*l:][:l])
			}
		}
		if err := gemm.Gemm(false, true, cog, rows, nl, 1, ga, nl, ca, nl, 0, want[gi*cog*rows:], rows); err != nil {
			t.Fatal(err)
		}
	}
	per := make([]T, len(want))
	if err := convGEMM(&g, ConvWeight, nil, per, x, gr, nil); err != nil {
		t.Fatal(err)
	}
	for i := range per {
		if per[i] == want[i] || per[i] != per[i] && want[i] != want[i] {
			continue
		}
		if d := math.Abs(float64(per[i] - want[i])); !(d <= 1e-4*(1+math.Abs(float64(want[i])))) {
			t.Fatalf("element %d: %v, convGEMM %v", i, want[i], per[i])
		}
	}
	for _, procs := range []int{1, 2, 3} {
		got := make([]T, len(want))
		for i := range got {
			got[i] = T(math.Inf(1)) // overwritten: the first sample's beta is 0
		}
		old := runtime.GOMAXPROCS(procs)
		err := convWeightFilled(&g, got, x, gr)
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, func(a, b T) bool { return a == b || a != a && b != b }) {
			t.Fatalf("GOMAXPROCS %d: convWeightFilled differs from convGEMM", procs)
		}
	}
}

// TestConvInputFilled checks ConvInput's filled path (the samples side by
// side, goroutines over input channels) bitwise against convGEMMWith's
// (a product per sample and chunk of channels, then Col2im), float32 and
// float64, on fillGeoms at GOMAXPROCS 1, 2 and 3, a NaN in the gradient
// included.
func TestConvInputFilled(t *testing.T) {
	for _, g := range fillGeoms(t) {
		if g.Pointwise() {
			continue // its products write the input's gradient in place
		}
		name := fmt.Sprintf("%dx%dx%dx%d-%d-k%dx%d-s%d-g%d", g.N, g.C, g.H, g.W, g.Cout, g.KH, g.KW, g.SH, g.Groups)
		t.Run(name+"/float32", func(t *testing.T) { testConvInputFilled[float32](t, g) })
		t.Run(name+"/float64", func(t *testing.T) { testConvInputFilled[float64](t, g) })
	}
}

func testConvInputFilled[T float32 | float64](t *testing.T, g ConvGeom) {
	r := rand.New(rand.NewPCG(uint64(g.Cout), uint64(g.W)))
	gr, w := normals[T](r, g.N*g.Cout*g.L()), normals[T](r, g.Cout*g.Rows())
	gr[len(gr)/2] = T(math.NaN())
	want := make([]T, g.N*g.C*g.H*g.W) // both add into a cleared gradient
	if err := convGEMMWith(&g, ConvInput, nil, want, gr, w, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, procs := range []int{1, 2, 3} {
		got := make([]T, len(want))
		old := runtime.GOMAXPROCS(procs)
		err := convInputFilled(&g, got, gr, w)
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, func(a, b T) bool { return a == b || a != a && b != b }) {
			t.Fatalf("GOMAXPROCS %d: convInputFilled differs from convGEMMWith", procs)
		}
	}
}

// Conv's weight gradient is bitwise the same at GOMAXPROCS 1, 2 and 3 and
// while another job holds the workers (par.Outer): the filled path and
// convGEMM sum the samples differently, so the choice between them
// depends on the geometry alone (a choice by the worker count once gave
// different bits on the same inputs).
func TestConvWeightAcrossProcs(t *testing.T) {
	for _, g := range append(fillGeoms(t),
		ConvGeom{N: 2, C: 16, H: 10, W: 10, Cout: 16, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, HO: 10, WO: 10},
		ConvGeom{N: 3, C: 40, H: 7, W: 9, Cout: 24, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, HO: 7, WO: 9}) {
		r := rand.New(rand.NewPCG(uint64(g.C), 3))
		x, gr := normals[float32](r, g.N*g.C*g.H*g.W), normals[float32](r, g.N*g.Cout*g.L())
		var first []float32
		for _, run := range []struct {
			procs int
			outer bool
		}{{1, false}, {2, false}, {3, false}, {2, true}} {
			got := make([]float32, g.Cout*g.Rows())
			old := runtime.GOMAXPROCS(run.procs)
			end := func() {}
			if run.outer {
				end = par.Outer(2)
			}
			err := Conv(&g, ConvWeight, nil, got, x, gr, nil)
			end()
			runtime.GOMAXPROCS(old)
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = got
			} else if !slices.Equal(bitsOf(got), bitsOf(first)) {
				t.Fatalf("%+v: GOMAXPROCS %d (outer job %v): not the bits of GOMAXPROCS 1", g, run.procs, run.outer)
			}
		}
	}
}

// TestConvPointwisePacked: a pointwise forward and input gradient on
// gops' own product (the groups' weights, transposed for the gradient,
// packed once for all the samples, packedProducts) are bitwise the same
// members on gemm.Gemm a sample at a time, with a bias (the forward's
// holding NaN payloads, with and without an epilogue after it), one and
// two groups, batches of 2 to 6, positions fewer than a panel (1, 9), a
// multiple of it (64) and not (55, 63, 196), channels over several K
// blocks (300), a NaN in the input (and in the gradient's G), float32 and
// float64, at GOMAXPROCS 1, 2 and 3 (a batch above the workers packs
// once and runs one product over the batch, pointwiseBatch, its panels
// crossing from sample to sample; the others a sample at a time).
func TestConvPointwisePacked(t *testing.T) {
	for _, g := range []ConvGeom{
		{N: 2, C: 64, H: 7, W: 9, Cout: 100, Groups: 1, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, HO: 7, WO: 9},
		{N: 3, C: 40, H: 14, W: 14, Cout: 36, Groups: 2, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, HO: 14, WO: 14},
		{N: 5, C: 33, H: 5, W: 11, Cout: 70, Groups: 1, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, HO: 5, WO: 11},
		{N: 5, C: 300, H: 7, W: 7, Cout: 140, Groups: 1, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, HO: 7, WO: 7},
		{N: 4, C: 6, H: 3, W: 3, Cout: 10, Groups: 2, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, HO: 3, WO: 3},
		{N: 6, C: 8, H: 1, W: 1, Cout: 12, Groups: 1, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, HO: 1, WO: 1},
		{N: 4, C: 16, H: 8, W: 8, Cout: 20, Groups: 1, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, HO: 8, WO: 8},
	} {
		testConvPointwisePacked[float32](t, g)
		testConvPointwisePacked[float64](t, g)
	}
}

func testConvPointwisePacked[T float32 | float64](t *testing.T, g ConvGeom) {
	r := rand.New(rand.NewPCG(uint64(g.C), uint64(g.Cout)))
	x, w, bias := normals[T](r, g.N*g.C*g.H*g.W), normals[T](r, g.Cout*g.Rows()), nanBias[T](r, g.Cout)
	x[len(x)/2] = T(math.NaN())
	y := g.N * g.Cout * g.L()
	for _, ep := range []*Epilogue[T]{nil, {Scale: normals[T](r, g.Cout), Shift: normals[T](r, g.Cout), Residual: normals[T](r, y), ReLU: true}} {
		want := make([]T, y)
		must(t, convGEMMWith(&g, ConvForward, gemmProduct[T], want, x, w, bias, ep))
		for _, procs := range []int{1, 2, 3} {
			got := make([]T, len(want))
			old := runtime.GOMAXPROCS(procs)
			err := convGEMMWith(&g, ConvForward, nil, got, x, w, bias, ep)
			runtime.GOMAXPROCS(old)
			must(t, err)
			if !slices.Equal(bitsOf(got), bitsOf(want)) {
				t.Fatalf("%T %+v, epilogue %v, GOMAXPROCS %d: packed weights differ from a product a sample", got[0], g, ep != nil, procs)
			}
		}
	}
	gr := normals[T](r, g.N*g.Cout*g.L())
	gr[len(gr)/3] = T(math.NaN())
	wantDX := make([]T, len(x))
	must(t, convGEMMWith(&g, ConvInput, gemmProduct[T], wantDX, gr, w, nil, nil))
	for _, procs := range []int{1, 2, 3} {
		got := make([]T, len(x))
		old := runtime.GOMAXPROCS(procs)
		err := convGEMMWith(&g, ConvInput, nil, got, gr, w, nil, nil)
		runtime.GOMAXPROCS(old)
		must(t, err)
		if !slices.Equal(bitsOf(got), bitsOf(wantDX)) {
			t.Fatalf("%T %+v, GOMAXPROCS %d: the input gradient by packed transposed weights differs from a product a sample", got[0], g, procs)
		}
	}
}

// TestConvForwardPhased checks ConvForward's phased path
// (convForwardPhased called directly, whether Conv's gates would pick it
// or not) bitwise against convGEMMWith, as TestConvForwardFilled, on
// fillGeoms and phasedGeoms. TestPhasedEdges goes through Conv's gates.
func TestConvForwardPhased(t *testing.T) {
	geoms := append(fillGeoms(t), phasedGeoms(t)...)
	for _, g := range geoms {
		name := fmt.Sprintf("%dx%dx%dx%d-%d-k%dx%d-s%d-g%d", g.N, g.C, g.H, g.W, g.Cout, g.KH, g.KW, g.SH, g.Groups)
		t.Run(name+"/float32", func(t *testing.T) { testConvForwardWith[float32](t, g, convForwardPhased[float32]) })
		t.Run(name+"/float64", func(t *testing.T) { testConvForwardWith[float64](t, g, convForwardPhased[float64]) })
	}
}

// phasedGeoms are wide geometries for the phased paths: the stem's 7×7
// stride 2 (which Conv's gates send there) and, called directly, 3×3 at
// stride 2 and 3, groups, dilation 2 at stride 2, widths that end in a
// partial panel, chunks that cross output rows.
func phasedGeoms(t *testing.T) []ConvGeom {
	geoms := []ConvGeom{
		{N: 2, C: 3, H: 96, W: 96, Cout: 64, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 1, C: 3, H: 101, W: 77, Cout: 20, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 2, C: 8, H: 61, W: 59, Cout: 32, Groups: 1, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 1, C: 6, H: 70, W: 71, Cout: 30, Groups: 3, KH: 3, KW: 3, SH: 3, SW: 3, PH: 1, PW: 2, DH: 1, DW: 1},
		{N: 2, C: 4, H: 50, W: 45, Cout: 16, Groups: 1, KH: 3, KW: 5, SH: 2, SW: 2, PH: 2, PW: 4, DH: 2, DW: 2},
		{N: 1, C: 5, H: 80, W: 90, Cout: 24, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1},
	}
	for i := range geoms {
		geoms[i] = edgeGeom(t, geoms[i])
	}
	return geoms
}

// TestConvWeightPhased checks ConvWeight's phased path bitwise against
// convGEMMWith (Im2col of spans, then the products), float32 and float64,
// on fillGeoms and phasedGeoms at GOMAXPROCS 1, 2 and 3, a NaN and an Inf
// in the input included.
func TestConvWeightPhased(t *testing.T) {
	for _, g := range append(fillGeoms(t), phasedGeoms(t)...) {
		name := fmt.Sprintf("%dx%dx%dx%d-%d-k%dx%d-s%d-g%d", g.N, g.C, g.H, g.W, g.Cout, g.KH, g.KW, g.SH, g.Groups)
		t.Run(name+"/float32", func(t *testing.T) { testConvWeightPhased[float32](t, g) })
		t.Run(name+"/float64", func(t *testing.T) { testConvWeightPhased[float64](t, g) })
	}
}

func testConvWeightPhased[T float32 | float64](t *testing.T, g ConvGeom) {
	r := rand.New(rand.NewPCG(uint64(g.C), uint64(g.WO)))
	x, gr := normals[T](r, g.N*g.C*g.H*g.W), normals[T](r, g.N*g.Cout*g.L())
	x[len(x)/3] = T(math.NaN())
	x[len(x)/2/g.W*g.W+g.W-1] = T(math.Inf(1))
	want := make([]T, g.Cout*g.Rows())
	if err := convGEMMWith(&g, ConvWeight, nil, want, x, gr, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, procs := range []int{1, 2, 3} {
		got := make([]T, len(want))
		for i := range got {
			got[i] = T(math.Inf(1)) // overwritten: the first span's beta is 0
		}
		old := runtime.GOMAXPROCS(procs)
		err := convWeightPhased(&g, got, x, gr)
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, func(a, b T) bool { return a == b || a != a && b != b }) {
			t.Fatalf("GOMAXPROCS %d: convWeightPhased differs from convGEMMWith", procs)
		}
	}
}
