package mnist

// Review 27 attacks on the loader. A failure is a finding in
// /work/wt/notes-review27.md.

import (
	"math"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

func TestReview27LoaderBadInput(t *testing.T) {
	d := synthetic(25)
	for _, c := range []struct {
		name string
		d    *Dataset
		o    LoaderOpts
		want string
	}{
		{"nil dataset", nil, LoaderOpts{BatchSize: 4}, "nil"},
		{"batch 0", d, LoaderOpts{}, "BatchSize"},
		{"batch -1", d, LoaderOpts{BatchSize: -1}, "BatchSize"},
		{"int dtype", d, LoaderOpts{BatchSize: 4, Transform: Transform{Dtype: tensor.Int}}, "int"},
		{"std 0", d, LoaderOpts{BatchSize: 4, Transform: Transform{Normalize: true, Std: 0}}, "Std"},
		{"mean NaN", d, LoaderOpts{BatchSize: 4, Transform: Transform{Normalize: true, Mean: math.NaN(), Std: 1}}, "Mean"},
		{"labels short", &Dataset{Pixels: make([]byte, 2*Size*Size), Labels: []int{1}}, LoaderOpts{BatchSize: 1}, "pixels"},
		{"label 10", &Dataset{Pixels: make([]byte, Size*Size), Labels: []int{10}}, LoaderOpts{BatchSize: 1}, "Labels[0]"},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panic %v", c.name, r)
				}
			}()
			_, err := NewLoader(c.d, c.o)
			t.Logf("%s: %v", c.name, err)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
			}
		}()
	}
}

// BatchSize larger than the dataset: with DropLast an epoch has no batch
// at all (torch too) — a training loop silently trains on nothing; without
// DropLast one batch of all images.
func TestReview27LoaderBatchLargerThanDataset(t *testing.T) {
	d := synthetic(25)
	l, err := NewLoader(d, LoaderOpts{BatchSize: 64, DropLast: true})
	if err != nil {
		t.Logf("refused: %v", err)
	} else {
		n := 0
		for range l.Epoch() {
			n++
		}
		t.Logf("BatchSize 64 > 25 images with DropLast: %d batches, no error (Len %d)", n, l.Len())
	}
	l, err = NewLoader(d, LoaderOpts{BatchSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for x, _ := range l.Epoch() {
		n += x.Shape()[0]
	}
	if n != 25 {
		t.Errorf("BatchSize 64, no DropLast: %d images in the epoch, want 25", n)
	}
}

// BatchSize near MaxInt: Len computes (n + b − 1) / b, which overflows.
func TestReview27LoaderHugeBatch(t *testing.T) {
	d := synthetic(5)
	l, err := NewLoader(d, LoaderOpts{BatchSize: math.MaxInt})
	if err != nil {
		t.Logf("refused: %v", err)
		return
	}
	if l.Len() != 1 {
		t.Errorf("BatchSize MaxInt over 5 images: Len() = %d, want 1 (n + b − 1 overflows)", l.Len())
	}
	n := 0
	for x, _ := range l.Epoch() {
		n += x.Shape()[0]
	}
	if n != 5 {
		t.Errorf("BatchSize MaxInt over 5 images: the epoch yields %d images, want 5", n)
	}
}

// A nil *Loader: Epoch/Len panic.
func TestReview27NilLoader(t *testing.T) {
	var l *Loader
	defer func() {
		if r := recover(); r != nil {
			t.Logf("nil Loader: Len panics: %v (acceptable for a method on nil? Params' methods return errors)", r)
		}
	}()
	_ = l.Len()
}
