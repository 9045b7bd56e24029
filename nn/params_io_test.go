package nn_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/tensor"
)

var updateParams = flag.Bool("update-params", false, "rewrite testdata/params/go.safetensors (then run scripts/gen_params_golden.py to check it in torch)")

// goParams is the parameter set of testdata/params/go.safetensors: element k
// of parameter j is (k-5)/8 + j, exact in float32 and float64 (go_value in
// scripts/gen_params_golden.py).
func goParams(t testing.TB) *nn.Params {
	t.Helper()
	p := nn.NewParams()
	for j, a := range []struct {
		name  string
		dt    tensor.Dtype
		shape []int
	}{
		{"conv1.weight", tensor.Float32, []int{2, 1, 3, 3}},
		{"conv1.bias", tensor.Float32, []int{2}},
		{"fc.weight", tensor.Float64, []int{3, 4}},
		{"fc.bias", tensor.Float64, []int{3}},
	} {
		vals := make([]float64, tensor.Shape(a.shape).TotalSize())
		for k := range vals {
			vals[k] = float64(k-5)*0.125 + float64(j)
		}
		if err := p.Add(a.name, denseOf(a.dt, vals, a.shape...)); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// emptyLike is a set of p's names, dtypes and shapes, all zeros.
func emptyLike(t testing.TB, p *nn.Params) *nn.Params {
	t.Helper()
	q := nn.NewParams()
	for i, v := range p.Values() {
		z := tensor.New(tensor.WithShape(v.Shape().Clone()...), tensor.Of(v.Dtype()))
		if err := q.Add(p.Names()[i], z); err != nil {
			t.Fatal(err)
		}
	}
	return q
}

// sameValues fails unless p and q hold the same names, dtypes, shapes and
// bits.
func sameValues(t *testing.T, what string, p, q *nn.Params) {
	t.Helper()
	if !slices.Equal(p.Names(), q.Names()) {
		t.Fatalf("%s: names %v and %v", what, p.Names(), q.Names())
	}
	for i, v := range p.Values() {
		w := q.Values()[i]
		if v.Dtype() != w.Dtype() || !slices.Equal([]int(v.Shape()), []int(w.Shape())) {
			t.Fatalf("%s: %s is %v %v and %v %v", what, p.Names()[i], v.Dtype(), v.Shape(), w.Dtype(), w.Shape())
		}
		a, b := graphtest.Floats(v), graphtest.Floats(w)
		for k := range a {
			if math.Float64bits(a[k]) != math.Float64bits(b[k]) {
				t.Fatalf("%s: %s[%d] = %v and %v", what, p.Names()[i], k, a[k], b[k])
			}
		}
	}
}

func TestParamsStateDict(t *testing.T) {
	p := goParams(t)
	sd := p.StateDict()
	if len(sd) != 4 {
		t.Fatalf("%d entries", len(sd))
	}
	addTo(sd["fc.bias"], 1) // a copy: the parameter stays
	q := emptyLike(t, p)
	sd2 := p.StateDict()
	missing, unexpected, err := q.LoadStateDict(sd2, true)
	if err != nil || missing != nil || unexpected != nil {
		t.Fatalf("LoadStateDict: %v %v %v", missing, unexpected, err)
	}
	sameValues(t, "after LoadStateDict(StateDict())", p, q)
	addTo(sd2["fc.bias"], 1) // copied in, not kept
	sameValues(t, "after changing the loaded state dict", p, q)
}

func TestParamsLoadStateDict(t *testing.T) {
	ref := goParams(t)
	full := ref.StateDict()
	without := func(names ...string) map[string]tensor.Tensor {
		sd := ref.StateDict()
		for _, n := range names {
			delete(sd, n)
		}
		return sd
	}
	with := func(extra map[string]tensor.Tensor) map[string]tensor.Tensor {
		sd := ref.StateDict()
		for k, v := range extra {
			sd[k] = v
		}
		return sd
	}
	var nilDense *tensor.Dense
	for _, tc := range []struct {
		name                string
		sd                  map[string]tensor.Tensor
		strict              bool
		missing, unexpected []string
		want                []string // substrings of the error; nil: no error
		loaded              bool     // the parameters hold ref's values after
	}{
		{name: "all, strict", sd: full, strict: true, loaded: true},
		{name: "all, not strict", sd: full, loaded: true},
		{name: "missing, not strict", sd: without("fc.bias", "conv1.bias"), missing: []string{"conv1.bias", "fc.bias"}},
		{name: "missing, strict", sd: without("fc.bias", "conv1.bias"), strict: true, missing: []string{"conv1.bias", "fc.bias"},
			want: []string{`missing keys "conv1.bias", "fc.bias"`}},
		{name: "unexpected, not strict", sd: with(map[string]tensor.Tensor{"z": nil, "bn.num_batches_tracked": tensor.New(tensor.FromScalar(int64(1)))}),
			unexpected: []string{"bn.num_batches_tracked", "z"}, loaded: true},
		{name: "unexpected, strict", sd: with(map[string]tensor.Tensor{"z": nil, "a": nil}), strict: true,
			unexpected: []string{"a", "z"}, want: []string{`unexpected keys "a", "z"`}},
		{name: "shape, not strict", sd: with(map[string]tensor.Tensor{"fc.bias": denseOf(tensor.Float64, seq(4, 0), 4)}),
			want: []string{`"fc.bias": shape (4) in the state dict, (3) in the parameter set`}},
		{name: "dtype", sd: with(map[string]tensor.Tensor{"fc.bias": denseOf(tensor.Float32, seq(3, 0), 3)}),
			want: []string{`"fc.bias": dtype float32 in the state dict, float64 in the parameter set`}},
		{name: "nil", sd: with(map[string]tensor.Tensor{"fc.bias": nil}), want: []string{`"fc.bias": the tensor is nil`}},
		{name: "typed nil", sd: with(map[string]tensor.Tensor{"fc.bias": nilDense}), want: []string{`"fc.bias": the tensor is nil`}},
		{name: "sparse", sd: with(map[string]tensor.Tensor{"fc.bias": tensor.CSRFromCoord(tensor.Shape{3, 1}, []int{0}, []int{0}, []float64{1})}),
			want: []string{`"fc.bias": the tensor is a *tensor.CS`}},
		{name: "all problems in one error", sd: func() map[string]tensor.Tensor {
			sd := without("conv1.bias")
			sd["extra"] = nil
			sd["fc.weight"] = denseOf(tensor.Float64, seq(4, 0), 4)
			sd["fc.bias"] = denseOf(tensor.Float32, seq(3, 0), 3)
			return sd
		}(), strict: true, missing: []string{"conv1.bias"}, unexpected: []string{"extra"},
			want: []string{`missing keys "conv1.bias"`, `unexpected keys "extra"`, `"fc.weight": shape`, `"fc.bias": dtype`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := emptyLike(t, ref)
			missing, unexpected, err := p.LoadStateDict(tc.sd, tc.strict)
			if !slices.Equal(missing, tc.missing) || !slices.Equal(unexpected, tc.unexpected) {
				t.Fatalf("missing %q unexpected %q, want %q %q", missing, unexpected, tc.missing, tc.unexpected)
			}
			if tc.want == nil && err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("error %v, want one containing %q", err, w)
				}
			}
			if tc.loaded {
				sameValues(t, "loaded", ref, p)
			}
			if err != nil {
				sameValues(t, "after a failed load", emptyLike(t, ref), p)
			}
		})
	}
	// A partial non-strict load copies what is there.
	p := emptyLike(t, ref)
	if _, _, err := p.LoadStateDict(without("fc.bias"), false); err != nil {
		t.Fatal(err)
	}
	w, _ := p.Value("fc.weight")
	want, _ := ref.Value("fc.weight")
	assertClose(t, "fc.weight after a partial load", graphtest.Floats(w), graphtest.Floats(want), 0)
	var nilSet *nn.Params
	if _, _, err := nilSet.LoadStateDict(full, true); err == nil {
		t.Fatal("LoadStateDict on a nil set: no error")
	}
}

