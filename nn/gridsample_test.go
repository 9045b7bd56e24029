package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// gridModes are every mode × padding × align_corners combination.
func gridModes() []nn.GridSampleOpts {
	var out []nn.GridSampleOpts
	for _, mode := range []string{"bilinear", "nearest"} {
		for _, pad := range []string{"zeros", "border", "reflection"} {
			for _, ac := range []bool{false, true} {
				out = append(out, nn.GridSampleOpts{Mode: mode, PaddingMode: pad, AlignCorners: ac})
			}
		}
	}
	return out
}

func gridName(o nn.GridSampleOpts) string {
	return fmt.Sprintf("%s/%s/align=%t", o.Mode, o.PaddingMode, o.AlignCorners)
}

// kinkFreeGrid is a grid [n, ho, wo, 2] for an h×w input whose sample
// coordinates (in pixels) stay 0.1 away from integers and half-integers,
// where the interpolation, the clips and the reflections have their kinks
// (nearest: its jumps), and range over the image and beyond it as the
// padding makes interesting: zeros a pixel and a half around the image,
// border two pixels, reflection two image sizes each way.
func kinkFreeGrid(seed uint64, n, ho, wo, h, w int, opts nn.GridSampleOpts) *tensor.Dense {
	r := rand.New(rand.NewPCG(seed, 7))
	coord := func(size int) float64 {
		lo, hi := -1.6, float64(size)+0.6
		switch opts.PaddingMode {
		case "border":
			lo, hi = -2, float64(size)+1
		case "reflection":
			lo, hi = -2*float64(size), 3*float64(size)
		}
		u := math.Floor(lo + r.Float64()*(hi-lo))
		f := 0.1 + 0.3*r.Float64()
		if r.IntN(2) == 1 {
			f += 0.5
		}
		u += f
		if opts.AlignCorners {
			return 2*u/float64(size-1) - 1
		}
		return (2*u+1)/float64(size) - 1
	}
	d := make([]float64, n*ho*wo*2)
	for i := 0; i < len(d); i += 2 {
		d[i], d[i+1] = coord(w), coord(h)
	}
	return tensor.New(tensor.WithShape(n, ho, wo, 2), tensor.WithBacking(d))
}

// gridCube is GridSample(sin(in[0]), in[1])³ (cubeOf): nonlinear in the
// input before and after, and in the grid through the interpolation and
// the cube, so derivatives of orders 1–3 pass through every member.
func gridCube(opts nn.GridSampleOpts) graphtest.Func {
	return cubeOf(func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.GridSample(in[0], in[1], opts) })
}

// TestGridSampleGrad: derivatives of orders 1–3 (float64, against finite
// differences) w.r.t. the input, the grid and both together, cross terms
// included, for every mode, padding and align_corners, at grid points away
// from the kinks.
func TestGridSampleGrad(t *testing.T) {
	for i, opts := range gridModes() {
		t.Run(gridName(opts), func(t *testing.T) {
			in := []*tensor.Dense{smoothTensor(1, 2, 2, 4, 5), kinkFreeGrid(uint64(i), 2, 3, 2, 4, 5, opts)}
			order := 3
			if testing.Short() {
				order = 2
			}
			for _, wrt := range [][]int{{0}, {1}, {0, 1}} {
				t.Run(fmt.Sprint("wrt", wrt), func(t *testing.T) {
					o := graphtest.Options{Order: order, Wrt: wrt, Seed: uint64(3 + i), Eps: 1e-6, RTol: 2e-5, ATol: 1e-6}
					if err := graphtest.Check(gridCube(opts), in, o); err != nil {
						t.Fatal(err)
					}
				})
			}
		})
	}
}

