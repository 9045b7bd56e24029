package mnist

import (
	"fmt"
	"iter"
	"math/rand/v2"

	"gorgonia.org/tensor"
)

// LoaderOpts are a Loader's settings, torch.utils.data.DataLoader's
// batch_size, shuffle, generator and drop_last, and the dataset's
// transform.
type LoaderOpts struct {
	// BatchSize is the number of images in a batch, at least 1.
	BatchSize int
	// Shuffle draws a new order of the images for each epoch (torch's
	// RandomSampler); otherwise every epoch takes them in file order.
	Shuffle bool
	// Seed seeds the shuffling (math/rand/v2's PCG): the same seed gives
	// the same sequence of epochs. The orders are not torch's (another
	// generator).
	Seed uint64
	// DropLast drops the last batch of an epoch when it holds fewer than
	// BatchSize images; otherwise that batch is smaller. With DropLast,
	// NewLoader refuses a BatchSize above the number of images (torch
	// gives an epoch of no batch, a training loop that trains on nothing).
	DropLast bool
	// Transform turns the pixels into the images tensor's elements.
	Transform Transform
}

// Loader is torch.utils.data.DataLoader over a Dataset: an epoch is the
// dataset cut into batches of images [B, 1, 28, 28] (the Transform's dtype)
// and labels [B] (tensor.Int), B = BatchSize, every image in exactly one
// batch (or in none, when it falls into the partial last batch that
// DropLast drops).
//
// The batches reuse two pairs of tensors, allocated by NewLoader: one of
// BatchSize images for full batches, one for the smaller last batch. A
// batch's tensors are overwritten by the next batch of the same size, so
// gorgonia.Let them into the graph's input nodes and run the machine
// before the next iteration, and Clone what must outlive it. A graph built
// for [BatchSize, 1, 28, 28] inputs wants DropLast (or a second graph for
// the last batch).
//
// A nil *Loader has no batches: Len is 0, Epoch yields nothing and Order
// is nil.
type Loader struct {
	pixels    []byte // the Dataset's, as NewLoader found them
	labels    []int
	opts      LoaderOpts
	table     pixelTable
	rng       *rand.Rand
	order     []int
	full, end batch // the tensors of full batches and of the last, smaller one
}

// batch is a pair of tensors a Loader fills.
type batch struct{ images, labels *tensor.Dense }

// newBatch allocates a batch of b images of dtype dt.
func newBatch(b int, dt tensor.Dtype) batch {
	return batch{
		images: tensor.New(tensor.WithShape(b, 1, Size, Size), tensor.Of(dt)),
		labels: tensor.New(tensor.WithShape(b), tensor.Of(tensor.Int)),
	}
}

// NewLoader returns a Loader over d. Errors: BatchSize < 1, BatchSize
// above the number of images with DropLast (no batch at all), a bad
// Transform (dtype, Mean, Std), a nil Dataset or one whose Pixels and
// Labels lengths disagree or whose labels are not digits. The Loader keeps
// d's Pixels and Labels slices as they are now and reads their elements
// for every batch.
func NewLoader(d *Dataset, opts LoaderOpts) (*Loader, error) {
	if opts.BatchSize < 1 {
		return nil, fmt.Errorf("mnist: NewLoader: BatchSize %d, want at least 1", opts.BatchSize)
	}
	if err := d.check(); err != nil {
		return nil, fmt.Errorf("mnist: NewLoader: %w", err)
	}
	table, dt, err := opts.Transform.table()
	if err != nil {
		return nil, fmt.Errorf("mnist: NewLoader: %w", err)
	}
	n := d.Len()
	if opts.DropLast && opts.BatchSize > n {
		return nil, fmt.Errorf("mnist: NewLoader: BatchSize %d with DropLast leaves no batch of the %d images", opts.BatchSize, n)
	}
	l := &Loader{pixels: d.Pixels, labels: d.Labels, opts: opts, table: table, order: make([]int, n),
		rng: rand.New(rand.NewPCG(opts.Seed, 0x6d6e697374))} // "mnist"
	for i := range l.order {
		l.order[i] = i
	}
	if n >= opts.BatchSize {
		l.full = newBatch(opts.BatchSize, dt)
	}
	if r := n % opts.BatchSize; r > 0 && !opts.DropLast {
		l.end = newBatch(r, dt)
	}
	return l, nil
}

// Len is the number of batches in an epoch, len(DataLoader): N/B rounded
// down with DropLast, up without; 0 for a nil Loader.
func (l *Loader) Len() int {
	if l == nil {
		return 0
	}
	n, b := len(l.labels), l.opts.BatchSize
	k := n / b // not (n + b − 1)/b, which overflows for a BatchSize near math.MaxInt
	if !l.opts.DropLast && n%b != 0 {
		k++
	}
	return k
}

// Epoch starts an epoch: with Shuffle it draws a new order of the images
// (a permutation of 0..N-1, from the seeded generator), and returns the
// epoch's batches in that order, as (images, labels) pairs of the Loader's
// reused tensors (see Loader):
//
//	for images, labels := range loader.Epoch() {
//		gorgonia.Let(x, images)
//		gorgonia.Let(y, labels)
//		...
//	}
//
// Ranging over the returned sequence again repeats the same epoch; call
// Epoch again for the next one. Breaking out of the loop is fine. A nil
// Loader's epoch has no batch.
func (l *Loader) Epoch() iter.Seq2[*tensor.Dense, *tensor.Dense] {
	if l == nil {
		return func(func(*tensor.Dense, *tensor.Dense) bool) {}
	}
	if l.opts.Shuffle {
		for i := range l.order {
			l.order[i] = i
		}
		l.rng.Shuffle(len(l.order), func(i, j int) { l.order[i], l.order[j] = l.order[j], l.order[i] })
	}
	order := append([]int(nil), l.order...) // this epoch's, whatever later epochs draw
	return func(yield func(*tensor.Dense, *tensor.Dense) bool) {
		b := l.opts.BatchSize
		for k := 0; k < l.Len(); k++ {
			rows := order[k*b : min((k+1)*b, len(order))]
			t := l.full
			if len(rows) < b {
				t = l.end
			}
			l.table.gather(t.images, t.labels, l.pixels, l.labels, rows)
			if !yield(t.images, t.labels) {
				return
			}
		}
	}
}

// Order returns the order of the images in the epoch Epoch started last
// (before the first call: file order): batch k holds the dataset's images
// Order()[k*B : (k+1)*B]. The slice is a copy; nil for a nil Loader.
func (l *Loader) Order() []int {
	if l == nil {
		return nil
	}
	return append([]int(nil), l.order...)
}
