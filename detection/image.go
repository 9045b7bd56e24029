package detection

import (
	"fmt"
	"image"
	"image/color"

	"gorgonia.org/tensor"
)

// ImageToTensor is torchvision.transforms.functional.to_tensor of an
// image: [3, H, W], the red, green and blue planes of img (non-
// premultiplied 8-bit values, as a PIL RGB image holds them) divided by
// 255, in dtype dt, the input the detectors' Forward takes. Any
// image.Image works (image/jpeg and image/png decode into one); alpha is
// dropped as PIL's convert("RGB") drops it.
//
// Errors: img is nil or empty; dt is not float32 or float64.
func ImageToTensor(img image.Image, dt tensor.Dtype) (*tensor.Dense, error) {
	if img == nil {
		return nil, fmt.Errorf("detection: ImageToTensor: the image is nil")
	}
	b := img.Bounds()
	h, w := b.Dy(), b.Dx()
	if h < 1 || w < 1 {
		return nil, fmt.Errorf("detection: ImageToTensor: the image is %d×%d, want at least 1×1", w, h)
	}
	rgb := make([]uint8, 3*h*w)
	for y := range h {
		for x := range w {
			c := color.NRGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
			i := y*w + x
			rgb[i], rgb[h*w+i], rgb[2*h*w+i] = c.R, c.G, c.B
		}
	}
	switch dt {
	case tensor.Float32:
		data := make([]float32, len(rgb))
		for i, v := range rgb {
			data[i] = float32(v) / 255
		}
		return tensor.New(tensor.WithShape(3, h, w), tensor.WithBacking(data)), nil
	case tensor.Float64:
		data := make([]float64, len(rgb))
		for i, v := range rgb {
			data[i] = float64(v) / 255
		}
		return tensor.New(tensor.WithShape(3, h, w), tensor.WithBacking(data)), nil
	}
	return nil, fmt.Errorf("detection: ImageToTensor: dtype %v is not float32 or float64", dt)
}