// TestGridSampleVMs: TapeMachine == LispMachine (float32 and float64) and
// bitwise determinism across GOMAXPROCS, values and first-order gradients,
// for every mode and padding; the sizes make several pixel blocks and
// planes per worker.
func TestGridSampleVMs(t *testing.T) {
	for i, opts := range gridModes() {
		t.Run(gridName(opts), func(t *testing.T) {
			in := []*tensor.Dense{smoothTensor(1, 2, 3, 9, 11), kinkFreeGrid(uint64(40+i), 2, 23, 31, 9, 11, opts)}
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				x, o := in, graphtest.Options{RTol: 1e-12, ATol: 1e-12}
				if dt == tensor.Float32 {
					x, o.RTol, o.ATol = graphtest.Float32(in), 1e-5, 1e-5
				}
				if err := graphtest.CheckVMs(gridCube(opts), x, o); err != nil {
					t.Fatalf("%v: %v", dt, err)
				}
			}
			if err := graphtest.CheckDeterministic(gridCube(opts), graphtest.Float32(in), []int{0, 1}, 1, 2, 3, 8); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestGridSampleSecondOrderDeterministic: the second-order graph (the
// gradient of a penalty on the grid gradient) is bitwise the same across
// GOMAXPROCS.
func TestGridSampleSecondOrderDeterministic(t *testing.T) {
	opts := nn.GridSampleOpts{PaddingMode: "reflection"}
	in := []*tensor.Dense{smoothTensor(1, 2, 3, 9, 11), kinkFreeGrid(9, 2, 23, 31, 9, 11, opts)}
	penalty := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		y, err := nn.GridSample(in[0], in[1], opts)
		if err != nil {
			return nil, err
		}
		g, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y)))), in[1])
		if err != nil {
			return nil, err
		}
		return gorgonia.Square(g[0])
	}
	if err := graphtest.CheckDeterministic(penalty, graphtest.Float32(in), []int{0, 1}, 1, 2, 3, 8); err != nil {
		t.Fatal(err)
	}
}

// TestAffineGridGrad: derivatives of orders 1–3 w.r.t. theta through
// AffineGrid into GridSample (bilinear, every padding, align_corners both
// ways) and with the input; the values of AffineGrid itself.
func TestAffineGridGrad(t *testing.T) {
	for i, pad := range []string{"zeros", "border", "reflection"} {
		for _, ac := range []bool{false, true} {
			opts := nn.GridSampleOpts{PaddingMode: pad, AlignCorners: ac}
			t.Run(gridName(opts), func(t *testing.T) {
				// A rotation and scale by 0.8 and a shift: the sample points
				// fall off the pixel lattice.
				theta := tensor.New(tensor.WithShape(2, 2, 3), tensor.WithBacking([]float64{
					0.77, -0.31, 0.113, 0.29, 0.81, -0.057,
					-0.93, 0.21, 0.071, -0.17, 1.13, 0.33}))
				f := cubeOf(func(in gorgonia.Nodes) (*gorgonia.Node, error) {
					grid, err := nn.AffineGrid(in[1], [4]int{2, 2, 3, 4}, ac)
					if err != nil {
						return nil, err
					}
					return nn.GridSample(in[0], grid, opts)
				})
				order := 3
				if testing.Short() {
					order = 2
				}
				in := []*tensor.Dense{smoothTensor(1, 2, 2, 4, 5), theta}
				for _, wrt := range [][]int{{1}, {0, 1}} {
					o := graphtest.Options{Order: order, Wrt: wrt, Seed: uint64(11 + i), RTol: 2e-5, ATol: 1e-6}
					if err := graphtest.Check(f, in, o); err != nil {
						t.Fatalf("wrt %v: %v", wrt, err)
					}
				}
			})
		}
	}
}

// TestAffineGridValues: torch's affine_grid for the identity (the base
// coordinates) and a general theta, both align_corners.
func TestAffineGridValues(t *testing.T) {
	for _, c := range []struct {
		ac   bool
		h, w int
		xs   []float64
		ys   []float64
	}{
		{false, 2, 4, []float64{-0.75, -0.25, 0.25, 0.75}, []float64{-0.5, 0.5}},
		{true, 3, 1, []float64{0}, []float64{-1, 0, 1}},
	} {
		g := gorgonia.NewGraph()
		theta := []float64{0.5, 2, 0.25, -1, 0.1, 3}
		tn := gorgonia.NewTensor(g, tensor.Float64, 3, gorgonia.WithShape(1, 2, 3), gorgonia.WithName("theta"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(1, 2, 3), tensor.WithBacking(append([]float64(nil), theta...)))))
		grid, err := nn.AffineGrid(tn, [4]int{1, 3, c.h, c.w}, c.ac)
		if err != nil {
			t.Fatal(err)
		}
		got, err := graphtest.Eval(g, grid)
		if err != nil {
			t.Fatal(err)
		}
		for i, y := range c.ys {
			for j, x := range c.xs {
				p := 2 * (i*c.w + j)
				wx, wy := theta[0]*x+theta[1]*y+theta[2], theta[3]*x+theta[4]*y+theta[5]
				if math.Abs(got[0][p]-wx) > 1e-15 || math.Abs(got[0][p+1]-wy) > 1e-15 {
					t.Fatalf("align=%t: grid[%d, %d] = (%v, %v), want (%v, %v)", c.ac, i, j, got[0][p], got[0][p+1], wx, wy)
				}
			}
		}
	}
}

