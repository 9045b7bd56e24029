package mnist

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/tensor"
)

// mnistCase is one image of testdata/mnist_golden.json.gz
// (testdata/gen_golden_mnist.py): torchvision.datasets.MNIST's item with
// ToTensor, and with ToTensor and Normalize((0.1307,), (0.3081,)).
type mnistCase struct {
	Train       bool      `json:"train"`
	Index       int       `json:"index"`
	Label       int       `json:"label"`
	ToTensor    []float64 `json:"to_tensor"`
	Normalized  []float64 `json:"normalized"`
	ToTensorSum float64   `json:"to_tensor_sum"`
}

// TestLoadGolden: the module's files, read by Load and turned into tensors
// by Tensors, give torchvision's images (float32 bit for bit, float64 to
// float32's rounding) and labels, and its split lengths.
func TestLoadGolden(t *testing.T) {
	var doc struct {
		TrainLen int         `json:"train_len"`
		TestLen  int         `json:"test_len"`
		Cases    []mnistCase `json:"cases"`
	}
	golden.Decode(t, "../../testdata/mnist_golden.json.gz", &doc)
	if len(doc.Cases) == 0 {
		t.Fatal("no cases")
	}
	splits := map[bool]*Dataset{}
	for _, train := range []bool{true, false} {
		d, err := Load("", train)
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]int{true: doc.TrainLen, false: doc.TestLen}[train]
		if d.Len() != want || d.Train != train || len(d.Pixels) != want*Size*Size {
			t.Fatalf("train %v: %d images, %d pixels, Train %v; torchvision has %d", train, d.Len(), len(d.Pixels), d.Train, want)
		}
		splits[train] = d
	}
	norm := Transform{Normalize: true, Mean: Mean, Std: Std}
	for _, c := range doc.Cases {
		d := splits[c.Train]
		one := &Dataset{Pixels: d.Pixels[c.Index*Size*Size : (c.Index+1)*Size*Size], Labels: d.Labels[c.Index : c.Index+1]}
		for _, tc := range []struct {
			tr         Transform
			want       []float64
			rtol, atol float64 // float64 against torch's float32
		}{
			{Transform{}, c.ToTensor, 0, 0},
			{norm, c.Normalized, 0, 0},
			{Transform{Dtype: tensor.Float64}, c.ToTensor, 6e-8, 0},
			{Transform{Dtype: tensor.Float64, Normalize: true, Mean: Mean, Std: Std}, c.Normalized, 2e-7, 1e-7},
		} {
			images, labels, err := one.Tensors(tc.tr)
			if err != nil {
				t.Fatal(err)
			}
			if !images.Shape().Eq(tensor.Shape{1, 1, Size, Size}) || labels.Ints()[0] != c.Label {
				t.Fatalf("train %v #%d: shape %v, label %v, torchvision's %d", c.Train, c.Index, images.Shape(), labels.Ints(), c.Label)
			}
			golden.AssertClose(t, "image", floats(images), tc.want, tc.rtol, tc.atol)
		}
		sum := 0.0
		for _, v := range c.ToTensor {
			sum += v
		}
		if math.Abs(sum-c.ToTensorSum) > 1e-9 {
			t.Errorf("train %v #%d: the golden image sums to %v, torchvision says %v", c.Train, c.Index, sum, c.ToTensorSum)
		}
	}
	// The whole test split: its rows are the single images.
	images, labels, err := splits[false].Tensors(norm)
	if err != nil {
		t.Fatal(err)
	}
	if !images.Shape().Eq(tensor.Shape{doc.TestLen, 1, Size, Size}) || images.Dtype() != tensor.Float32 {
		t.Fatalf("test split images %v %v", images.Shape(), images.Dtype())
	}
	all := images.Float32s()
	for _, c := range doc.Cases {
		if c.Train {
			continue
		}
		if labels.Ints()[c.Index] != c.Label {
			t.Errorf("labels[%d] = %d, want %d", c.Index, labels.Ints()[c.Index], c.Label)
		}
		for j, w := range c.Normalized {
			if g := all[c.Index*Size*Size+j]; float64(g) != w {
				t.Fatalf("images[%d] element %d = %v, want %v", c.Index, j, g, w)
			}
		}
	}
}

// floats is a float32 or float64 tensor's elements as float64s.
func floats(t *tensor.Dense) []float64 { return graphtest.Floats(t) }

// idxFile is a gzipped IDX file: the big-endian header words, then body.
func idxFile(head []uint32, body []byte) []byte {
	var raw bytes.Buffer
	binary.Write(&raw, binary.BigEndian, head)
	raw.Write(body)
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(raw.Bytes())
	w.Close()
	return z.Bytes()
}

