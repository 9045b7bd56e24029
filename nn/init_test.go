package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/tensor"
)

// initGolden is testdata/init_golden.json.gz (scripts/gen_linear_golden.py,
// layout at its top): torch's fans, gains, initialiser bounds with torch's
// sample statistics, and Linear's and Conv2d's reset_parameters.
type initGolden struct {
	Fans []struct {
		Shape  []int `json:"shape"`
		FanIn  int   `json:"fan_in"`
		FanOut int   `json:"fan_out"`
	} `json:"fans"`
	Gains []struct {
		Nonlinearity string   `json:"nonlinearity"`
		Param        *float64 `json:"param"`
		Gain         float64  `json:"gain"`
	} `json:"gains"`
	Bounds []struct {
		Init         string  `json:"init"`
		Shape        []int   `json:"shape"`
		A            float64 `json:"a"`
		Mode         string  `json:"mode"`
		Nonlinearity string  `json:"nonlinearity"`
		Gain         float64 `json:"gain"`
		Mean         float64 `json:"mean"`
		Std          float64 `json:"std"`
		Lo           float64 `json:"lo"`
		Hi           float64 `json:"hi"`
		Bound        float64 `json:"bound"`
		SampleMean   float64 `json:"sample_mean"`
		SampleVar    float64 `json:"sample_var"`
		SampleMin    float64 `json:"sample_min"`
		SampleMax    float64 `json:"sample_max"`
	} `json:"bounds"`
	Modules []struct {
		Module      string  `json:"module"`
		In          int     `json:"in"`
		Out         int     `json:"out"`
		Kernel      [2]int  `json:"kernel"`
		Groups      int     `json:"groups"`
		WeightShape []int   `json:"weight_shape"`
		WeightBound float64 `json:"weight_bound"`
		BiasBound   float64 `json:"bias_bound"`
		WeightMax   float64 `json:"weight_max"`
		BiasMax     float64 `json:"bias_max"`
		WeightVar   float64 `json:"weight_var"`
	} `json:"modules"`
}

func loadInitGolden(t *testing.T) initGolden {
	var doc initGolden
	golden.Decode(t, filepath.Join("..", "testdata", "init_golden.json.gz"), &doc)
	if len(doc.Fans) == 0 || len(doc.Gains) == 0 || len(doc.Bounds) == 0 || len(doc.Modules) == 0 {
		t.Fatal("init_golden.json.gz has an empty list")
	}
	return doc
}

// TestInitFansAndGains: FanInAndFanOut and CalculateGain equal torch's
// _calculate_fan_in_and_fan_out and calculate_gain (torch's param=None is
// leaky_relu's slope 0.01, passed as such here).
func TestInitFansAndGains(t *testing.T) {
	doc := loadInitGolden(t)
	for _, f := range doc.Fans {
		in, out, err := nn.FanInAndFanOut(f.Shape)
		if err != nil || in != f.FanIn || out != f.FanOut {
			t.Errorf("FanInAndFanOut(%v) = %d, %d, %v; torch %d, %d", f.Shape, in, out, err, f.FanIn, f.FanOut)
		}
	}
	for _, g := range doc.Gains {
		param := 0.01
		if g.Param != nil {
			param = *g.Param
		}
		got, err := nn.CalculateGain(g.Nonlinearity, param)
		if err != nil || math.Abs(got-g.Gain) > 1e-15*g.Gain {
			t.Errorf("CalculateGain(%q, %v) = %v, %v; torch %v", g.Nonlinearity, param, got, err, g.Gain)
		}
	}
}

// drawStats are the mean, the variance (about the mean), the minimum and
// the maximum of draws.
type drawStats struct{ n, mean, variance, min, max float64 }

// statsOf fills a float64 tensor of shape reps times with init and
// returns the statistics of all the draws.
func statsOf(t *testing.T, shape []int, reps int, init func(tensor.Tensor) error) drawStats {
	var sum, sum2 float64
	s := drawStats{min: math.Inf(1), max: math.Inf(-1)}
	for range reps {
		x := tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(shape...))
		if err := init(x); err != nil {
			t.Fatal(err)
		}
		for _, v := range x.Data().([]float64) {
			sum, sum2 = sum+v, sum2+v*v
			s.min, s.max = min(s.min, v), max(s.max, v)
			s.n++
		}
	}
	s.mean = sum / s.n
	s.variance = sum2/s.n - s.mean*s.mean
	return s
}

