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
	for _, name := range []string{"ckpt_zip.pth", "ckpt_buf.pth", "ckpt_big.pth", "ckpt_legacy.pth", "ckpt_params.pth"} {
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
	_, zr, refs := goldenZip(t, "ckpt_zip.pth")
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

func TestReadCheckpointBadFiles(t *testing.T) {
	cases := []struct{ file, want string }{
		{"bad_list.pth", "the file holds a list, not a state dict"},
		{"bad_nested.pth", `state dict entry "a" is a dict, not a tensor`},
		{"bad_key.pth", "the state dict has a key of type int, not str"},
		{"bad_int16.pth", `tensor "a.weight" is stored in a torch.ShortStorage: only float32`},
		{"bad_int64.pth", `tensor "a.weight" is stored in a torch.LongStorage`},
		{"bad_half.pth", `tensor "a.weight" is stored in a torch.HalfStorage`},
		{"bad_short.pth", `tensor "w": storage "0" holds 8 bytes, its 4 elements of FloatStorage need 16`},
		{"bad_numel.pth", `tensor "w": storage "0" claims 1099511627776 elements in a file of`},
		{"bad_size.pth", `tensor "w": size [2147483648 2147483648] has more elements than storage "0"'s 2`},
		{"bad_stride.pth", `tensor "w": storage offset 0, size [1 2] and stride [1 4611686018427387904] reach outside storage "0"`},
		{"bad_offset.pth", `tensor "w": storage offset 2 is outside storage "0" of 2 elements`},
		{"bad_negative.pth", `tensor "w": size [-1] or stride [1] is negative`},
		{"bad_nostorage.pth", `tensor "w": storage "7": no record archive/data/7`},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			_, err := LoadCheckpoint(ckptPath(c.file))
			if err == nil || !strings.Contains(err.Error(), "detection: ReadCheckpoint: "+c.want) || !strings.Contains(err.Error(), c.file) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// rezip copies the zip archive raw through edit (nil drops a record) and
// adds empty records named extra.
func rezip(t *testing.T, raw []byte, edit func(name string, data []byte) []byte, extra ...string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		var data bytes.Buffer
		if _, err := data.ReadFrom(rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
		if b := edit(f.Name, data.Bytes()); b != nil {
			writeRecord(t, zw, f.Name, b)
		}
	}
	for _, name := range extra {
		writeRecord(t, zw, name, nil)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func writeRecord(t *testing.T, zw *zip.Writer, name string, b []byte) {
	t.Helper()
	fw, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(b); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(ckptPath(name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestReadCheckpointCorrupt(t *testing.T) {
	zipped, legacy := readFile(t, "ckpt_buf.pth"), readFile(t, "ckpt_legacy.pth")
	edit := func(record string, with func([]byte) []byte) []byte {
		return rezip(t, zipped, func(name string, b []byte) []byte {
			if name == record {
				return with(b)
			}
			return b
		})
	}
	compressed := func() []byte {
		var out bytes.Buffer
		zw := zip.NewWriter(&out)
		fw, _ := zw.CreateHeader(&zip.FileHeader{Name: "archive/data.pkl", Method: zip.Deflate, UncompressedSize64: 1 << 40})
		fw.Write([]byte("\x80\x02}q\x00."))
		zw.Close()
		b := out.Bytes()
		// Claim 2^40 bytes in the central directory's uncompressed size.
		i := bytes.LastIndex(b, []byte("PK\x01\x02"))
		copy(b[i+24:], []byte{0xff, 0xff, 0xff, 0x7f})
		return b
	}()
	cases := []struct {
		name string
		raw  []byte
		want string
	}{
		{"empty", nil, "neither a zip archive nor a legacy torch.save file"},
		{"text", []byte("hello, world\n"), "neither a zip archive nor a legacy torch.save file"},
		{"pickled int", []byte("\x80\x02K\x05."), "neither a zip archive nor a legacy torch.save file"},
		{"zip without data.pkl", rezip(t, zipped, func(name string, b []byte) []byte {
			if strings.HasSuffix(name, "data.pkl") {
				return nil
			}
			return b
		}), "a zip archive without a <folder>/data.pkl record"},
		{"torchscript", rezip(t, zipped, func(_ string, b []byte) []byte { return b }, "archive/constants.pkl"),
			"record archive/constants.pkl: a TorchScript archive (torch.jit.save), not a torch.save state dict"},
		{"bad version record", edit("archive/version", func([]byte) []byte { return []byte("x") }), `record archive/version is "x", not a format version`},
		{"bad byteorder", edit("archive/byteorder", func([]byte) []byte { return []byte("middle") }), `record archive/byteorder is "middle"`},
		{"storage record short", edit("archive/data/0", func(b []byte) []byte { return b[:len(b)-4] }), `holds`},
		{"pickle without STOP", edit("archive/data.pkl", func(b []byte) []byte { return b[:len(b)-1] }), "the pickle ends before its STOP opcode"},
		{"pickle claims 2^62 bytes", edit("archive/data.pkl", func([]byte) []byte {
			return []byte("\x80\x04\x8e\x00\x00\x00\x00\x00\x00\x00\x40.")
		}), "claims 4611686018427387904 bytes"},
		{"pickle frame of 2^40", edit("archive/data.pkl", func([]byte) []byte {
			return []byte("\x80\x04\x95\x00\x00\x00\x00\x00\x01\x00\x00.")
		}), "claims 1099511627776 bytes"},
		{"not an opcode", edit("archive/data.pkl", func([]byte) []byte { return []byte("\x80\x02\xff.") }), "0xff is not a pickle opcode"},
		{"unknown class", edit("archive/data.pkl", func([]byte) []byte { return []byte("\x80\x02cos\nsystem\n.") }), "names os.system"},
		{"compressed record claims 2^40", compressed, "claims"},
		{"legacy bad protocol", bytes.Replace(legacy, []byte("M\xe9\x03"), []byte("M\xea\x03"), 1), "protocol version is 1002"},
		{"legacy storages cut", legacy[:len(legacy)-5], "the file has"},
		{"legacy without storages", legacy[:legacyPickles(t, legacy)], "the file ends"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadCheckpoint(bytes.NewReader(c.raw), int64(len(c.raw)))
			if err == nil || !strings.HasPrefix(err.Error(), "detection: ReadCheckpoint: ") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	if _, err := ReadCheckpoint(nil, 0); err == nil || !strings.Contains(err.Error(), "the reader is nil") {
		t.Errorf("nil reader: %v", err)
	}
	if _, err := ReadCheckpoint(bytes.NewReader(zipped), -1); err == nil || !strings.Contains(err.Error(), "size -1 is negative") {
		t.Errorf("negative size: %v", err)
	}
	if _, err := LoadCheckpoint(filepath.Join(t.TempDir(), "absent.pth")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("absent file: %v", err)
	}
}

// Every truncation and many single-byte flips of the golden files give an
// error or a checkpoint, never a panic; a flip inside a zip record is a
// checksum error.
func TestReadCheckpointTruncatedAndFlipped(t *testing.T) {
	for _, name := range []string{"ckpt_zip.pth", "ckpt_legacy.pth", "head_v1.pth"} {
		raw := readFile(t, name)
		for n := 0; n < len(raw); n++ {
			if _, err := ReadCheckpoint(bytes.NewReader(raw[:n]), int64(n)); err == nil {
				t.Fatalf("%s cut to %d bytes read without error", name, n)
			}
		}
		step := 1 + len(raw)/2000
		for i := 0; i < len(raw); i += step {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				b := slices.Clone(raw)
				b[i] ^= x
				ReadCheckpoint(bytes.NewReader(b), int64(len(b)))
			}
		}
	}
	raw, zr, refs := goldenZip(t, "ckpt_zip.pth")
	dropped := "ckpt_zip/data/" + refs["bn.num_batches_tracked"].storage.key
	for _, f := range zr.File {
		if f.Name == dropped { // never read
			continue
		}
		off, err := f.DataOffset()
		if err != nil {
			t.Fatal(err)
		}
		for i := off; i < off+int64(f.CompressedSize64); i += 7 {
			b := slices.Clone(raw)
			b[i] ^= 0x10
			if _, err := ReadCheckpoint(bytes.NewReader(b), int64(len(b))); err == nil || !strings.Contains(err.Error(), "checksum") {
				t.Fatalf("byte %d of record %s flipped: %v", i, f.Name, err)
			}
		}
	}
}

// legacyPickles returns the length of the five pickles of a legacy file,
// where its storages begin.
func legacyPickles(t *testing.T, raw []byte) int {
	t.Helper()
	var off int64
	for range 5 {
		_, n, err := readPickle(bytes.NewReader(raw), off, int64(len(raw)), &storageTable{})
		if err != nil {
			t.Fatal(err)
		}
		off += n
	}
	return int(off)
}

func FuzzReadCheckpoint(f *testing.F) {
	names, err := filepath.Glob(ckptPath("*.pth"))
	if err != nil || len(names) == 0 {
		f.Fatalf("no seeds: %v", err)
	}
	for _, name := range names {
		raw, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ck, err := ReadCheckpoint(bytes.NewReader(raw), int64(len(raw)))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "detection: ReadCheckpoint: ") {
				t.Fatalf("error without the function's name: %v", err)
			}
			return
		}
		var total int
		for _, k := range ck.Keys {
			d, ok := ck.Tensors[k]
			if !ok || d == nil {
				t.Fatalf("key %q has no tensor", k)
			}
			n := d.Shape().TotalSize()
			if d.Dims() == 0 {
				n = 1
			}
			if d.DataSize() != n {
				t.Fatalf("%q: shape %v holds %d elements", k, d.Shape(), d.DataSize())
			}
			total += n * int(d.Dtype().Size())
		}
		if len(ck.Tensors) != len(ck.Keys) || total > 4*len(raw) {
			t.Fatalf("%d tensors for %d keys, %d bytes from a file of %d", len(ck.Tensors), len(ck.Keys), total, len(raw))
		}
	})
}

// goldenZip opens the golden zip checkpoint name: its bytes, its records,
// and its state dict's tensors by key as the pickle names them.
func goldenZip(t *testing.T, name string) ([]byte, *zip.Reader, map[string]*tensorRef) {
	t.Helper()
	raw := readFile(t, name)
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
	return raw, zr, refs
}
