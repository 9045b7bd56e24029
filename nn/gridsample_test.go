package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// gridModes are every mode × padding × align_corners combination.
func gridModes() []nn.GridSampleOpts {
	var out []nn.GridSampleOpts
	for _, mode := range []string{"bilinear", "nearest", "bicubic"} {
		for _, pad := range []string{"zeros", "border", "reflection"} {
			for _, ac := range []bool{false, true} {
				out = append(out, nn.GridSampleOpts{Mode: mode, PaddingMode: pad, AlignCorners: ac})
			}
		}
	}
	return out
}

func gridName(o nn.GridSampleOpts) string {
	mode, pad := o.Mode, o.PaddingMode
	if mode == "" {
		mode = "bilinear"
	}
	if pad == "" {
		pad = "zeros"
	}
	return fmt.Sprintf("%s/%s/align=%t", mode, pad, o.AlignCorners)
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
		{"mode", gs(x, grid, nn.GridSampleOpts{Mode: "area"}), `Mode "area", want "bilinear", "nearest" or "bicubic"`},
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

// gridSampleGoldenCase is one grid_sample case of
// testdata/gen_golden_gridsample.py: torch's forward and first-order
// gradients of L = <out, G>, and second-order terms from a float64
// gather-based reference (checked there against torch's first order and
// central differences of it).
type gridSampleGoldenCase struct {
	Name         string    `json:"name"`
	Mode         string    `json:"mode"`
	PaddingMode  string    `json:"padding_mode"`
	AlignCorners bool      `json:"align_corners"`
	InputShape   []int     `json:"input_shape"`
	Input        []float64 `json:"input"`
	GridShape    []int     `json:"grid_shape"`
	Grid         []float64 `json:"grid"`
	GradOutput   []float64 `json:"grad_output"`
	OutputShape  []int     `json:"output_shape"`
	Output       []float64 `json:"output"`
	GradInput    []float64 `json:"grad_input"`
	GradGrid     []float64 `json:"grad_grid"`
	UInput       []float64 `json:"u_input"`
	VGrid        []float64 `json:"v_grid"`
	HVPVInput    []float64 `json:"hvp_v_input"` // ∂<∂L/∂grid, V>/∂input
	HVPVGrid     []float64 `json:"hvp_v_grid"`  // ∂<∂L/∂grid, V>/∂grid
	HVPUInput    []float64 `json:"hvp_u_input"` // ∂<∂L/∂input, U>/∂input (zero)
	HVPUGrid     []float64 `json:"hvp_u_grid"`  // ∂<∂L/∂input, U>/∂grid
	KinkPoints   []int     `json:"kink_points"` // V is zero there
}

// affineGridGoldenCase is one affine_grid case: the grid and the gradient
// of <grid, G> w.r.t. theta.
type affineGridGoldenCase struct {
	Name         string    `json:"name"`
	AlignCorners bool      `json:"align_corners"`
	Size         []int     `json:"size"`
	Theta        []float64 `json:"theta"`
	GradOutput   []float64 `json:"grad_output"`
	OutputShape  []int     `json:"output_shape"`
	Output       []float64 `json:"output"`
	GradTheta    []float64 `json:"grad_theta"`
}

// affineGrid builds the case's theta node and AffineGrid(theta).
func (c *affineGridGoldenCase) affineGrid(gg *goldenGraph) (theta, grid *gorgonia.Node) {
	gg.t.Helper()
	theta = gg.node("theta", []int{c.Size[0], 2, 3}, c.Theta)
	grid, err := nn.AffineGrid(theta, [4]int{c.Size[0], c.Size[1], c.Size[2], c.Size[3]}, c.AlignCorners)
	if err != nil {
		gg.t.Fatal(err)
	}
	return theta, grid
}

// composedGoldenCase is GridSample(input, AffineGrid(theta)) with
// L = <out, G>: the affine case's fields (its output and G those of the
// sampling), torch's gradient w.r.t. input and the reference's gradients
// of <∂L/∂theta, V_theta>.
type composedGoldenCase struct {
	affineGridGoldenCase
	Mode          string    `json:"mode"`
	PaddingMode   string    `json:"padding_mode"`
	InputShape    []int     `json:"input_shape"`
	Input         []float64 `json:"input"`
	GradInput     []float64 `json:"grad_input"`
	VTheta        []float64 `json:"v_theta"`
	HVPTheta      []float64 `json:"hvp_theta"`
	HVPThetaInput []float64 `json:"hvp_theta_input"`
}

// gridSampleGolden is testdata/gridsample_golden.json.gz.
type gridSampleGolden struct {
	Cases         []gridSampleGoldenCase `json:"cases"`
	BicubicCases  []gridSampleGoldenCase `json:"bicubic_cases"`
	AffineCases   []affineGridGoldenCase `json:"affine_cases"`
	ComposedCases []composedGoldenCase   `json:"composed_cases"`
}

func loadGridSampleGolden(t *testing.T) *gridSampleGolden {
	var doc gridSampleGolden
	golden.Decode(t, filepath.Join("..", "testdata", "gridsample_golden.json.gz"), &doc)
	if len(doc.Cases) == 0 || len(doc.BicubicCases) == 0 || len(doc.AffineCases) == 0 || len(doc.ComposedCases) == 0 {
		t.Fatal("gridsample_golden.json.gz: a list of cases is empty")
	}
	return &doc
}

// gridGoldenDtypes: every case runs in float64 and, from the same values
// (all exact in float32), in float32.
var gridGoldenDtypes = []string{"float64", "float32"}

// gridGoldenClose compares got with want: in float64 to 1e-10 (relative,
// and absolute times the values' scale max(1, max|want|)), in float32 to
// 1e-4 (the inputs are exact in float32; the float32 results differ from
// the float64 golden values by rounding only).
func gridGoldenClose(t *testing.T, dtype, what string, got, want []float64) {
	t.Helper()
	scale := 1.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	tol := 1e-10
	if dtype == "float32" {
		tol = 1e-4
	}
	golden.AssertClose(t, what, got, want, tol, tol*scale)
}

// gridSampleAccepts reports whether nn.GridSample builds a node for mode
// (the bicubic cases run only if it does), and the error if not.
func gridSampleAccepts(mode string) error {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 3, 3), gorgonia.WithName("x"))
	grid := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 2, 2, 2), gorgonia.WithName("grid"))
	_, err := nn.GridSample(x, grid, nn.GridSampleOpts{Mode: mode})
	return err
}