// truncNormalMoments are the mean and variance of N(mean, std²)
// truncated to [a, b].
func truncNormalMoments(mean, std, a, b float64) (float64, float64) {
	pdf := func(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
	cdf := func(x float64) float64 { return (1 + math.Erf(x/math.Sqrt2)) / 2 }
	al, be := (a-mean)/std, (b-mean)/std
	z := cdf(be) - cdf(al)
	d := (pdf(al) - pdf(be)) / z
	return mean + std*d, std * std * (1 + (al*pdf(al)-be*pdf(be))/z - d*d)
}

// TestInitDistributions: each initialiser, over at least 1e5 draws of our
// generator (several fills of a smaller tensor), against the bound or
// standard deviation torch computes for the same shape, gain, mode and
// nonlinearity (its own fan and gain functions), and against the sample
// statistics of torch's draws. Tolerances, for N draws and 5 standard
// errors: the mean within 5·σ/√N; the variance within 5·0.9/√N relative
// (uniform: Var(x²)/Var(x)² = 0.8) or 5·√(2/N) (normal); torch's sample
// mean and variance (one tensor, n draws) within √(N/n) times those. Uniform draws lie in
// [−bound, bound] and reach past 0.99·bound (a miss has probability
// 0.99^N·2); normal draws lie within 6σ and reach past 3σ; truncated normal
// draws lie in [a, b] and have the truncated normal's moments.
func TestInitDistributions(t *testing.T) {
	doc := loadInitGolden(t)
	for i, c := range doc.Bounds {
		t.Run(fmt.Sprintf("%s/%v/a=%.3g,%s,%s,gain=%.3g,mean=%g", c.Init, c.Shape, c.A, c.Mode, c.Nonlinearity, c.Gain, c.Mean), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 27))
			init := map[string]func(tensor.Tensor) error{
				"kaiming_uniform": func(x tensor.Tensor) error { return nn.KaimingUniform(x, c.A, c.Mode, c.Nonlinearity, rng) },
				"kaiming_normal":  func(x tensor.Tensor) error { return nn.KaimingNormal(x, c.A, c.Mode, c.Nonlinearity, rng) },
				"xavier_uniform":  func(x tensor.Tensor) error { return nn.XavierUniform(x, c.Gain, rng) },
				"xavier_normal":   func(x tensor.Tensor) error { return nn.XavierNormal(x, c.Gain, rng) },
				"trunc_normal":    func(x tensor.Tensor) error { return nn.TruncNormal(x, c.Mean, c.Std, c.Lo, c.Hi, rng) },
			}[c.Init]
			if init == nil {
				t.Fatalf("unknown init %q", c.Init)
			}
			size := tensor.Shape(c.Shape).TotalSize()
			reps := (100000 + size - 1) / size
			s := statsOf(t, c.Shape, reps, init)
			uniform := strings.HasSuffix(c.Init, "_uniform")
			wantMean, wantVar, relVar := 0.0, c.Bound*c.Bound, 5*math.Sqrt(2/s.n)
			switch {
			case uniform:
				wantVar, relVar = c.Bound*c.Bound/3, 5*0.9/math.Sqrt(s.n)
			case c.Init == "trunc_normal":
				wantMean, wantVar = truncNormalMoments(c.Mean, c.Std, c.Lo, c.Hi)
			}
			// torch drew one tensor: size draws, a wider tolerance.
			torchWider := math.Sqrt(s.n / float64(size))
			if tol := 5 * math.Sqrt(wantVar/s.n); math.Abs(s.mean-wantMean) > tol || math.Abs(c.SampleMean-wantMean) > torchWider*tol {
				t.Errorf("mean %v, torch's sample %v, want %v ± %v", s.mean, c.SampleMean, wantMean, tol)
			}
			if math.Abs(s.variance/wantVar-1) > relVar || math.Abs(c.SampleVar/wantVar-1) > torchWider*relVar {
				t.Errorf("variance %v, torch's sample %v, want %v (relative tolerance %v)", s.variance, c.SampleVar, wantVar, relVar)
			}
			switch {
			case uniform:
				if s.min < -c.Bound || s.max > c.Bound || -s.min < 0.99*c.Bound || s.max < 0.99*c.Bound {
					t.Errorf("draws in [%v, %v], want within and near ±%v (torch's bound; its draws [%v, %v])", s.min, s.max, c.Bound, c.SampleMin, c.SampleMax)
				}
			case c.Init == "trunc_normal":
				if s.min < c.Lo || s.max > c.Hi {
					t.Errorf("draws in [%v, %v], want within [%v, %v]", s.min, s.max, c.Lo, c.Hi)
				}
			default:
				if sd := c.Bound; -s.min > 6*sd || s.max > 6*sd || -s.min < 3*sd || s.max < 3*sd {
					t.Errorf("draws in [%v, %v], want about ±4.4 std, std %v", s.min, s.max, sd)
				}
			}
		})
	}
}

