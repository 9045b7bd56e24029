package detection

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

// weightsLike registers every tensor of g in new weights of dtype dt (the
// keys under trainable in Params, the others in Frozen), zero.
func weightsLike(t *testing.T, g ckptGolden, dt tensor.Dtype, trainable func(string) bool) *Weights {
	t.Helper()
	w, err := NewWeights(dt)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range g.Keys {
		if _, err := w.Add(k, trainable(k), g.Tensors[k].Shape...); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func isWeightOrBias(k string) bool {
	return strings.HasSuffix(k, ".weight") || strings.HasSuffix(k, ".bias")
}

// The version-1 RetinaNet and RPN head checkpoint loads under version 2's
// keys, equal to what torchvision's own load_state_dict upgraded it to.
func TestLoadStateDictUpgradesHeads(t *testing.T) {
	g := readGolden(t, "head_v1.json.gz")
	ck, err := LoadCheckpoint(ckptPath("head_v1.pth"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"head.classification_head", "head.regression_head", "rpn.head"} {
		if v, ok := ck.Versions[p]; !ok || v != 1 {
			t.Fatalf("version of %q = %d (%v), want 1", p, v, ok)
		}
	}
	w := weightsLike(t, g, tensor.Float32, isWeightOrBias)
	// Without the upgrades the v1 names are unexpected and the v2 ones missing.
	_, err = w.LoadStateDict(ck, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), `18 missing keys "head.classification_head.conv.0.0.bias"`) ||
		!strings.Contains(err.Error(), `18 unexpected keys "head.classification_head.conv.0.bias"`) {
		t.Fatalf("without upgrades: %v", err)
	}
	opts := LoadOptions{
		RetinaNetHeads: []string{"head.classification_head.", "head.regression_head."},
		RPNHeads:       []string{"rpn.head."},
	}
	ik, err := w.LoadStateDict(ck, opts)
	if err != nil || len(ik.Missing)+len(ik.Unexpected) != 0 {
		t.Fatalf("%v, %+v", err, ik)
	}
	for k, want := range g.Tensors {
		v, err := w.Value(k)
		if err != nil {
			t.Fatal(err)
		}
		sameBits(t, k, v, want.Dtype, want.Shape, want.Values)
	}
	if _, ok := ck.Tensors["head.classification_head.conv.2.weight"]; !ok {
		t.Error("LoadStateDict changed the caller's checkpoint")
	}
}

func TestCheckpointUpgradeRules(t *testing.T) {
	one := tensor.New(tensor.WithShape(1), tensor.WithBacking([]float32{1}))
	two := tensor.New(tensor.WithShape(1), tensor.WithBacking([]float32{2}))
	mk := func(versions map[string]int, keys ...string) *Checkpoint {
		ck := &Checkpoint{Tensors: map[string]*tensor.Dense{}, Versions: versions}
		for _, k := range keys {
			ck.Keys = append(ck.Keys, k)
			ck.Tensors[k] = one
		}
		return ck
	}
	cases := []struct {
		name     string
		ck       *Checkpoint
		upgrade  func(*Checkpoint) []string
		renamed  []string
		wantKeys []string
	}{
		{"retinanet no metadata", mk(nil, "h.conv.0.weight", "h.conv.6.bias", "h.cls_logits.weight"),
			func(c *Checkpoint) []string { return c.UpgradeRetinaNetHead("h.") },
			[]string{"h.conv.0.weight", "h.conv.6.bias"}, []string{"h.conv.0.0.weight", "h.conv.3.0.bias", "h.cls_logits.weight"}},
		{"retinanet version 1, prefix without dot", mk(map[string]int{"h": 1}, "h.conv.2.weight"),
			func(c *Checkpoint) []string { return c.UpgradeRetinaNetHead("h") },
			[]string{"h.conv.2.weight"}, []string{"h.conv.1.0.weight"}},
		{"retinanet version 2 kept", mk(map[string]int{"h": 2}, "h.conv.2.weight"),
			func(c *Checkpoint) []string { return c.UpgradeRetinaNetHead("h.") },
			nil, []string{"h.conv.2.weight"}},
		{"retinanet v2 layout untouched", mk(nil, "h.conv.0.0.weight", "h.conv.0.1.weight", "h.conv.1.0.weight"),
			func(c *Checkpoint) []string { return c.UpgradeRetinaNetHead("h.") },
			nil, []string{"h.conv.0.0.weight", "h.conv.0.1.weight", "h.conv.1.0.weight"}},
		{"rpn version 1", mk(map[string]int{"rpn.head": 1}, "rpn.head.conv.weight", "rpn.head.conv.bias", "rpn.head.cls_logits.bias"),
			func(c *Checkpoint) []string { return c.UpgradeRPNHead("rpn.head.") },
			[]string{"rpn.head.conv.weight", "rpn.head.conv.bias"}, []string{"rpn.head.conv.0.0.weight", "rpn.head.conv.0.0.bias", "rpn.head.cls_logits.bias"}},
		{"rpn other prefix untouched", mk(map[string]int{}, "rpn.head.conv.weight"),
			func(c *Checkpoint) []string { return c.UpgradeRPNHead("head.") },
			nil, []string{"rpn.head.conv.weight"}},
		{"nil checkpoint", nil, func(c *Checkpoint) []string { return c.UpgradeRPNHead("rpn.head.") }, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.upgrade(c.ck)
			if !slices.Equal(got, c.renamed) {
				t.Errorf("renamed %q, want %q", got, c.renamed)
			}
			if c.ck == nil {
				return
			}
			if !slices.Equal(c.ck.Keys, c.wantKeys) || len(c.ck.Tensors) != len(c.wantKeys) {
				t.Errorf("keys %q (%d tensors), want %q", c.ck.Keys, len(c.ck.Tensors), c.wantKeys)
			}
		})
	}
	// A new key already present is overwritten by the old key's tensor.
	ck := mk(nil, "h.conv.0.0.weight")
	ck.Keys = append(ck.Keys, "h.conv.0.weight")
	ck.Tensors["h.conv.0.weight"] = two
	ck.UpgradeRetinaNetHead("h.")
	if !slices.Equal(ck.Keys, []string{"h.conv.0.0.weight"}) || ck.Tensors["h.conv.0.0.weight"] != two {
		t.Errorf("overwrite: keys %q, tensor %v", ck.Keys, ck.Tensors["h.conv.0.0.weight"])
	}
}

// small is a checkpoint of float32 tensors: "a.weight" [2, 3], "a.bias" [2],
// "bn.running_mean" [2], "bn.num_batches_tracked" skipped by loading.
func small() *Checkpoint {
	f := func(shape []int, v ...float32) *tensor.Dense {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
	}
	return &Checkpoint{Tensors: map[string]*tensor.Dense{
		"a.weight":               f([]int{2, 3}, 1, 2, 3, 4, 5, 0.1),
		"a.bias":                 f([]int{2}, -1, 1),
		"bn.running_mean":        f([]int{2}, 0.5, 0.25),
		"bn.num_batches_tracked": f([]int{1}, 7),
	}}
}

func smallWeights(t *testing.T, dt tensor.Dtype, extra ...string) *Weights {
	t.Helper()
	w, err := NewWeights(dt)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range append([]string{"a.weight", "a.bias", "bn.running_mean"}, extra...) {
		shape := []int{2}
		if k == "a.weight" {
			shape = []int{2, 3}
		}
		if _, err := w.Add(k, k != "bn.running_mean", shape...); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func values(t *testing.T, w *Weights, k string) []float64 {
	t.Helper()
	v, err := w.Value(k)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := float64s(t, v)
	return got
}

func TestLoadStateDictStrictAndNonStrict(t *testing.T) {
	// Every problem at once, each list sorted.
	w := smallWeights(t, tensor.Float32, "z.missing", "b.missing")
	ck := small()
	ck.Tensors["x.unexpected"] = ck.Tensors["a.bias"]
	ck.Tensors["c.unexpected"] = ck.Tensors["a.bias"]
	ck.Tensors["bn.running_mean"] = tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{1, 2, 3}))
	ck.Tensors["a.bias"] = tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2}))
	_, err := w.LoadStateDict(ck, LoadOptions{})
	want := `detection: Weights.LoadStateDict: 2 missing keys "b.missing", "z.missing"; ` +
		`2 unexpected keys "c.unexpected", "x.unexpected"; 2 mismatched tensors: ` +
		`"a.bias": dtype float64 in the checkpoint, float32 in the weights (LoadOptions.ConvertDtype converts), ` +
		`"bn.running_mean": shape (3) in the checkpoint, (2) in the weights`
	if err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
	if v := values(t, w, "a.weight"); v[0] != 0 {
		t.Errorf("a failed load changed a.weight: %v", v)
	}
	// Non-strict: mismatches still fail.
	if _, err := w.LoadStateDict(ck, LoadOptions{NonStrict: true}); err == nil || strings.Contains(err.Error(), "missing") ||
		!strings.Contains(err.Error(), "2 mismatched tensors") {
		t.Fatalf("non-strict with mismatches: %v", err)
	}
	// Non-strict without mismatches: loads and reports.
	ck = small()
	ck.Tensors["c.unexpected"] = ck.Tensors["a.bias"]
	ik, err := w.LoadStateDict(ck, LoadOptions{NonStrict: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ik.Missing, []string{"b.missing", "z.missing"}) || !slices.Equal(ik.Unexpected, []string{"c.unexpected"}) {
		t.Errorf("%+v", ik)
	}
	if v := values(t, w, "a.weight"); !slices.Equal(v, []float64{1, 2, 3, 4, 5, float64(float32(0.1))}) {
		t.Errorf("a.weight = %v", v)
	}
	if v := values(t, w, "bn.running_mean"); !slices.Equal(v, []float64{0.5, 0.25}) {
		t.Errorf("bn.running_mean = %v", v)
	}
	// Strict and complete: num_batches_tracked is ignored.
	w = smallWeights(t, tensor.Float32)
	if ik, err := w.LoadStateDict(small(), LoadOptions{}); err != nil || ik.Missing != nil || ik.Unexpected != nil {
		t.Fatalf("%v %+v", err, ik)
	}
}

