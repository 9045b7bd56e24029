package optim

import (
	"math"
	"runtime"
	"strconv"
	"testing"

	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/tensor"
)

// goldenPath is written by scripts/gen_optim_golden.py (layout at its top).
const goldenPath = "../testdata/optim/optim_golden.json.gz"

type goldenDoc struct {
	Torch      string                   `json:"torch"`
	Shapes     [][]int                  `json:"shapes"`
	Steps      int                      `json:"steps"`
	NoneSteps  []int                    `json:"none_steps"`
	Init       map[string][][]float64   `json:"init"`
	Grads      map[string][][][]float64 `json:"grads"` // nil: no gradient
	Optimizers []optCase                `json:"optimizers"`
	Schedulers []schedCase              `json:"schedulers"`
}

type optCase struct {
	Name  string `json:"name"`
	Dtype string `json:"dtype"`
	Kind  string `json:"kind"`
	Opts  struct {
		LR          float64   `json:"lr"`
		Momentum    float64   `json:"momentum"`
		Dampening   float64   `json:"dampening"`
		WeightDecay float64   `json:"weight_decay"`
		Nesterov    bool      `json:"nesterov"`
		Maximize    bool      `json:"maximize"`
		Betas       []float64 `json:"betas"`
		Eps         float64   `json:"eps"`
		AMSGrad     bool      `json:"amsgrad"`
	} `json:"opts"`
	Params [][][]float64 `json:"params"` // [step][param] after the step
	State  map[string]struct {
		Step           *float64  `json:"step"`
		ExpAvg         []float64 `json:"exp_avg"`
		ExpAvgSq       []float64 `json:"exp_avg_sq"`
		MaxExpAvgSq    []float64 `json:"max_exp_avg_sq"`
		MomentumBuffer []float64 `json:"momentum_buffer"`
	} `json:"state"`
}

type schedCase struct {
	Name string    `json:"name"`
	LR   float64   `json:"lr"`
	LRs  []float64 `json:"lrs"`
}

func loadGolden(t testing.TB) *goldenDoc {
	t.Helper()
	var doc goldenDoc
	golden.Decode(t, goldenPath, &doc)
	if len(doc.Optimizers) == 0 || len(doc.Schedulers) == 0 || doc.Steps == 0 {
		t.Fatalf("%s: no cases", goldenPath)
	}
	return &doc
}

// newOptimizer builds c's optimizer over params.
func newOptimizer(t testing.TB, c optCase, params []tensor.Tensor) Optimizer {
	t.Helper()
	var o Optimizer
	var err error
	switch c.Kind {
	case "sgd":
		o, err = NewSGD(params, SGDOpts{LR: c.Opts.LR, Momentum: c.Opts.Momentum, Dampening: c.Opts.Dampening,
			WeightDecay: c.Opts.WeightDecay, Nesterov: c.Opts.Nesterov, Maximize: c.Opts.Maximize})
	case "adam", "adamw":
		ao := AdamOpts{LR: c.Opts.LR, Beta1: c.Opts.Betas[0], Beta2: c.Opts.Betas[1], Eps: c.Opts.Eps,
			WeightDecay: c.Opts.WeightDecay, AMSGrad: c.Opts.AMSGrad, Maximize: c.Opts.Maximize}
		if c.Kind == "adam" {
			o, err = NewAdam(params, ao)
		} else {
			o, err = NewAdamW(params, ao)
		}
	default:
		t.Fatalf("%s: unknown kind %q", c.Name, c.Kind)
	}
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return o
}

// goldenParams are fresh parameter tensors holding the initial values.
func (d *goldenDoc) params(dtype string) []tensor.Tensor {
	out := make([]tensor.Tensor, len(d.Shapes))
	for i, s := range d.Shapes {
		out[i] = golden.Tensor(dtype, s, d.Init[dtype][i])
	}
	return out
}

// grads are step k's gradient tensors (nil where torch had None).
func (d *goldenDoc) grads(dtype string, k int) []tensor.Tensor {
	out := make([]tensor.Tensor, len(d.Shapes))
	for i, s := range d.Shapes {
		if g := d.Grads[dtype][k][i]; g != nil {
			out[i] = golden.Tensor(dtype, s, g)
		}
	}
	return out
}

// values is t's elements as float64.
func values(t tensor.Tensor) []float64 {
	d := t.(*tensor.Dense)
	if d.Dtype() == tensor.Float32 {
		f := d.Float32s()
		out := make([]float64, len(f))
		for i, v := range f {
			out[i] = float64(v)
		}
		return out
	}
	return append([]float64(nil), d.Float64s()...)
}

// bitExact: on amd64 and 386 (SSE2) Go's float arithmetic is IEEE's with
// no implicit fusion and math.FMA is exact, so the updates equal torch's
// (AVX2 build) bit for bit; elsewhere the compiler may fuse a·b + c where
// the code does not prevent it, and the tolerances apply.
var bitExact = runtime.GOARCH == "amd64" || runtime.GOARCH == "386"

// tolerance is the relative tolerance of the optimizer goldens per dtype.
func tolerance(dtype string) float64 {
	if dtype == "float32" {
		return 1e-6
	}
	return 1e-12
}

// deviation is the largest |got − want| / max(|want|, 1e-3) (1e-3: the
// scale below which values count as absolute).
func deviation(got, want []float64) float64 {
	m := 0.0
	for i := range want {
		d := math.Abs(got[i]-want[i]) / math.Max(math.Abs(want[i]), 1e-3)
		if !(d <= m) {
			m = d
		}
	}
	return m
}

