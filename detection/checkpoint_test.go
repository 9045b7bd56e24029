package detection

import (
	"archive/zip"
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/tensor"
)

// ckptGolden is testdata/detection/ckpt.json.gz or head_v1.json.gz
// (scripts/gen_detection_ckpt.py): a state dict as torch holds it.
type ckptGolden struct {
	Torch    string         `json:"torch"`
	Keys     []string       `json:"keys"`
	Dropped  []string       `json:"dropped"`
	Versions map[string]int `json:"versions"`
	Tensors  map[string]struct {
		Dtype  string    `json:"dtype"`
		Shape  []int     `json:"shape"`
		Values []float64 `json:"values"`
	} `json:"tensors"`
}

func readGolden(t *testing.T, name string) ckptGolden {
	t.Helper()
	var g ckptGolden
	golden.Decode(t, filepath.Join("..", "testdata", "detection", name), &g)
	if len(g.Keys) == 0 {
		t.Fatalf("%s has no keys", name)
	}
	return g
}

func ckptPath(name string) string { return filepath.Join("..", "testdata", "detection", name) }

// float64s returns d's elements as float64s, and its dtype's name.
func float64s(t *testing.T, d *tensor.Dense) ([]float64, string) {
	t.Helper()
	switch s := d.Data().(type) {
	case []float32:
		out := make([]float64, len(s))
		for i, x := range s {
			out[i] = float64(x)
		}
		return out, "float32"
	case []float64:
		return s, "float64"
	case float32:
		return []float64{float64(s)}, "float32"
	case float64:
		return []float64{s}, "float64"
	}
	t.Fatalf("unexpected data %T", d.Data())
	return nil, ""
}

// sameBits compares a tensor with a golden entry bit for bit.
func sameBits(t *testing.T, what string, d *tensor.Dense, dtype string, shape []int, values []float64) {
	t.Helper()
	if d == nil {
		t.Fatalf("%s: missing", what)
	}
	got, dt := float64s(t, d)
	if dt != dtype || !slices.Equal([]int(d.Shape()), shape) || len(got) != len(values) {
		t.Fatalf("%s: %s %v (%d values), want %s %v (%d)", what, dt, d.Shape(), len(got), dtype, shape, len(values))
	}
	for i := range values {
		if math.Float64bits(got[i]) != math.Float64bits(values[i]) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], values[i])
		}
	}
}

// checkAgainst compares a read checkpoint with its golden, element by
// element and bit for bit.
func checkAgainst(t *testing.T, ck *Checkpoint, g ckptGolden) {
	t.Helper()
	if !slices.Equal(ck.Keys, g.Keys) {
		t.Fatalf("keys %q, want %q", ck.Keys, g.Keys)
	}
	if !slices.Equal(ck.Dropped, g.Dropped) {
		t.Errorf("dropped %q, want %q", ck.Dropped, g.Dropped)
	}
	if len(ck.Versions) != len(g.Versions) {
		t.Errorf("versions %v, want %v", ck.Versions, g.Versions)
	}
	for k, v := range g.Versions {
		if got, ok := ck.Versions[k]; !ok || got != v {
			t.Errorf("version of %q = %d (%v), want %d", k, got, ok, v)
		}
	}
	if len(ck.Tensors) != len(g.Tensors) {
		t.Fatalf("%d tensors, want %d", len(ck.Tensors), len(g.Tensors))
	}
	for k, want := range g.Tensors {
		sameBits(t, k, ck.Tensors[k], want.Dtype, want.Shape, want.Values)
	}
}

func TestReadCheckpointFormats(t *testing.T) {
	g := readGolden(t, "ckpt.json.gz")
	for _, name := range []string{"ckpt_zip.pth", "ckpt_buf.pth", "ckpt_big.pth", "ckpt_legacy.pth"} {
		t.Run(name, func(t *testing.T) {
			ck, err := LoadCheckpoint(ckptPath(name))
			if err != nil {
				t.Fatal(err)
			}
			checkAgainst(t, ck, g)
		})
	}
}

// The layouts the golden state dict was made to hold are really there.
func TestCheckpointGoldenLayout(t *testing.T) {
	raw, err := os.ReadFile(ckptPath("ckpt_zip.pth"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	src, err := openZip(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	keys, values, _, err := stateDictEntries(src.root)
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]*tensorRef{}
	for i, k := range keys {
		refs[k] = values[i].(*tensorRef)
	}
	if s := refs["fc.weight"].stride; !slices.Equal(s, []int64{1, 3}) {
		t.Errorf("fc.weight's stride %v, want a transposed view's [1 3]", s)
	}
	w, b := refs["layer.0.weight"], refs["layer.0.bias"]
	if w.storage != b.storage || w.offset != 2 || b.offset != 5 {
		t.Errorf("layer.0's tensors: storages %q, %q at offsets %d, %d; want one storage at 2 and 5", w.storage.key, b.storage.key, w.offset, b.offset)
	}
	if l := refs["layer.1.weight"]; l.offset != 6 || !slices.Equal(l.stride, []int64{5, 1}) {
		t.Errorf("layer.1.weight at offset %d, stride %v; want 6, [5 1]", l.offset, l.stride)
	}
	if !strings.HasPrefix(zr.File[0].Name, "ckpt_zip/") {
		t.Errorf("archive prefix of %s, want ckpt_zip/", zr.File[0].Name)
	}
}
