package nn_test

// Review 27 attacks (bad input, misuse). Each test states what a correct
// library does; a failure is a finding in /work/wt/notes-review27.md.

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// noPanic runs f and turns a panic into a test failure naming what.
func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: panic: %v", what, r)
		}
	}()
	f()
}

// A parameter's node re-bound with gorgonia.Let after the model was built:
// Params.Grad then silently drops that parameter (nil gradient, as if the
// cost did not use it) instead of saying the node was detached.
func TestReview27GradAfterLetIsSilent(t *testing.T) {
	p := nn.NewParams()
	if err := p.Add("a", denseOf(tensor.Float64, seq(3, 0), 3)); err != nil {
		t.Fatal(err)
	}
	if err := p.Add("b", denseOf(tensor.Float64, seq(3, 1), 3)); err != nil {
		t.Fatal(err)
	}
	must := mustNode(t)
	g := gorgonia.NewGraph()
	ns, err := p.Nodes(g)
	if err != nil {
		t.Fatal(err)
	}
	cost := must(gorgonia.Sum(must(gorgonia.HadamardProd(ns[0], ns[1]))))
	// The user "sets" a parameter the Gorgonia way.
	if err := gorgonia.Let(ns[1], denseOf(tensor.Float64, []float64{5, 5, 5}, 3)); err != nil {
		t.Fatal(err)
	}
	gs, err := p.Grad(cost)
	if err != nil {
		return // an error naming "b" and gorgonia.Let would be right
	}
	if gs.Nodes()[1] == nil {
		t.Errorf("Params.Grad: parameter %q re-bound with gorgonia.Let gets a nil gradient (as if unused) and no error; "+
			"an optimizer will then silently never update it", "b")
	}
}

// Let after Grad: the machine runs on the Let value, the optimizer updates
// the owned tensor that the graph no longer reads; Grads.Detached names the
// parameter, and Params.Node refuses the detached node.
func TestReview27LetAfterGradDetachesSilently(t *testing.T) {
	p := nn.NewParams()
	if err := p.Add("w", denseOf(tensor.Float64, []float64{1, 2}, 2)); err != nil {
		t.Fatal(err)
	}
	must := mustNode(t)
	g := gorgonia.NewGraph()
	w := must(p.Node(g, "w"))
	cost := must(gorgonia.Sum(must(gorgonia.Square(w))))
	gs, err := p.Grad(cost)
	if err != nil {
		t.Fatal(err)
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := gorgonia.Let(w, denseOf(tensor.Float64, []float64{10, 20}, 2)); err != nil {
		t.Fatal(err)
	}
	if err := ad.RunAll(m); err != nil {
		t.Fatal(err)
	}
	if d := gs.Detached(); len(d) != 1 || d[0] != "w" {
		t.Errorf("after gorgonia.Let of parameter w's node, Grads.Detached() = %q, want [w]", d)
	}
	if _, err := p.Node(g, "w"); err == nil || !strings.Contains(err.Error(), "gorgonia.Let") {
		t.Errorf("Params.Node after gorgonia.Let: %v, want an error naming gorgonia.Let", err)
	}
}

// A name that is not valid UTF-8 cannot survive safetensors' JSON header:
// Save succeeds, Load of the same file into the same set fails strict
// (or silently loads nothing non-strict).
func TestReview27InvalidUTF8NameRoundTrip(t *testing.T) {
	p := nn.NewParams()
	name := "w\xff"
	if err := p.Add(name, denseOf(tensor.Float32, []float64{1, 2}, 2)); err != nil {
		return // rejecting the name at Add is a fix
	}
	var buf bytes.Buffer
	if err := p.Save(&buf); err != nil {
		return // rejecting it at Save is a fix too
	}
	if err := p.Load(bytes.NewReader(buf.Bytes()), true); err != nil {
		t.Errorf("Params.Add accepted %q and Save wrote it, but loading that very file back fails: %v", name, err)
	}
}

// Corrupt files beyond the lead's table: offsets that wrap around, a
// half-precision tensor for a parameter, a 0-d tensor for a parameter,
// huge declared sizes. Each must be an error naming the problem (not a
// bare runtime error), no panic.
func TestReview27LoadCorruptMore(t *testing.T) {
	p := nn.NewParams()
	if err := p.Add("w", denseOf(tensor.Float32, []float64{1, 2}, 2)); err != nil {
		t.Fatal(err)
	}
	file := func(header string, data []byte) []byte {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
		return append(append(b, header...), data...)
	}
	d8 := make([]byte, 8)
	for _, tc := range []struct{ name, header string }{
		{"wrapping offsets", `{"w":{"dtype":"F32","shape":[2],"data_offsets":[18446744073709551615,7]}}`},
		{"offsets end before begin", `{"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}`},
		{"F16 for a parameter", `{"w":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}`},
		{"BF16 for a parameter", `{"w":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}}`},
		{"0-d for a parameter", `{"w":{"dtype":"F64","shape":[],"data_offsets":[0,8]}}`},
		{"lower-case dtype", `{"w":{"dtype":"f32","shape":[2],"data_offsets":[0,8]}}`},
		{"huge shape, small offsets", `{"w":{"dtype":"F32","shape":[2305843009213693952],"data_offsets":[0,8]}}`},
		{"duplicate key", `{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`},
		{"header length 100 MB + 1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := file(tc.header, d8)
			if tc.header == "" {
				f = binary.LittleEndian.AppendUint64(nil, 100_000_001)
				f = append(f, make([]byte, 16)...)
			}
			var err error
			noPanic(t, tc.name, func() { err = p.Load(bytes.NewReader(f), true) })
			t.Logf("%s: %v", tc.name, err)
			if tc.name == "duplicate key" {
				return // last-wins is what serde/JSON do; either way is fine
			}
			if err == nil {
				t.Errorf("%s: no error", tc.name)
			} else if strings.Contains(err.Error(), "runtime error") {
				t.Errorf("%s: the error is a recovered runtime panic, not a description: %v", tc.name, err)
			}
		})
	}
}