// TestGridSampleGolden: for every mode × padding × align_corners (bicubic
// only if GridSample accepts it) and the identity grids, in float64 and
// float32: the output, the gradients of L = <out, G> w.r.t. input and grid
// (ad.Grad) equal torch's, and the second-order terms ∂<∂L/∂grid, V>/∂input,
// ∂<∂L/∂grid, V>/∂grid, ∂<∂L/∂input, U>/∂input (zero) and
// ∂<∂L/∂input, U>/∂grid equal the reference's. Grid points include pixel
// centres, borders, corners, half-integers, points just and far outside;
// V is zero at the points where the sampling is not twice differentiable.
func TestGridSampleGolden(t *testing.T) {
	doc := loadGridSampleGolden(t)
	run := func(t *testing.T, cases []gridSampleGoldenCase) {
		for _, c := range cases {
			for _, dt := range gridGoldenDtypes {
				t.Run(c.Name+"/"+dt, func(t *testing.T) { checkGridSampleGolden(t, dt, &c) })
			}
		}
	}
	run(t, doc.Cases)
	t.Run("bicubic", func(t *testing.T) {
		if err := gridSampleAccepts("bicubic"); err != nil {
			t.Skipf("nn.GridSample does not accept bicubic: %v", err)
		}
		run(t, doc.BicubicCases)
	})
}

func checkGridSampleGolden(t *testing.T, dtype string, c *gridSampleGoldenCase) {
	gg := newGoldenGraph(t, dtype)
	x := gg.node("x", c.InputShape, c.Input)
	grid := gg.node("grid", c.GridShape, c.Grid)
	y, err := nn.GridSample(x, grid, nn.GridSampleOpts{Mode: c.Mode, PaddingMode: c.PaddingMode, AlignCorners: c.AlignCorners})
	if err != nil {
		t.Fatal(err)
	}
	if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
		t.Fatalf("shape %v, want %v", y.Shape(), c.OutputShape)
	}
	d := gg.grads(gg.dot(y, gg.node("G", c.OutputShape, c.GradOutput)), x, grid)
	hv := gg.grads(gg.dot(d[1], gg.node("V", c.GridShape, c.VGrid)), x, grid)
	hu := gg.grads(gg.dot(d[0], gg.node("U", c.InputShape, c.UInput)), x, grid)
	got, err := graphtest.Eval(gg.g, y, d[0], d[1], hv[0], hv[1], hu[0], hu[1])
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []struct {
		what string
		want []float64
	}{
		{"output", c.Output}, {"grad_input", c.GradInput}, {"grad_grid", c.GradGrid},
		{"hvp_v_input", c.HVPVInput}, {"hvp_v_grid", c.HVPVGrid},
		{"hvp_u_input", c.HVPUInput}, {"hvp_u_grid", c.HVPUGrid},
	} {
		gridGoldenClose(t, dtype, w.what, got[i], w.want)
	}
}

