package mnist

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

// synthetic is a Dataset of n images whose pixel j of image i is
// (7i + j) mod 256, label i mod 10: every image differs from the others.
func synthetic(n int) *Dataset {
	d := &Dataset{Pixels: make([]byte, n*Size*Size), Labels: make([]int, n)}
	for i := range n {
		for j := range Size * Size {
			d.Pixels[i*Size*Size+j] = byte(7*i + j)
		}
		d.Labels[i] = i % 10
	}
	return d
}

// TestLoader: for each batch size, shuffle and drop_last, an epoch has
// len(DataLoader) batches of the right sizes, each equal to Tensors' rows
// picked by the epoch's order, every image once (none of the dropped
// ones); shuffled epochs differ and repeat for the same seed.
func TestLoader(t *testing.T) {
	const n = 10
	d := synthetic(n)
	for _, tc := range []struct {
		name                 string
		batch                int
		shuffle, dropLast    bool
		dtype                tensor.Dtype
		wantLen, wantLastLen int
	}{
		{"b3", 3, false, false, tensor.Float32, 4, 1},
		{"b3 drop", 3, false, true, tensor.Float64, 3, 3},
		{"b3 shuffle", 3, true, false, tensor.Float64, 4, 1},
		{"b3 shuffle drop", 3, true, true, tensor.Float32, 3, 3},
		{"b5 shuffle drop", 5, true, true, tensor.Float32, 2, 5},
		{"b10", 10, true, false, tensor.Float64, 1, 10},
		{"b11", 11, true, false, tensor.Float32, 1, 10},
		{"b1", 1, true, false, tensor.Float64, 10, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := Transform{Dtype: tc.dtype, Normalize: true, Mean: Mean, Std: Std}
			all, allLabels, err := d.Tensors(tr)
			if err != nil {
				t.Fatal(err)
			}
			opts := LoaderOpts{BatchSize: tc.batch, Shuffle: tc.shuffle, DropLast: tc.dropLast, Seed: 42, Transform: tr}
			l, err := NewLoader(d, opts)
			if err != nil {
				t.Fatal(err)
			}
			if l.Len() != tc.wantLen {
				t.Fatalf("Len = %d, want %d", l.Len(), tc.wantLen)
			}
			var orders [][]int
			for range 3 {
				seq := l.Epoch()
				order := l.Order()
				orders = append(orders, order)
				seen := make([]int, n)
				k := 0
				for images, labels := range seq {
					b := images.Shape()[0]
					if want := tc.batch; k == tc.wantLen-1 {
						want = tc.wantLastLen
						if b != want {
							t.Fatalf("last batch of %d, want %d", b, want)
						}
					} else if b != want {
						t.Fatalf("batch %d of %d, want %d", k, b, want)
					}
					if images.Dtype() != tc.dtype || !images.Shape().Eq(tensor.Shape{b, 1, Size, Size}) || !labels.Shape().Eq(tensor.Shape{b}) || labels.Dtype() != tensor.Int {
						t.Fatalf("batch %d: images %v %v, labels %v %v", k, images.Shape(), images.Dtype(), labels.Shape(), labels.Dtype())
					}
					got, gotLabels := floats(images), labels.Ints()
					for i, r := range order[k*tc.batch : k*tc.batch+b] {
						seen[r]++
						if !slices.Equal(got[i*Size*Size:(i+1)*Size*Size], floats(all)[r*Size*Size:(r+1)*Size*Size]) || gotLabels[i] != allLabels.Ints()[r] {
							t.Fatalf("batch %d row %d is not image %d", k, i, r)
						}
					}
					k++
				}
				if k != tc.wantLen {
					t.Fatalf("%d batches, want %d", k, tc.wantLen)
				}
				ones := 0
				for _, c := range seen {
					if c > 1 {
						t.Fatalf("an image twice in an epoch: %v", seen)
					}
					ones += c
				}
				if want := tc.wantLen*tc.batch - (tc.batch-tc.wantLastLen)*min(tc.wantLen, 1); ones != want {
					t.Fatalf("%d images in an epoch, want %d", ones, want)
				}
			}
			identity := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
			if !tc.shuffle {
				for _, o := range orders {
					if !slices.Equal(o, identity) {
						t.Fatalf("unshuffled order %v", o)
					}
				}
				return
			}
			if slices.Equal(orders[0], orders[1]) || slices.Equal(orders[1], orders[2]) || slices.Equal(orders[0], identity) {
				t.Fatalf("shuffled epochs %v", orders)
			}
			again, err := NewLoader(d, opts)
			if err != nil {
				t.Fatal(err)
			}
			for e := range orders {
				again.Epoch()
				if !slices.Equal(again.Order(), orders[e]) {
					t.Fatalf("seed 42 again, epoch %d: %v, first %v", e, again.Order(), orders[e])
				}
			}
			opts.Seed = 43
			other, err := NewLoader(d, opts)
			if err != nil {
				t.Fatal(err)
			}
			other.Epoch()
			if slices.Equal(other.Order(), orders[0]) {
				t.Fatalf("seeds 42 and 43 give %v", orders[0])
			}
		})
	}
}