// SaveFile goes through os.CreateTemp, whose file mode is 0600: the saved
// model is unreadable to other users, unlike torch's save_file (0666 &^ umask).
func TestReview27SaveFileMode(t *testing.T) {
	p := nn.NewParams()
	if err := p.Add("w", denseOf(tensor.Float32, []float64{1, 2}, 2)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := p.SaveFile(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o044 == 0 {
		t.Errorf("SaveFile wrote %s with mode %v (os.CreateTemp's 0600); torch's save_file and os.Create give 0666 &^ umask", path, fi.Mode().Perm())
	}
	// A missing directory names the path.
	err = p.SaveFile(filepath.Join(t.TempDir(), "no", "such", "m.safetensors"))
	if err == nil || !strings.Contains(err.Error(), "no/such") {
		t.Errorf("SaveFile into a missing directory: %v", err)
	}
}

// The Evaluator on a view (a slice of a loader's batch), compared with the
// same rows materialised.
func TestReview27EvaluatorOnView(t *testing.T) {
	p := nn.NewParams()
	if err := p.Add("fc.weight", denseOf(tensor.Float64, seq(6, 0), 2, 3)); err != nil {
		t.Fatal(err)
	}
	if err := p.Add("fc.bias", denseOf(tensor.Float64, []float64{0.5, -0.5}, 2)); err != nil {
		t.Fatal(err)
	}
	ev, err := nn.NewEvaluator(p, affine)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	batch := denseOf(tensor.Float64, seq(12, 3), 4, 3)
	view, err := batch.Slice(tensor.S(2, 4))
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	noPanic(t, "Forward(view)", func() {
		out, err := ev.Forward(view)
		if err != nil {
			t.Logf("Forward(view): %v", err)
			return
		}
		got = graphtest.Floats(out)
	})
	if got == nil {
		return
	}
	want := graphtest.Floats(mustForward(t, ev, view.(*tensor.Dense).Materialize()))
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Forward of rows 2:4 as a view = %v, of the same rows materialised = %v", got, want)
		}
	}
}

func mustForward(t *testing.T, ev *nn.Evaluator, x tensor.Tensor) tensor.Tensor {
	t.Helper()
	out, err := ev.Forward(x)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*tensor.Dense).Clone().(tensor.Tensor)
}

// An Evaluator whose model fails at run time (an input the model made
// itself and never set): the error should name the node and the problem,
// without Gorgonia's "PC n. Failed to execute instruction" prefix.
func TestReview27EvaluatorRunError(t *testing.T) {
	p := nn.NewParams()
	if err := p.Add("fc.weight", denseOf(tensor.Float64, seq(6, 0), 2, 3)); err != nil {
		t.Fatal(err)
	}
	if err := p.Add("fc.bias", denseOf(tensor.Float64, []float64{0.5, -0.5}, 2)); err != nil {
		t.Fatal(err)
	}
	model := func(p *nn.Params, x *gorgonia.Node, train bool) (*gorgonia.Node, error) {
		y, err := affine(p, x, train)
		if err != nil {
			return nil, err
		}
		labels := gorgonia.NewTensor(x.Graph(), tensor.Int, 1, gorgonia.WithShape(x.Shape()[0]), gorgonia.WithName("labels"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(x.Shape()[0]), tensor.WithBacking([]int{7}))))
		return nn.CrossEntropy(y, labels, nn.CrossEntropyOpts{})
	}
	ev, _ := nn.NewEvaluator(p, model)
	defer ev.Close()
	_, err := ev.Forward(denseOf(tensor.Float64, seq(3, 1), 1, 3))
	t.Logf("run error: %v", err)
	if err == nil || strings.Contains(err.Error(), "Failed to execute instruction") || !strings.Contains(err.Error(), "7") {
		t.Errorf("Forward with a target out of range: %v", err)
	}
}