func TestLoadStateDictConvertDtype(t *testing.T) {
	w := smallWeights(t, tensor.Float64)
	if _, err := w.LoadStateDict(small(), LoadOptions{}); err == nil || !strings.Contains(err.Error(), "3 mismatched tensors") {
		t.Fatalf("float32 into float64 without ConvertDtype: %v", err)
	}
	if _, err := w.LoadStateDict(small(), LoadOptions{ConvertDtype: true}); err != nil {
		t.Fatal(err)
	}
	if v := values(t, w, "a.weight"); v[5] != float64(float32(0.1)) {
		t.Errorf("float32 0.1 converted to %v", v[5])
	}
	// float64 to float32 rounds to nearest; a transposed view loads in row-major order.
	w32 := smallWeights(t, tensor.Float32)
	ck := &Checkpoint{Tensors: map[string]*tensor.Dense{}}
	for k, d := range small().Tensors {
		vals, _ := float64s(t, d)
		ck.Tensors[k] = tensor.New(tensor.WithShape(d.Shape().Clone()...), tensor.WithBacking(vals))
	}
	tr := tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 4, 2, 5, 3, 0.1}))
	if err := tr.T(); err != nil {
		t.Fatal(err)
	}
	ck.Tensors["a.weight"] = tr
	if _, err := w32.LoadStateDict(ck, LoadOptions{ConvertDtype: true}); err != nil {
		t.Fatal(err)
	}
	if v := values(t, w32, "a.weight"); !slices.Equal(v, []float64{1, 2, 3, 4, 5, float64(float32(0.1))}) {
		t.Errorf("a.weight = %v", v)
	}
}