// TestLoaderReusesTensors: full batches come in one pair of tensors, the
// last smaller batch in another; ranging again over an epoch repeats it.
func TestLoaderReusesTensors(t *testing.T) {
	l, err := NewLoader(synthetic(7), LoaderOpts{BatchSize: 3, Shuffle: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var images, labels []*tensor.Dense
	var first [][]int
	seq := l.Epoch()
	for im, lb := range seq {
		images, labels = append(images, im), append(labels, lb)
		first = append(first, slices.Clone(lb.Ints()))
	}
	if len(images) != 3 || images[0] != images[1] || labels[0] != labels[1] || images[2] == images[0] || labels[2] == labels[0] {
		t.Fatalf("tensors %p %p %p, %p %p %p", images[0], images[1], images[2], labels[0], labels[1], labels[2])
	}
	k := 0
	for _, lb := range seq {
		if !slices.Equal(lb.Ints(), first[k]) {
			t.Fatalf("second pass, batch %d: labels %v, first pass %v", k, lb.Ints(), first[k])
		}
		k++
		break
	}
	if k != 1 {
		t.Fatal("break did not stop the epoch")
	}
}

// TestLoaderErrors: bad options, transforms and datasets are errors
// naming the field.
func TestLoaderErrors(t *testing.T) {
	good := synthetic(4)
	for _, tc := range []struct {
		name string
		d    *Dataset
		opts LoaderOpts
		want string
	}{
		{"batch 0", good, LoaderOpts{}, "BatchSize 0"},
		{"batch -2", good, LoaderOpts{BatchSize: -2}, "BatchSize -2"},
		{"nil dataset", nil, LoaderOpts{BatchSize: 1}, "nil Dataset"},
		{"pixels short", &Dataset{Pixels: make([]byte, 10), Labels: []int{1}}, LoaderOpts{BatchSize: 1}, "10 pixels for 1 labels"},
		{"label -1", &Dataset{Pixels: make([]byte, Size*Size), Labels: []int{-1}}, LoaderOpts{BatchSize: 1}, "Labels[0] = -1"},
		{"int dtype", good, LoaderOpts{BatchSize: 1, Transform: Transform{Dtype: tensor.Int}}, "Transform.Dtype int"},
		{"std 0", good, LoaderOpts{BatchSize: 1, Transform: Transform{Normalize: true, Mean: Mean}}, "Transform.Std 0"},
		{"std -1", good, LoaderOpts{BatchSize: 1, Transform: Transform{Normalize: true, Std: -1}}, "Transform.Std -1"},
		{"std inf", good, LoaderOpts{BatchSize: 1, Transform: Transform{Normalize: true, Std: math.Inf(1)}}, "Transform.Std +Inf"},
		{"mean NaN", good, LoaderOpts{BatchSize: 1, Transform: Transform{Normalize: true, Mean: math.NaN(), Std: Std}}, "Transform.Mean NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if l, err := NewLoader(tc.d, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewLoader = %v, %v; want an error with %q", l, err, tc.want)
			}
			if tc.opts.BatchSize < 1 {
				return
			}
			if im, _, err := tc.d.Tensors(tc.opts.Transform); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Tensors = %v, %v; want an error with %q", im, err, tc.want)
			}
		})
	}
}

// TestLoaderBatchSizes: Len and the images of an epoch for batch sizes up
// to math.MaxInt (where (N + B − 1)/B overflows), and the refusal of a
// BatchSize above N with DropLast (an epoch of no batch), naming both
// numbers.
func TestLoaderBatchSizes(t *testing.T) {
	for _, tc := range []struct {
		n, batch   int
		dropLast   bool
		wantLen    int
		wantImages int
		wantErr    string
	}{
		{n: 5, batch: math.MaxInt, wantLen: 1, wantImages: 5},
		{n: 5, batch: math.MaxInt - 1, wantLen: 1, wantImages: 5},
		{n: 5, batch: 5, dropLast: true, wantLen: 1, wantImages: 5},
		{n: 25, batch: 64, wantLen: 1, wantImages: 25},
		{n: 25, batch: 12, dropLast: true, wantLen: 2, wantImages: 24},
		{n: 25, batch: 64, dropLast: true, wantErr: "mnist: NewLoader: BatchSize 64 with DropLast leaves no batch of the 25 images"},
		{n: 5, batch: math.MaxInt, dropLast: true, wantErr: fmt.Sprintf("BatchSize %d with DropLast leaves no batch of the 5 images", math.MaxInt)},
		{n: 0, batch: 1, dropLast: true, wantErr: "BatchSize 1 with DropLast leaves no batch of the 0 images"},
		{n: 0, batch: 3, wantLen: 0, wantImages: 0},
	} {
		name := fmt.Sprintf("n%d/b%d/drop%v", tc.n, tc.batch, tc.dropLast)
		t.Run(name, func(t *testing.T) {
			l, err := NewLoader(synthetic(tc.n), LoaderOpts{BatchSize: tc.batch, DropLast: tc.dropLast})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NewLoader: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.Len() != tc.wantLen {
				t.Fatalf("Len = %d, want %d", l.Len(), tc.wantLen)
			}
			images, batches := 0, 0
			for x := range l.Epoch() {
				images += x.Shape()[0]
				batches++
			}
			if images != tc.wantImages || batches != tc.wantLen {
				t.Fatalf("an epoch of %d batches, %d images; want %d, %d", batches, images, tc.wantLen, tc.wantImages)
			}
		})
	}
}

// TestNilLoader: a nil *Loader (and a nil *Dataset's Len) gives zero
// values and an empty epoch, no panic.
func TestNilLoader(t *testing.T) {
	var l *Loader
	var d *Dataset
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic: %v", r)
		}
	}()
	n := 0
	for range l.Epoch() {
		n++
	}
	if l.Len() != 0 || n != 0 || l.Order() != nil || d.Len() != 0 {
		t.Fatalf("nil Loader: Len %d, %d batches, Order %v; nil Dataset: Len %d", l.Len(), n, l.Order(), d.Len())
	}
}