// runSteps feeds steps [from, to) of the golden gradients to o, checks
// that Step left them as they were and compares the parameters after each
// step with torch's; it returns the largest
// deviation and the number of values that were bit-equal and compared.
func runSteps(t *testing.T, d *goldenDoc, c optCase, o Optimizer, params []tensor.Tensor, from, to int) (dev float64, exact, n int) {
	t.Helper()
	for k := from; k < to; k++ {
		grads := d.grads(c.Dtype, k)
		before := make([][]float64, len(grads))
		for i, g := range grads {
			if g != nil {
				before[i] = values(g)
			}
		}
		if err := o.Step(grads); err != nil {
			t.Fatalf("step %d: %v", k, err)
		}
		for i, g := range grads {
			if g != nil && deviation(values(g), before[i]) != 0 {
				t.Fatalf("step %d: Step changed grads[%d]", k, i)
			}
		}
		for i, p := range params {
			got, want := values(p), c.Params[k][i]
			if len(got) != len(want) {
				t.Fatalf("step %d: params[%d] has %d values, want %d", k, i, len(got), len(want))
			}
			if e := deviation(got, want); e > tolerance(c.Dtype) {
				t.Fatalf("step %d: params[%d] = %v, torch %v (deviation %.3g)", k, i, got, want, e)
			} else if e > dev {
				dev = e
			}
			for j := range want {
				if got[j] == want[j] {
					exact++
				}
			}
			n += len(want)
		}
	}
	return dev, exact, n
}

// TestOptimizersGolden runs every torch configuration for all its steps
// (with the scalar parameter's nil gradients) and compares the parameters
// after each step and the final state with torch's.
func TestOptimizersGolden(t *testing.T) {
	d := loadGolden(t)
	for _, c := range d.Optimizers {
		t.Run(c.Name+"/"+c.Dtype, func(t *testing.T) {
			params := d.params(c.Dtype)
			o := newOptimizer(t, c, params)
			dev, exact, n := runSteps(t, d, c, o, params, 0, d.Steps)
			t.Logf("largest deviation %.3g, %d of %d values bit-equal", dev, exact, n)
			if bitExact && exact != n {
				t.Errorf("%d of %d values differ from torch's in the last bits (largest deviation %.3g); on %s all were bit-equal",
					n-exact, n, dev, runtime.GOARCH)
			}
			compareState(t, c, o.State())
		})
	}
}

// compareState compares st with torch's final state of c.
func compareState(t *testing.T, c optCase, st State) {
	t.Helper()
	if len(st.Params) != len(c.State) {
		t.Fatalf("state of %d parameters, torch %d", len(st.Params), len(c.State))
	}
	for key, want := range c.State {
		i, err := strconv.Atoi(key)
		if err != nil {
			t.Fatal(err)
		}
		ps, ok := st.Params[i]
		if !ok {
			t.Fatalf("no state for parameter %d", i)
		}
		if want.Step != nil && float64(ps.Step) != *want.Step || want.Step == nil && ps.Step != 0 {
			t.Errorf("Params[%d].Step = %d, torch %v", i, ps.Step, want.Step)
		}
		bufs := map[string][]float64{ExpAvg: want.ExpAvg, ExpAvgSq: want.ExpAvgSq,
			MaxExpAvgSq: want.MaxExpAvgSq, MomentumBuffer: want.MomentumBuffer}
		for name, w := range bufs {
			b, has := ps.Buffers[name]
			if (w != nil) != has {
				t.Fatalf("Params[%d]: buffer %q present %v, in torch %v", i, name, has, w != nil)
			}
			if has {
				if e := deviation(values(b), w); e > tolerance(c.Dtype) {
					t.Errorf("Params[%d][%q] = %v, torch %v (deviation %.3g)", i, name, values(b), w, e)
				}
			}
		}
	}
}

// TestStateRoundTrip stops every configuration after half its steps,
// loads its State into a fresh optimizer over fresh copies of the
// parameters (whose learning rate was changed, for LoadState to restore)
// and continues both there and in the first optimizer: both must go on
// as torch's uninterrupted run, also after the State's buffers were
// overwritten (State and LoadState copy).
func TestStateRoundTrip(t *testing.T) {
	d := loadGolden(t)
	half := d.Steps / 2
	for _, c := range d.Optimizers {
		t.Run(c.Name+"/"+c.Dtype, func(t *testing.T) {
			params := d.params(c.Dtype)
			o := newOptimizer(t, c, params)
			runSteps(t, d, c, o, params, 0, half)
			st := o.State()
			fresh := make([]tensor.Tensor, len(params))
			for i, p := range params {
				fresh[i] = p.Clone().(tensor.Tensor)
			}
			o2 := newOptimizer(t, c, fresh)
			if err := o2.SetLR(c.Opts.LR * 3); err != nil {
				t.Fatal(err)
			}
			if err := o2.LoadState(st); err != nil {
				t.Fatal(err)
			}
			if o2.LR() != c.Opts.LR {
				t.Fatalf("LR() = %v after LoadState, want %v", o2.LR(), c.Opts.LR)
			}
			if len(st.Params) == 0 && c.Opts.Momentum != 0 {
				t.Fatal("no state to carry over")
			}
			for _, ps := range st.Params {
				for _, b := range ps.Buffers {
					b.(*tensor.Dense).Zero()
				}
			}
			runSteps(t, d, c, o2, fresh, half, d.Steps)
			runSteps(t, d, c, o, params, half, d.Steps)
		})
	}
}