// TestModuleInit: LinearInit and Conv2dInit against torch.nn.Linear's and
// Conv2d's reset_parameters: the weight's shape, its draws within torch's
// bound (kaiming_uniform_ with a = √5) and, over these thousands of draws,
// reaching past 0.95 of it as torch's do (torch's max |w| also within
// 0.95–1 of the bound); var(w) within 5·0.9/√N relative of torch's
// bound²/3 and of torch's sample variance; the bias within its bound
// U(±1/√fanIn), in float32 and float64.
func TestModuleInit(t *testing.T) {
	doc := loadInitGolden(t)
	for i, c := range doc.Modules {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%d->%d/k%v/g%d/%v", c.Module, c.In, c.Out, c.Kernel, c.Groups, dt), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(i), 6))
				var w, b tensor.Tensor
				var err error
				if c.Module == "linear" {
					w, b, err = nn.LinearInit(c.In, c.Out, true, dt, rng)
				} else {
					w, b, err = nn.Conv2dInit(c.In, c.Out, c.Kernel, c.Groups, true, dt, rng)
				}
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(w.Shape(), tensor.Shape(c.WeightShape)) || !slices.Equal(b.Shape(), tensor.Shape{c.Out}) {
					t.Fatalf("shapes %v and %v, torch's %v and [%d]", w.Shape(), b.Shape(), c.WeightShape, c.Out)
				}
				if w.Dtype() != dt || b.Dtype() != dt {
					t.Fatalf("dtypes %v, %v, want %v", w.Dtype(), b.Dtype(), dt)
				}
				ws, bs := flatOf(w.(*tensor.Dense)), flatOf(b.(*tensor.Dense))
				var maxW, sum, sum2 float64
				for _, v := range ws {
					maxW, sum, sum2 = max(maxW, math.Abs(v)), sum+v, sum2+v*v
				}
				n := float64(len(ws))
				variance := sum2/n - (sum/n)*(sum/n)
				if maxW > c.WeightBound || maxW < 0.95*c.WeightBound || c.WeightMax > c.WeightBound || c.WeightMax < 0.95*c.WeightBound {
					t.Errorf("max |w| %v, torch's %v, want within 0.95–1 of torch's bound %v", maxW, c.WeightMax, c.WeightBound)
				}
				wantVar, rel := c.WeightBound*c.WeightBound/3, 5*0.9/math.Sqrt(n)
				if math.Abs(variance/wantVar-1) > rel || math.Abs(variance/c.WeightVar-1) > math.Sqrt2*rel {
					t.Errorf("var(w) %v, torch's %v, want %v (relative tolerance %v)", variance, c.WeightVar, wantVar, rel)
				}
				for _, v := range bs {
					if math.Abs(v) > c.BiasBound {
						t.Fatalf("bias %v outside torch's bound ±%v", v, c.BiasBound)
					}
				}
				if c.BiasMax > c.BiasBound {
					t.Errorf("torch's max |b| %v past the bound %v", c.BiasMax, c.BiasBound)
				}
			})
		}
	}
}

// TestInitSeed: the values for a fixed seed are OUR generator's (torch's
// stream is not reproduced): each element, in row-major order, is one draw
// of the documented formula from the caller's rng, rounded to the dtype,
// and LinearInit draws the weight before the bias. The pinned values keep
// seeded initialisations the same across releases (a change of the draw
// order or formula must change them deliberately).
func TestInitSeed(t *testing.T) {
	seed := func() *rand.Rand { return rand.New(rand.NewPCG(27, 1)) }
	x := tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(2, 3))
	if err := nn.Uniform(x, -2, 3, seed()); err != nil {
		t.Fatal(err)
	}
	r := seed()
	for i, v := range x.Data().([]float64) {
		if want := -2 + 5*r.Float64(); v != want {
			t.Fatalf("Uniform element %d = %v, want %v", i, v, want)
		}
	}
	x32 := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(4))
	if err := nn.Normal(x32, 1, 0.5, seed()); err != nil {
		t.Fatal(err)
	}
	r = seed()
	for i, v := range x32.Data().([]float32) {
		if want := float32(1 + 0.5*r.NormFloat64()); v != want {
			t.Fatalf("Normal element %d = %v, want %v", i, v, want)
		}
	}
	w, b, err := nn.LinearInit(2, 2, true, tensor.Float64, seed())
	if err != nil {
		t.Fatal(err)
	}
	r, bound := seed(), 1/math.Sqrt(2)
	for i, v := range append(slices.Clone(w.Data().([]float64)), b.Data().([]float64)...) {
		if want := -bound + 2*bound*r.Float64(); math.Abs(v-want) > 1e-15 {
			t.Fatalf("LinearInit value %d = %v, want %v", i, v, want)
		}
	}
	pinned := []float64{-0.27316772780187665, -0.6343094530123854, 0.5768119412812068, 0.13460510028877537, -0.15520326996125577, 0.6025287416638418}
	got := append(slices.Clone(w.Data().([]float64)), b.Data().([]float64)...)
	for i := range pinned {
		if math.Abs(got[i]-pinned[i]) > 1e-15 {
			t.Fatalf("LinearInit(2, 2, PCG(27, 1)) = %v, pinned %v", got, pinned)
		}
	}
}