// One parameter set, two graphs, two TapeMachines running at once (no
// optimizer step in between): reads only, so -race must stay quiet and both
// must give the same cost.
func TestReview27TwoMachinesConcurrent(t *testing.T) {
	p := nn.NewParams()
	rng := rand.New(rand.NewPCG(1, 2))
	w, b, err := nn.LinearInit(16, 8, true, tensor.Float64, rng)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Add("fc.weight", w); err != nil {
		t.Fatal(err)
	}
	if err := p.Add("fc.bias", b); err != nil {
		t.Fatal(err)
	}
	type run struct {
		m    gorgonia.VM
		cost gorgonia.Value
		gs   *nn.Grads
	}
	var runs [2]*run
	for k := range runs {
		g := gorgonia.NewGraph()
		ad.ReuseResults(g, true)
		x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(4, 16), gorgonia.WithName("x"),
			gorgonia.WithValue(denseOf(tensor.Float64, seq(64, 7), 4, 16)))
		y, err := affine(p, x, false)
		if err != nil {
			t.Fatal(err)
		}
		c, err := gorgonia.Sum(must2(gorgonia.Square(y)))
		if err != nil {
			t.Fatal(err)
		}
		r := &run{}
		gorgonia.Read(c, &r.cost)
		if r.gs, err = p.Grad(c); err != nil {
			t.Fatal(err)
		}
		r.m = gorgonia.NewTapeMachine(g)
		runs[k] = r
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for k, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				r.m.Reset()
				if err := ad.RunAll(r.m); err != nil {
					errs[k] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Fatalf("machine %d: %v", k, err)
		}
	}
	if a, b := runs[0].cost.Data().(float64), runs[1].cost.Data().(float64); a != b {
		t.Errorf("two graphs over one Params: costs %v and %v", a, b)
	}
	for _, r := range runs {
		r.m.Close()
	}
}

func must2(n *gorgonia.Node, err error) *gorgonia.Node {
	if err != nil {
		panic(err)
	}
	return n
}

// Linear with a bias of another dtype, weight of rank 1, and x whose last
// axis differs: the message should name the argument (and, ideally, the
// node) and the shapes.
func TestReview27LinearMessages(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(4, 5), gorgonia.WithName("feat"))
	w := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(3, 6), gorgonia.WithName("fc.weight"))
	_, err := nn.Linear(x, w, nil)
	t.Logf("in mismatch: %v", err)
	if err == nil || !strings.Contains(err.Error(), "5") || !strings.Contains(err.Error(), "6") {
		t.Errorf("in-features mismatch: %v", err)
	}
	if err != nil && !strings.Contains(err.Error(), "fc.weight") {
		t.Errorf("the in-features error does not name the weight node (%q); issue 27 asks for node names beside argument roles: %v", "fc.weight", err)
	}
	b64 := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("fc.bias"))
	w2 := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(3, 5), gorgonia.WithName("fc2.weight"))
	_, err = nn.Linear(x, w2, b64)
	t.Logf("bias dtype: %v", err)
	if err == nil || !strings.Contains(err.Error(), "bias") {
		t.Errorf("bias dtype: %v", err)
	}
}

// Uniform over a range wider than float64 can hold: b − a overflows and
// the tensor fills with ±Inf/NaN without an error.
func TestReview27UniformOverflow(t *testing.T) {
	d := tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(1000))
	err := nn.Uniform(d, -1e308, 1e308, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		return
	}
	for _, v := range d.Float64s() {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			t.Errorf("Uniform(-1e308, 1e308) gave %v and no error", v)
			return
		}
	}
}

// Uniform into float32 rounds a + (b−a)·u, so a draw u = 1 − 2⁻²⁶ would
// round to b; torch's uniform_ is [a, b): such a draw is drawn again (here
// the source repeats it, so the value is the float32 below b).
func TestReview27UniformFloat32ReachesB(t *testing.T) {
	d := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(4))
	if err := nn.Uniform(d, 0, 1, rand.New(nearOne{})); err != nil {
		t.Fatal(err)
	}
	for _, v := range d.Float32s() {
		if !(v < 1) {
			t.Errorf("float32 draw with u = 1 − 2⁻²⁶ gave %v: Uniform's float32 bounds must be half-open, as torch's", v)
		}
	}
}

// nearOne is a rand.Source whose Float64 is always 1 − 2⁻²⁶.
type nearOne struct{}

func (nearOne) Uint64() uint64 { return 1<<53 - 1<<27 }