// gridEval evaluates GridSample(x, grid) with the gradients of
// Σ G·out w.r.t. x and grid (G = 1 + the element index / 10).
func gridEval(t *testing.T, x, grid *tensor.Dense, opts nn.GridSampleOpts) (out, dx, dgrid []float64) {
	t.Helper()
	g, nodes := graphtest.Inputs([]*tensor.Dense{x, grid})
	y, err := nn.GridSample(nodes[0], nodes[1], opts)
	if err != nil {
		t.Fatal(err)
	}
	gd := make([]float64, y.Shape().TotalSize())
	for i := range gd {
		gd[i] = 1 + float64(i)/10
	}
	gn := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(y.Shape()...), gorgonia.WithName("G"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(y.Shape()...), tensor.WithBacking(gd))))
	grads, err := ad.VJP(y, gn, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	v, err := graphtest.Eval(g, y, grads[0], grads[1])
	if err != nil {
		t.Fatal(err)
	}
	return v[0], v[1], v[2]
}

// TestGridSampleSemantics: hand-computed values at the conventions' edge
// cases: the nearest mode's round half to even, an exact border under
// "border" (value the border pixel, gradient w.r.t. the grid 0, torch's
// rule), a reflection, a point half outside under "zeros", NaN and
// infinite grid values (sample nothing, zero gradients).
func TestGridSampleSemantics(t *testing.T) {
	// One 1×4 row, x = 0, 1, 2, 3 → values 1, 10, 100, 1000; pixel u at
	// g = (2u + 1)/4 − 1 (align_corners false: exact in binary, scale 2).
	x := tensor.New(tensor.WithShape(1, 1, 1, 4), tensor.WithBacking([]float64{1, 10, 100, 1000}))
	at := func(us ...float64) *tensor.Dense {
		d := make([]float64, 0, 2*len(us))
		for _, u := range us {
			d = append(d, (2*u+1)/4-1, 0)
		}
		return tensor.New(tensor.WithShape(1, 1, len(us), 2), tensor.WithBacking(d))
	}
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		name   string
		opts   nn.GridSampleOpts
		grid   *tensor.Dense
		out    []float64
		dgridX []float64 // ∂/∂gx of Σ G·out in pixels (divided by the scale 2)
	}{
		{"nearest half to even", nn.GridSampleOpts{Mode: "nearest"}, at(0.5, 1.5, 2.5, 1.4999), []float64{1, 100, 100, 10}, []float64{0, 0, 0, 0}},
		{"border at the borders", nn.GridSampleOpts{PaddingMode: "border"}, at(0, 3, 3.5, -2), []float64{1, 1000, 1000, 1}, []float64{0, 0, 0, 0}},
		{"border inside", nn.GridSampleOpts{PaddingMode: "border"}, at(1, 2.25), []float64{10, 325}, []float64{90, 1.1 * 900}},
		{"reflection", nn.GridSampleOpts{PaddingMode: "reflection"}, at(-1.25, 4.25), []float64{3.25, 775}, []float64{-9, -1.1 * 900}},
		{"zeros half outside", nn.GridSampleOpts{}, at(-0.25, 3.5), []float64{0.75, 500}, []float64{1, -1.1 * 1000}},
		{"NaN and Inf", nn.GridSampleOpts{PaddingMode: "reflection"}, at(nan, inf, -inf), []float64{0, 0, 0}, []float64{0, 0, 0}},
		{"NaN and Inf, zeros", nn.GridSampleOpts{}, at(nan, inf, -inf, -1e300), []float64{0, 0, 0, 0}, []float64{0, 0, 0, 0}},
		{"Inf, border", nn.GridSampleOpts{PaddingMode: "border"}, at(inf, -inf, nan), []float64{1000, 1, 0}, []float64{0, 0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, dx, dgrid := gridEval(t, x, c.grid, c.opts)
			for i, want := range c.out {
				if math.Abs(out[i]-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Fatalf("out %v, want %v", out, c.out)
				}
				if got := dgrid[2*i] / 2; math.Abs(got-c.dgridX[i]) > 1e-9*math.Max(1, math.Abs(got)) {
					t.Fatalf("∂/∂gx %v (×1/2), want %v", dgrid, c.dgridX)
				}
				if dgrid[2*i+1] != 0 && c.opts.PaddingMode != "zeros" && c.opts.PaddingMode != "" {
					t.Fatalf("∂/∂gy %v, want 0 (a single row)", dgrid)
				}
			}
			for _, v := range dx {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("∂/∂input %v", dx)
				}
			}
		})
	}
}