// TestInitShapes: a scalar tensor gets one draw, an empty tensor none (as
// torch's no-op), Constant, Zeros and Ones set every element, float32
// and float64.
func TestInitShapes(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		s := tensor.New(tensor.Of(dt), tensor.WithShape())
		if err := nn.Uniform(s, 2, 3, rand.New(rand.NewPCG(1, 1))); err != nil {
			t.Fatal(err)
		}
		var v float64
		switch d := s.Data().(type) { // a 0-d Dense's Data is its element
		case float32:
			v = float64(d)
		case float64:
			v = d
		}
		if v < 2 || v > 3 {
			t.Errorf("%v scalar Uniform(2, 3) = %v", dt, s.Data())
		}
		for _, shape := range [][]int{{0, 3}, {4, 0, 3, 3}} {
			e := tensor.New(tensor.Of(dt), tensor.WithShape(shape...))
			if err := nn.KaimingUniform(e, 0, "", "", rand.New(rand.NewPCG(1, 1))); err != nil {
				t.Errorf("%v KaimingUniform of empty %v: %v", dt, shape, err)
			}
			if err := nn.XavierNormal(e, 1, rand.New(rand.NewPCG(1, 1))); err != nil {
				t.Errorf("%v XavierNormal of empty %v: %v", dt, shape, err)
			}
		}
		x := tensor.New(tensor.Of(dt), tensor.WithShape(2, 3))
		for _, c := range []struct {
			name string
			f    func() error
			want float64
		}{{"Constant", func() error { return nn.Constant(x, -1.5) }, -1.5}, {"Ones", func() error { return nn.Ones(x) }, 1}, {"Zeros", func() error { return nn.Zeros(x) }, 0}} {
			if err := c.f(); err != nil {
				t.Fatal(err)
			}
			for _, v := range flatOf(x) {
				if v != c.want {
					t.Fatalf("%v %s: %v, want all %v", dt, c.name, flatOf(x), c.want)
				}
			}
		}
	}
}