// fixture writes a data folder of n images per split (image i of the
// training split has every pixel 10·i+1, label (i+3) mod 10; the test
// split's pixels are 200+i, labels i) and returns it, after edit changed
// the files' contents.
func fixture(t *testing.T, n int, edit func(files map[string][]byte)) string {
	t.Helper()
	img := func(base int) []byte {
		b := make([]byte, n*Size*Size)
		for i := range b {
			b[i] = byte(base + 10*(i/(Size*Size)))
		}
		return b
	}
	lbl := func(off int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte((i + off) % 10)
		}
		return b
	}
	testImg := make([]byte, n*Size*Size)
	for i := range testImg {
		testImg[i] = byte(200 + i/(Size*Size))
	}
	files := map[string][]byte{
		TrainImages: idxFile([]uint32{0x803, uint32(n), Size, Size}, img(1)),
		TrainLabels: idxFile([]uint32{0x801, uint32(n)}, lbl(3)),
		TestImages:  idxFile([]uint32{0x803, uint32(n), Size, Size}, testImg),
		TestLabels:  idxFile([]uint32{0x801, uint32(n)}, lbl(0)),
	}
	if edit != nil {
		edit(files)
	}
	dir := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestLoadFixture: Load reads a folder of small files exactly, each split
// from its own files.
func TestLoadFixture(t *testing.T) {
	dir := fixture(t, 3, nil)
	for _, train := range []bool{true, false} {
		d, err := Load(dir, train)
		if err != nil {
			t.Fatal(err)
		}
		if d.Len() != 3 || len(d.Pixels) != 3*Size*Size {
			t.Fatalf("train %v: %d images, %d pixels", train, d.Len(), len(d.Pixels))
		}
		for i := 0; i < 3; i++ {
			px, label := byte(200+i), i
			if train {
				px, label = byte(1+10*i), (i+3)%10
			}
			if d.Pixels[i*Size*Size] != px || d.Pixels[(i+1)*Size*Size-1] != px || d.Labels[i] != label {
				t.Errorf("train %v image %d: pixels %d…%d, label %d; want %d, %d", train, i,
					d.Pixels[i*Size*Size], d.Pixels[(i+1)*Size*Size-1], d.Labels[i], px, label)
			}
		}
	}
}

// TestLoadErrors: a missing or corrupt data folder is an error naming the
// file and the problem.
func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
		want string
	}{
		{"missing folder", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nothing") }, "no such file"},
		{"missing file", func(t *testing.T) string {
			return fixture(t, 2, func(f map[string][]byte) { delete(f, TestLabels) })
		}, TestLabels},
		{"not gzip", func(t *testing.T) string {
			return fixture(t, 2, func(f map[string][]byte) { f[TrainImages] = []byte("not a gzip file at all") })
		}, "gzip"},
		{"empty file", func(t *testing.T) string {
			return fixture(t, 2, func(f map[string][]byte) { f[TrainLabels] = idxFile(nil, nil) })
		}, "header"},
		{"bad magic", func(t *testing.T) string {
			return fixture(t, 2, func(f map[string][]byte) {
				f[TrainImages] = idxFile([]uint32{0x801, 2, Size, Size}, make([]byte, 2*Size*Size))
			})
		}, "magic number 0x801, want 0x803"},
		{"image size", func(t *testing.T) string {
			return fixture(t, 2, func(f map[string][]byte) {
				f[TrainImages] = idxFile([]uint32{0x803, 2, 27, Size}, make([]byte, 2*27*Size))
			})
		}, "images of 27x28"},
		{"huge count", func(t *testing.T) string {
			return fixture(t, 2, func(f map[string][]byte) {
				f[TrainImages] = idxFile([]uint32{0x803, 1 << 31, Size, Size}, nil)
			})
		}, "more than"},
		{"truncated images", func(t *testing.T) string {
			return fixture(t, 2, func(f map[string][]byte) {
				f[TrainImages] = idxFile([]uint32{0x803, 2, Size, Size}, make([]byte, Size*Size+5))
			})
		}, "unexpected EOF"},
		{"truncated labels", func(t *testing.T) string {
			return fixture(t, 2, func(f map[string][]byte) { f[TrainLabels] = idxFile([]uint32{0x801, 2}, []byte{1}) })
		}, "EOF"},
		{"counts differ", func(t *testing.T) string {
			return fixture(t, 2, func(f map[string][]byte) { f[TrainLabels] = idxFile([]uint32{0x801, 1}, []byte{1}) })
		}, "holds 2 images but"},
		{"label 10", func(t *testing.T) string {
			return fixture(t, 2, func(f map[string][]byte) { f[TrainLabels] = idxFile([]uint32{0x801, 2}, []byte{1, 10}) })
		}, "Labels[1] = 10, not a digit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Load(tc.dir(t), true)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "mnist: ") {
				t.Fatalf("Load = %v, %v; want an error with %q", d, err, tc.want)
			}
		})
	}
}
