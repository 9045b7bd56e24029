// Package photo is the examples' photograph as a tensor.
package photo

import (
	"bytes"
	_ "embed" // the photograph
	"fmt"
	"image"
	"image/jpeg"

	"gorgonia.org/tensor"
)

// jpegBytes is a 150×103 photograph of a plush Go gopher held by two hands
// (golang.org/x/exp, shiny/iconvg/testdata/video-005.jpeg; © The Go
// Authors, BSD-3-Clause, https://go.dev/LICENSE).
//
//go:embed video-005.jpeg
var jpegBytes []byte

// Gopher is the photograph as [1, 3, 103, 150] float64 RGB planes with
// values in [0, 1]. Errors: the embedded JPEG does not decode.
func Gopher() (*tensor.Dense, error) {
	img, err := jpeg.Decode(bytes.NewReader(jpegBytes))
	if err != nil {
		return nil, fmt.Errorf("photo: decoding the photograph: %w", err)
	}
	return imageTensor(img), nil
}

// imageTensor is img as [1, 3, H, W] with values in [0, 1].
func imageTensor(img image.Image) *tensor.Dense {
	r := img.Bounds()
	h, w := r.Dy(), r.Dx()
	data := make([]float64, 3*h*w)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			cr, cg, cb, _ := img.At(r.Min.X+x, r.Min.Y+y).RGBA()
			data[y*w+x], data[h*w+y*w+x], data[2*h*w+y*w+x] = float64(cr)/0xffff, float64(cg)/0xffff, float64(cb)/0xffff
		}
	}
	return tensor.New(tensor.WithShape(1, 3, h, w), tensor.WithBacking(data))
}