// TestGridSampleEmpty: a batch of 0, no output rows, no channels: empty
// results, zero gradients, in float32 and float64.
func TestGridSampleEmpty(t *testing.T) {
	bare := func(opts nn.GridSampleOpts) graphtest.Func {
		return func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.GridSample(in[0], in[1], opts) }
	}
	for _, c := range []struct {
		name        string
		input, grid *tensor.Dense
	}{
		{"N=0", emptyTensor(0, 2, 4, 5), emptyTensor(0, 3, 2, 2)},
		{"Ho=0", smoothTensor(1, 2, 2, 4, 5), emptyTensor(2, 0, 3, 2)},
		{"C=0", emptyTensor(2, 0, 4, 5), kinkFreeGrid(1, 2, 3, 2, 4, 5, nn.GridSampleOpts{})},
	} {
		for _, opts := range []nn.GridSampleOpts{{}, {Mode: "nearest", PaddingMode: "border"}} {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				t.Run(c.name+"/"+gridName(opts)+"/"+dt.String(), func(t *testing.T) {
					in := []*tensor.Dense{c.input, c.grid}
					if dt == tensor.Float32 {
						in = graphtest.Float32(in)
					}
					if err := graphtest.CheckEmpty(bare(opts), in, []int{0, 1}); err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
	t.Run("AffineGrid/N=0", func(t *testing.T) {
		f := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.AffineGrid(in[0], [4]int{0, 1, 3, 4}, false)
		}
		if err := graphtest.CheckEmpty(f, []*tensor.Dense{emptyTensor(0, 2, 3)}, []int{0}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestGridSampleBadInput: errors that name the tensor and the problem.
func TestGridSampleBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 3, 4, 5), gorgonia.WithName("x"))
	grid := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 3, 3, 2), gorgonia.WithName("grid"))
	grid3 := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 3, 3, 3), gorgonia.WithName("grid3"))
	grid1 := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 3, 3, 2), gorgonia.WithName("grid1"))
	gridR3 := gorgonia.NewTensor(g, tensor.Float64, 3, gorgonia.WithShape(2, 3, 2), gorgonia.WithName("gridR3"))
	grid32 := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(2, 3, 3, 2), gorgonia.WithName("grid32"))
	xInt := gorgonia.NewTensor(g, tensor.Int, 4, gorgonia.WithShape(2, 3, 4, 5), gorgonia.WithName("xInt"))
	xFlat := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 3, 0, 5), gorgonia.WithName("xFlat"))
	theta := gorgonia.NewTensor(g, tensor.Float64, 3, gorgonia.WithShape(2, 2, 3), gorgonia.WithName("theta"))
	theta33 := gorgonia.NewTensor(g, tensor.Float64, 3, gorgonia.WithShape(2, 3, 3), gorgonia.WithName("theta33"))
	theta2 := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(2, 6), gorgonia.WithName("theta2"))
	gs := func(x, grid *gorgonia.Node, opts nn.GridSampleOpts) func() (*gorgonia.Node, error) {
		return func() (*gorgonia.Node, error) { return nn.GridSample(x, grid, opts) }
	}
	ag := func(theta *gorgonia.Node, size [4]int) func() (*gorgonia.Node, error) {
		return func() (*gorgonia.Node, error) { return nn.AffineGrid(theta, size, false) }
	}
	runErrCases(t, []errCase{
		{"nil input", gs(nil, grid, nn.GridSampleOpts{}), "GridSample: input is nil"},
		{"nil grid", gs(x, nil, nn.GridSampleOpts{}), "GridSample: grid is nil"},
		{"grid last dim", gs(x, grid3, nn.GridSampleOpts{}), "grid must be [N, Ho, Wo, 2], got shape (2, 3, 3, 3)"},
		{"grid rank", gs(x, gridR3, nn.GridSampleOpts{}), "grid must have rank 4"},
		{"batch", gs(x, grid1, nn.GridSampleOpts{}), "grid batch 1 differs from input batch 2"},
		{"dtype", gs(x, grid32, nn.GridSampleOpts{}), "grid dtype float32 differs from input dtype float64"},
		{"int input", gs(xInt, grid, nn.GridSampleOpts{}), "input dtype int, want float32 or float64"},
		{"empty plane", gs(xFlat, grid, nn.GridSampleOpts{}), "must have a height and width in [1,"},
		{"mode", gs(x, grid, nn.GridSampleOpts{Mode: "bicubic"}), `Mode "bicubic", want "bilinear" or "nearest"`},
		{"padding", gs(x, grid, nn.GridSampleOpts{PaddingMode: "wrap"}), `PaddingMode "wrap", want "zeros", "border" or "reflection"`},
		{"theta nil", ag(nil, [4]int{2, 1, 3, 3}), "AffineGrid: theta is nil"},
		{"theta shape", ag(theta33, [4]int{2, 1, 3, 3}), "theta must be [N, 2, 3], got shape (2, 3, 3)"},
		{"theta rank", ag(theta2, [4]int{2, 1, 3, 3}), "theta must have rank 3"},
		{"size N", ag(theta, [4]int{3, 1, 3, 3}), "N = 3 differs from theta's batch 2"},
		{"size H", ag(theta, [4]int{2, 1, 0, 3}), "C, H and W must be in [1,"},
		{"size W", ag(theta, [4]int{2, 1, 3, -1}), "C, H and W must be in [1,"},
	})
}

