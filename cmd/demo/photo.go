package main

import (
	"bytes"
	_ "embed" // for the embedded photograph
	"fmt"
	"image"
	"image/jpeg"

	"gorgonia.org/tensor"
)

// photoJPEG is a 150x103 colour photograph of a plush Go gopher (with
// goggles) held by two hands on a table; no face is visible.
//
// Origin: golang.org/x/exp, shiny/iconvg/testdata/video-005.jpeg, which its
// README says "comes from an old version of the Go repository" (the colour
// original of $GOROOT/src/image/testdata/video-005.gray.*). Copyright The Go
// Authors, BSD-3-Clause licence (https://go.dev/LICENSE).
//
//go:embed video-005.jpeg
var photoJPEG []byte

// photoName is the embedded photograph's file name, for messages.
const photoName = "video-005.jpeg"

// Box is a hand-placed region of the photograph, in pixel coordinates:
// pixel (i, j) covers [j, j+1) x [i, i+1), so a box that encloses pixels
// x0..x1 (inclusive) spans X1 = x0 to X2 = x1+1.
type Box struct {
	Name           string
	X1, Y1, X2, Y2 float64
}

// photoBoxes are the boxes placed by hand around objects in the photograph.
var photoBoxes = []Box{
	{"gopher", 58, 6, 131, 97},
	{"goggles", 60, 8, 113, 31},
	{"snout", 66, 26, 89, 44},
	{"left hand", 0, 32, 54, 92},
	{"right hand", 117, 34, 150, 100},
}

// LoadPhoto decodes the embedded photograph.
func LoadPhoto() (image.Image, error) {
	img, err := jpeg.Decode(bytes.NewReader(photoJPEG))
	if err != nil {
		return nil, fmt.Errorf("decoding embedded %s: %w", photoName, err)
	}
	return img, nil
}

// ImageTensor converts img to a [1, 3, H, W] float64 tensor (RGB planes,
// values in [0, 1]), the NCHW layout RoIAlign expects.
func ImageTensor(img image.Image) *tensor.Dense {
	b := img.Bounds()
	h, w := b.Dy(), b.Dx()
	data := make([]float64, 3*h*w)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r, g, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
			i := y*w + x
			data[i] = float64(r) / 0xffff
			data[h*w+i] = float64(g) / 0xffff
			data[2*h*w+i] = float64(bl) / 0xffff
		}
	}
	return tensor.New(tensor.WithShape(1, 3, h, w), tensor.WithBacking(data))
}

// BoxesTensor converts boxes to RoIAlign's [K, 5] float64 layout, rows
// (batch_index = 0, x1, y1, x2, y2).
func BoxesTensor(boxes []Box) *tensor.Dense {
	data := make([]float64, 0, 5*len(boxes))
	for _, b := range boxes {
		data = append(data, 0, b.X1, b.Y1, b.X2, b.Y2)
	}
	return tensor.New(tensor.WithShape(len(boxes), 5), tensor.WithBacking(data))
}