func TestLoadStateDictBadInput(t *testing.T) {
	w := smallWeights(t, tensor.Float32)
	nilT := small()
	nilT.Tensors["a.bias"] = nil
	ints := small()
	ints.Tensors["a.bias"] = tensor.New(tensor.WithShape(2), tensor.WithBacking([]int64{1, 2}))
	cases := []struct {
		name string
		w    *Weights
		ck   *Checkpoint
		want string
	}{
		{"nil weights", nil, small(), "the weights are nil"},
		{"nil checkpoint", w, nil, "the checkpoint is nil"},
		{"nil tensor", w, nilT, `"a.bias": the tensor is nil`},
		{"int64 tensor", w, ints, `"a.bias": dtype int64 in the checkpoint is not float32 or float64`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.w.LoadStateDict(c.ck, LoadOptions{ConvertDtype: true})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func TestWeightsSafetensorsRoundTrip(t *testing.T) {
	g := readGolden(t, "ckpt.json.gz")
	ck, err := LoadCheckpoint(ckptPath("ckpt_zip.pth"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		w := weightsLike(t, g, dt, isWeightOrBias)
		if _, err := w.LoadStateDict(ck, LoadOptions{ConvertDtype: true}); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := w.Save(&buf); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "w.safetensors")
		if err := w.SaveFile(path); err != nil {
			t.Fatal(err)
		}
		back := weightsLike(t, g, dt, isWeightOrBias)
		if err := back.Load(bytes.NewReader(buf.Bytes()), true); err != nil {
			t.Fatal(err)
		}
		fromFile := weightsLike(t, g, dt, isWeightOrBias)
		if err := fromFile.LoadFile(path, true); err != nil {
			t.Fatal(err)
		}
		for _, k := range g.Keys {
			want := values(t, w, k)
			if got := values(t, back, k); !slices.Equal(got, want) {
				t.Errorf("%v %s: %v, want %v", dt, k, got, want)
			}
			if got := values(t, fromFile, k); !slices.Equal(got, want) {
				t.Errorf("%v %s from file: %v, want %v", dt, k, got, want)
			}
		}
		// Strict: a weight the file lacks is an error, nothing changes.
		more := weightsLike(t, g, dt, isWeightOrBias)
		if _, err := more.Add("extra.weight", true, 2); err != nil {
			t.Fatal(err)
		}
		err := more.Load(bytes.NewReader(buf.Bytes()), true)
		if err == nil || !strings.Contains(err.Error(), `missing keys "extra.weight"`) {
			t.Fatalf("strict load with a missing key: %v", err)
		}
		if v := values(t, more, "conv.bias"); v[0] != 0 {
			t.Errorf("failed load changed conv.bias: %v", v)
		}
		if err := more.Load(bytes.NewReader(buf.Bytes()), false); err != nil {
			t.Fatal(err)
		}
		if got, want := values(t, more, "conv.bias"), values(t, w, "conv.bias"); !slices.Equal(got, want) {
			t.Errorf("non-strict load: %v, want %v", got, want)
		}
	}
	var nilW *Weights
	if err := nilW.Save(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "Weights.Save: the weights are nil") {
		t.Errorf("nil Save: %v", err)
	}
	if err := nilW.LoadFile("x", true); err == nil || !strings.Contains(err.Error(), "Weights.LoadFile: the weights are nil") {
		t.Errorf("nil LoadFile: %v", err)
	}
	w := weightsLike(t, g, tensor.Float32, isWeightOrBias)
	if err := w.LoadFile(filepath.Join(t.TempDir(), "absent"), true); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("absent file: %v", err)
	}
	if err := w.Load(strings.NewReader("not safetensors"), true); err == nil || !strings.Contains(err.Error(), "Weights.Load") {
		t.Errorf("garbage: %v", err)
	}
}