// TestGridSampleHugeGrid: grids far outside the image, in float32 and
// float64, under every mode and padding, sample without out-of-range
// reads and give finite gradients.
func TestGridSampleHugeGrid(t *testing.T) {
	d := []float64{1e30, -1e30, 3e9, -3e9, math.MaxFloat32, 1, -1, math.Inf(-1), 1e-300, math.NaN(), 2.5e9, 0.3}
	for _, opts := range gridModes() {
		for _, f32 := range []bool{false, true} {
			in := []*tensor.Dense{smoothTensor(1, 1, 2, 3, 4), tensor.New(tensor.WithShape(1, 2, 3, 2), tensor.WithBacking(append([]float64(nil), d...)))}
			if f32 {
				in = graphtest.Float32(in)
			}
			g, nodes := graphtest.Inputs(in)
			y, err := nn.GridSample(nodes[0], nodes[1], opts)
			if err != nil {
				t.Fatal(err)
			}
			grads, err := ad.Grad(gorgonia.Must(gorgonia.Sum(y)), nodes...)
			if err != nil {
				t.Fatal(err)
			}
			vals, err := graphtest.Eval(g, y, grads[0], grads[1])
			if err != nil {
				t.Fatalf("%s: %v", gridName(opts), err)
			}
			for _, v := range vals {
				for _, e := range v {
					if math.IsNaN(e) || math.IsInf(e, 0) {
						t.Fatalf("%s f32=%t: %v", gridName(opts), f32, vals)
					}
				}
			}
		}
	}
}

// ExampleGridSample samples a 2×2 image at its centre and at its corners
// (align_corners: ±1 are the corner pixels' centres).
func ExampleGridSample() {
	g := gorgonia.NewGraph()
	img := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 2, 2), gorgonia.WithName("img"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 1, 2, 2), tensor.WithBacking([]float64{1, 2, 3, 4}))))
	grid := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 3, 2), gorgonia.WithName("grid"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 1, 3, 2), tensor.WithBacking([]float64{0, 0, -1, -1, 1, -1}))))
	out, err := nn.GridSample(img, grid, nn.GridSampleOpts{AlignCorners: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The gradient w.r.t. the grid of the centre sample: ∂/∂x = (2 − 1 + 4 − 3)/2 · 1/2.
	d, err := ad.Grad(gorgonia.Must(gorgonia.Sum(out)), grid)
	if err != nil {
		fmt.Println(err)
		return
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Value().Data())
	fmt.Println(d[0].Value().Data().([]float64)[:2])
	// Output:
	// [2.5 1 2]
	// [0.5 1]
}