// TestInitBadInput: errors that name the function, the argument and the
// problem.
func TestInitBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(3, 4))
	vec := tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(4))
	ints := tensor.New(tensor.Of(tensor.Int), tensor.WithShape(3, 4))
	view, err := m.Slice(nil, tensor.S(1, 3))
	if err != nil {
		t.Fatal(err)
	}
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		name string
		err  func() error
		want string
	}{
		{"uniform a>b", func() error { return nn.Uniform(m, 2, 1, rng) }, "nn: Uniform: a = 2 > b = 1"},
		{"uniform nan", func() error { return nn.Uniform(m, nan, 1, rng) }, "nn: Uniform: a = NaN, want a finite number"},
		{"uniform nil rng", func() error { return nn.Uniform(m, 0, 1, nil) }, "nn: Uniform: rng is nil"},
		{"uniform nil tensor", func() error { return nn.Uniform(nil, 0, 1, rng) }, "nn: Uniform: tensor is nil"},
		{"uniform int", func() error { return nn.Uniform(ints, 0, 1, rng) }, "nn: Uniform: tensor dtype int, want float32 or float64"},
		{"uniform view", func() error { return nn.Uniform(view, 0, 1, rng) }, "is a view"},
		{"normal std<0", func() error { return nn.Normal(m, 0, -1, rng) }, "nn: Normal: std = -1, want std >= 0"},
		{"normal inf mean", func() error { return nn.Normal(m, inf, 1, rng) }, "nn: Normal: mean = +Inf"},
		{"trunc std 0", func() error { return nn.TruncNormal(m, 0, 0, -2, 2, rng) }, "nn: TruncNormal: std = 0, want std > 0"},
		{"trunc a>b", func() error { return nn.TruncNormal(m, 0, 1, 2, -2, rng) }, "nn: TruncNormal: a = 2 > b = -2"},
		{"constant nan", func() error { return nn.Constant(m, nan) }, "nn: Constant: val = NaN"},
		{"zeros int", func() error { return nn.Zeros(ints) }, "nn: Zeros: tensor dtype int"},
		{"ones nil", func() error { return nn.Ones(nil) }, "nn: Ones: tensor is nil"},
		{"xavier 1-D", func() error { return nn.XavierUniform(vec, 1, rng) }, "nn: XavierUniform: nn: FanInAndFanOut: fan in and fan out can not be computed for a tensor with fewer than 2 dimensions, got shape (4)"},
		{"xavier nan gain", func() error { return nn.XavierNormal(m, nan, rng) }, "nn: XavierNormal: gain = NaN"},
		{"xavier nil rng", func() error { return nn.XavierNormal(m, 1, nil) }, "nn: XavierNormal: rng is nil"},
		{"kaiming mode", func() error { return nn.KaimingUniform(m, 0, "fan_avg", "", rng) }, `nn: KaimingUniform: mode "fan_avg" not supported, want fan_in or fan_out`},
		{"kaiming nonlinearity", func() error { return nn.KaimingNormal(m, 0, "", "softplus", rng) }, `nn: KaimingNormal: nn: CalculateGain: unsupported nonlinearity "softplus"`},
		{"kaiming nan a", func() error { return nn.KaimingUniform(m, nan, "", "", rng) }, "nn: KaimingUniform: a = NaN"},
		{"kaiming 1-D", func() error { return nn.KaimingNormal(vec, 0, "", "", rng) }, "fewer than 2 dimensions"},
		{"kaiming int", func() error { return nn.KaimingNormal(ints, 0, "", "", rng) }, "nn: KaimingNormal: tensor dtype int"},
		{"gain unknown", func() error { _, err := nn.CalculateGain("swish", 0); return err }, `nn: CalculateGain: unsupported nonlinearity "swish"`},
		{"gain nan slope", func() error { _, err := nn.CalculateGain("leaky_relu", nan); return err }, "leaky_relu's negative slope NaN"},
		{"fan scalar", func() error { _, _, err := nn.FanInAndFanOut(tensor.Shape{}); return err }, "fewer than 2 dimensions, got shape ()"},
		{"fan negative", func() error { _, _, err := nn.FanInAndFanOut(tensor.Shape{2, -1}); return err }, "negative size -1 in axis 1"},
		{"linear negative", func() error { _, _, err := nn.LinearInit(-1, 2, true, tensor.Float64, rng); return err }, "nn: LinearInit: in = -1 and out = 2, want sizes >= 0"},
		{"linear dtype", func() error { _, _, err := nn.LinearInit(1, 2, true, tensor.Int, rng); return err }, "nn: LinearInit: dtype int, want float32 or float64"},
		{"linear nil rng", func() error { _, _, err := nn.LinearInit(1, 2, true, tensor.Float32, nil); return err }, "nn: LinearInit: rng is nil"},
		{"conv groups", func() error { _, _, err := nn.Conv2dInit(4, 6, [2]int{3, 3}, 4, true, tensor.Float32, rng); return err }, "nn: Conv2dInit: groups = 4 must be >= 1 and divide in = 4 and out = 6"},
		{"conv groups 0", func() error { _, _, err := nn.Conv2dInit(4, 6, [2]int{3, 3}, 0, true, tensor.Float32, rng); return err }, "groups = 0"},
		{"conv kernel", func() error { _, _, err := nn.Conv2dInit(4, 6, [2]int{0, 3}, 1, true, tensor.Float32, rng); return err }, "nn: Conv2dInit: kernel [0 3], want sizes >= 1"},
		{"conv negative", func() error {
			_, _, err := nn.Conv2dInit(4, -6, [2]int{3, 3}, 1, true, tensor.Float32, rng)
			return err
		}, "out = -6"},
		{"conv dtype", func() error { _, _, err := nn.Conv2dInit(4, 6, [2]int{3, 3}, 1, false, tensor.Int, rng); return err }, "nn: Conv2dInit: dtype int"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.err(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
	// No bias: a nil interface, not a typed nil.
	if _, b, err := nn.LinearInit(3, 2, false, tensor.Float32, rng); err != nil || b != nil {
		t.Fatalf("LinearInit without bias: bias %v, err %v", b, err)
	}
	if _, b, err := nn.Conv2dInit(3, 2, [2]int{1, 1}, 1, false, tensor.Float32, rng); err != nil || b != nil {
		t.Fatalf("Conv2dInit without bias: bias %v, err %v", b, err)
	}
}