// TestAffineGridGolden: AffineGrid's grid and the gradient of <grid, G>
// w.r.t. theta equal torch's affine_grid (non-square sizes, a unit height,
// align_corners both ways), float64 and float32.
func TestAffineGridGolden(t *testing.T) {
	for _, c := range loadGridSampleGolden(t).AffineCases {
		for _, dt := range gridGoldenDtypes {
			t.Run(c.Name+"/"+dt, func(t *testing.T) {
				gg := newGoldenGraph(t, dt)
				theta, y := c.affineGrid(gg)
				if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
					t.Fatalf("shape %v, want %v", y.Shape(), c.OutputShape)
				}
				d := gg.grads(gg.dot(y, gg.node("G", c.OutputShape, c.GradOutput)), theta)
				got, err := graphtest.Eval(gg.g, y, d[0])
				if err != nil {
					t.Fatal(err)
				}
				gridGoldenClose(t, dt, "output", got[0], c.Output)
				gridGoldenClose(t, dt, "grad_theta", got[1], c.GradTheta)
			})
		}
	}
}

// TestAffineGridSampleGolden: GridSample(input, AffineGrid(theta)) with
// L = <out, G> (random rotations, scales and shifts near the identity, no
// sample within 1e-4 of a kink): the output and the gradients w.r.t. theta
// and input equal torch's, and the gradients w.r.t. theta and input of
// <∂L/∂theta, V_theta> (second order through the sampling grid) equal the
// reference's, float64 and float32; bicubic cases only if GridSample
// accepts bicubic.
func TestAffineGridSampleGolden(t *testing.T) {
	bicubicErr := gridSampleAccepts("bicubic")
	for _, c := range loadGridSampleGolden(t).ComposedCases {
		for _, dt := range gridGoldenDtypes {
			t.Run(c.Name+"/"+dt, func(t *testing.T) {
				if c.Mode == "bicubic" && bicubicErr != nil {
					t.Skipf("nn.GridSample does not accept bicubic: %v", bicubicErr)
				}
				gg := newGoldenGraph(t, dt)
				theta, grid := c.affineGrid(gg)
				x := gg.node("x", c.InputShape, c.Input)
				y, err := nn.GridSample(x, grid, nn.GridSampleOpts{Mode: c.Mode, PaddingMode: c.PaddingMode, AlignCorners: c.AlignCorners})
				if err != nil {
					t.Fatal(err)
				}
				d := gg.grads(gg.dot(y, gg.node("G", c.OutputShape, c.GradOutput)), theta, x)
				h := gg.grads(gg.dot(d[0], gg.node("Vtheta", []int{c.Size[0], 2, 3}, c.VTheta)), theta, x)
				got, err := graphtest.Eval(gg.g, y, d[0], d[1], h[0], h[1])
				if err != nil {
					t.Fatal(err)
				}
				gridGoldenClose(t, dt, "output", got[0], c.Output)
				gridGoldenClose(t, dt, "grad_theta", got[1], c.GradTheta)
				gridGoldenClose(t, dt, "grad_input", got[2], c.GradInput)
				gridGoldenClose(t, dt, "hvp_theta", got[3], c.HVPTheta)
				gridGoldenClose(t, dt, "hvp_theta_input", got[4], c.HVPThetaInput)
			})
		}
	}
}

// dot is Σ a ⊙ b, a scalar node.
func (gg *goldenGraph) dot(a, b *gorgonia.Node) *gorgonia.Node {
	gg.t.Helper()
	p, err := gorgonia.HadamardProd(a, b)
	if err != nil {
		gg.t.Fatal(err)
	}
	s, err := gorgonia.Sum(p)
	if err != nil {
		gg.t.Fatal(err)
	}
	return s
}

// grads is ad.Grad(cost, wrt...), failing the test on an error.
func (gg *goldenGraph) grads(cost *gorgonia.Node, wrt ...*gorgonia.Node) gorgonia.Nodes {
	gg.t.Helper()
	d, err := ad.Grad(cost, wrt...)
	if err != nil {
		names := make([]string, len(wrt))
		for i, w := range wrt {
			names[i] = w.Name()
		}
		gg.t.Fatalf("ad.Grad w.r.t. %s: %v", strings.Join(names, ", "), err)
	}
	return d
}