func TestParamsSaveLoad(t *testing.T) {
	ref := goParams(t)
	var buf bytes.Buffer
	if err := ref.Save(&buf); err != nil {
		t.Fatal(err)
	}
	for _, strict := range []bool{false, true} {
		p := emptyLike(t, ref)
		if err := p.Load(bytes.NewReader(buf.Bytes()), strict); err != nil {
			t.Fatal(err)
		}
		sameValues(t, "Save then Load", ref, p)
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := ref.SaveFile(path); err != nil {
		t.Fatal(err)
	}
	if err := ref.SaveFile(path); err != nil { // over an existing file
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("SaveFile left %d files", len(entries))
	}
	onDisk, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(onDisk, buf.Bytes()) {
		t.Fatalf("SaveFile wrote other bytes than Save (%v)", err)
	}
	p := emptyLike(t, ref)
	if err := p.LoadFile(path, true); err != nil {
		t.Fatal(err)
	}
	sameValues(t, "SaveFile then LoadFile", ref, p)

	// Strict loads into a set that differs.
	extra := emptyLike(t, ref)
	if err := extra.Add("extra", denseOf(tensor.Float32, []float64{1}, 1)); err != nil {
		t.Fatal(err)
	}
	if err := extra.Load(bytes.NewReader(buf.Bytes()), true); err == nil || !strings.Contains(err.Error(), `missing keys "extra"`) {
		t.Fatalf("strict Load into a larger set: %v", err)
	}
	if err := extra.Load(bytes.NewReader(buf.Bytes()), false); err != nil {
		t.Fatalf("non-strict Load into a larger set: %v", err)
	}
	small := nn.NewParams()
	if err := small.Add("fc.bias", denseOf(tensor.Float64, []float64{0, 0, 0}, 3)); err != nil {
		t.Fatal(err)
	}
	if err := small.Load(bytes.NewReader(buf.Bytes()), true); err == nil ||
		!strings.Contains(err.Error(), `unexpected keys "conv1.bias", "conv1.weight", "fc.weight"`) {
		t.Fatalf("strict Load into a smaller set: %v", err)
	}
	if err := small.Load(bytes.NewReader(buf.Bytes()), false); err != nil {
		t.Fatal(err)
	}
	if b, _ := small.Value("fc.bias"); !slices.Equal(graphtest.Floats(b), []float64{2.375, 2.5, 2.625}) {
		t.Fatalf("fc.bias = %v", graphtest.Floats(b))
	}
}

func TestParamsSaveLoadBadInput(t *testing.T) {
	var nilSet *nn.Params
	p := goParams(t)
	var buf bytes.Buffer
	if err := p.Save(&buf); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"Save on nil set", nilSet.Save(&buf), "nil"},
		{"Save to a failing writer", p.Save(failingWriter{}), "disk full"},
		{"SaveFile on nil set", nilSet.SaveFile(filepath.Join(dir, "x")), "nil"},
		{"SaveFile into a missing directory", p.SaveFile(filepath.Join(dir, "no", "x")), "no such file"},
		{"Load on nil set", nilSet.Load(bytes.NewReader(buf.Bytes()), true), "nil"},
		{"Load from a nil reader", p.Load(nil, true), "reader is nil"},
		{"Load from a failing reader", p.Load(failingReader{}, true), "disk full"},
		{"LoadFile on nil set", nilSet.LoadFile(filepath.Join(dir, "x"), true), "nil"},
		{"LoadFile of a missing file", p.LoadFile(filepath.Join(dir, "missing"), true), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", tc.err, tc.want)
			}
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk full") }

// safetensorsFile assembles a file from a header (JSON text) and data.
func safetensorsFile(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

// TestParamsLoadCorrupt: malformed files give an error, never a panic, and
// leave the parameters as they were.
func TestParamsLoadCorrupt(t *testing.T) {
	p := nn.NewParams()
	if err := p.Add("w", denseOf(tensor.Float32, []float64{1, 2}, 2)); err != nil {
		t.Fatal(err)
	}
	data8 := make([]byte, 8)
	good := safetensorsFile(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, data8)
	if err := p.Load(bytes.NewReader(good), true); err != nil {
		t.Fatalf("the well-formed file: %v", err)
	}
	if err := p.SetValue("w", denseOf(tensor.Float32, []float64{1, 2}, 2)); err != nil {
		t.Fatal(err)
	}
	huge := binary.LittleEndian.AppendUint64(nil, 1<<62)
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "header too small"},
		{"7 bytes", []byte{1, 2, 3, 4, 5, 6, 7}, "header too small"},
		{"header longer than the file", safetensorsFile(`{}`, nil)[:9], "invalid header length"},
		{"oversized header", append(huge, '{', '}'), "header too large"},
		{"header not JSON", safetensorsFile(`{"w":`, nil), "invalid header"},
		{"header not an object", safetensorsFile(`[1]`, nil), "invalid header"},
		{"unknown dtype", safetensorsFile(`{"w":{"dtype":"F128","shape":[2],"data_offsets":[0,8]}}`, data8), "F128"},
		{"negative dim", safetensorsFile(`{"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, data8), "shape"},
		{"missing key", safetensorsFile(`{"w":{"dtype":"F32","shape":[2]}}`, data8), "keys"},
		{"overlapping offsets", safetensorsFile(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"v":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, data8), "offset"},
		{"gap between tensors", safetensorsFile(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, data8), "offset"},
		{"offsets not matching the shape", safetensorsFile(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, data8), "offsets mismatch"},
		{"truncated data", safetensorsFile(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, data8[:7]), "incomplete"},
		{"bytes after the last tensor", safetensorsFile(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 9)), "incomplete"},
		{"shape overflow", safetensorsFile(`{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, data8), "overflow"},
		{"metadata not strings", safetensorsFile(`{"__metadata__":{"a":1},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, data8), "__metadata__"},
		{"parameter of another dtype", safetensorsFile(`{"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}`, data8), `"w": dtype float64 in the file, float32`},
		{"parameter of an integer dtype", safetensorsFile(`{"w":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}}`, data8), `"w": dtype I32 in the file`},
		{"parameter of another shape", safetensorsFile(`{"w":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]}}`, data8), `"w": shape [1 2] in the file, (2) in the parameter set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Load(bytes.NewReader(tc.file), false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "nn: Params.Load: ") {
				t.Fatalf("error %q does not start with nn: Params.Load", err)
			}
			w, _ := p.Value("w")
			assertClose(t, "w after a failed Load", graphtest.Floats(w), []float64{1, 2}, 0)
		})
	}
}

// TestParamsLoadTorchFile reads testdata/params/torch.safetensors, written
// from a torch module's state_dict by scripts/gen_params_golden.py, into a
// set of its float parameters and compares every value bit for bit with
// torch's (testdata/params/torch.json). The file also holds BatchNorm's
// running statistics and I64 0-d num_batches_tracked, which are not
// parameters: unexpected keys, an error only under strict.
func TestParamsLoadTorchFile(t *testing.T) {
	raw, err := os.ReadFile("../testdata/params/torch.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tensors map[string]struct {
			Dtype  string    `json:"dtype"`
			Shape  []int     `json:"shape"`
			Values []float64 `json:"values"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	want, p := nn.NewParams(), nn.NewParams()
	params := []string{"conv1.weight", "conv1.bias", "fc.weight", "fc.bias", "bn.weight", "bn.bias"}
	for _, name := range params {
		tt, ok := doc.Tensors[name]
		if !ok {
			t.Fatalf("torch.json has no %q", name)
		}
		dt := map[string]tensor.Dtype{"float32": tensor.Float32, "float64": tensor.Float64}[tt.Dtype]
		if err := want.Add(name, denseOf(dt, tt.Values, tt.Shape...)); err != nil {
			t.Fatal(err)
		}
		if err := p.Add(name, tensor.New(tensor.WithShape(tt.Shape...), tensor.Of(dt))); err != nil {
			t.Fatal(err)
		}
	}
	const path = "../testdata/params/torch.safetensors"
	err = p.LoadFile(path, true)
	if err == nil || !strings.Contains(err.Error(), `unexpected keys "bn.num_batches_tracked", "bn.running_mean", "bn.running_var"`) {
		t.Fatalf("strict: error %v, want the three BatchNorm buffers unexpected", err)
	}
	if err := p.LoadFile(path, false); err != nil {
		t.Fatal(err)
	}
	sameValues(t, "torch's file", want, p)
}

// TestParamsSaveGoFile: Save writes testdata/params/go.safetensors byte for
// byte (scripts/gen_params_golden.py checks that file in torch: same
// values, and load_state_dict(strict=True) into torch modules accepts it).
// -update-params rewrites it.
func TestParamsSaveGoFile(t *testing.T) {
	const path = "../testdata/params/go.safetensors"
	var buf bytes.Buffer
	if err := goParams(t).Save(&buf); err != nil {
		t.Fatal(err)
	}
	if *updateParams {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("Save wrote %d bytes that differ from %s (%d bytes); header %q", buf.Len(), path, len(want), buf.Bytes()[8:min(buf.Len(), 200)])
	}
	p := emptyLike(t, goParams(t))
	if err := p.Load(bytes.NewReader(want), true); err != nil {
		t.Fatal(err)
	}
	sameValues(t, "go.safetensors", goParams(t), p)
}

// FuzzParamsLoad: Load of any bytes returns an error or loads values that
// Save writes back and Load reads again unchanged; it never panics.
func FuzzParamsLoad(f *testing.F) {
	for _, path := range []string{"../testdata/params/go.safetensors", "../testdata/params/torch.safetensors"} {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(safetensorsFile(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(safetensorsFile(`{"fc.bias":{"dtype":"F64","shape":[3],"data_offsets":[0,24]}}`, make([]byte, 24)))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := goParams(t)
		if err := p.Add("w", denseOf(tensor.Float32, []float64{1, 2}, 2)); err != nil {
			t.Fatal(err)
		}
		if err := p.Load(bytes.NewReader(b), false); err != nil {
			return
		}
		var buf bytes.Buffer
		if err := p.Save(&buf); err != nil {
			t.Fatal(err)
		}
		q := emptyLike(t, p)
		if err := q.Load(&buf, true); err != nil {
			t.Fatal(err)
		}
		sameValues(t, "Save after Load", p, q)
	})
}
