package detection

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/tensor"
)

// GeneralizedRCNNTransform is torchvision's transform.GeneralizedRCNNTransform
// on values: each image is normalised, resized so that its shorter side is
// the min size unless its longer side would pass MaxSize (bilinear, as
// torchvision), and the batch is zero-padded to a common size divisible by
// SizeDivisible. Postprocess maps detections back to the original sizes.
//
// Evaluation (Transform) uses the last of MinSize, as torchvision's eval
// mode. Training picks one of MinSize per image at random
// (torchvision's torch_choice); that choice is the caller's: Normalize,
// Resize with the chosen size and BatchImages are Transform's steps.
type GeneralizedRCNNTransform struct {
	// MinSize is torchvision's min_size tuple (pixels); 800 for its
	// detectors.
	MinSize []float64
	// MaxSize caps the longer side (pixels); 1333 for its detectors.
	MaxSize float64
	// ImageMean and ImageStd are per channel: (0.485, 0.456, 0.406) and
	// (0.229, 0.224, 0.225) for torchvision's detectors.
	ImageMean, ImageStd []float64
	// SizeDivisible is the multiple the padded height and width are
	// rounded up to; 0 stands for torchvision's default, 32.
	SizeDivisible int
	// FixedSize, when not nil, is torchvision's fixed_size (width,
	// height): every image is resized to it instead.
	FixedSize *[2]int
}

// ImageList is torchvision's ImageList: the batch [N, C, Hp, Wp] of the
// transformed images, zero-padded at the bottom and right, and each
// image's size (height, width) after resizing, before padding.
type ImageList struct {
	Tensors    *tensor.Dense
	ImageSizes [][2]int
}

// NewGeneralizedRCNNTransform is the transform of torchvision's FCOS and
// RetinaNet: GeneralizedRCNNTransform(minSize, maxSize, ImageNet mean and
// std) with SizeDivisible 32.
func NewGeneralizedRCNNTransform(minSize, maxSize float64) GeneralizedRCNNTransform {
	return GeneralizedRCNNTransform{
		MinSize: []float64{minSize}, MaxSize: maxSize,
		ImageMean: []float64{0.485, 0.456, 0.406}, ImageStd: []float64{0.229, 0.224, 0.225},
		SizeDivisible: 32,
	}
}

// checkImage checks image (named what in errors): [C, H, W] float32 or float64 with C the
// number of ImageMean entries, H, W >= 1, no NaN or infinite pixel.
func (t GeneralizedRCNNTransform) checkImage(opName, what string, image *tensor.Dense) error {
	s, err := checkValue(opName, what, "[C, H, W]", image, -1, -1, -1)
	if err != nil {
		return err
	}
	if len(t.ImageMean) == 0 || len(t.ImageMean) != len(t.ImageStd) {
		return fmt.Errorf("detection: %s: ImageMean has %d entries and ImageStd %d, want the same number > 0", opName, len(t.ImageMean), len(t.ImageStd))
	}
	for c := range t.ImageMean {
		if m := t.ImageMean[c]; math.IsNaN(m) || math.IsInf(m, 0) {
			return fmt.Errorf("detection: %s: ImageMean[%d] is %v, want a finite value", opName, c, m)
		}
		if sd := t.ImageStd[c]; sd == 0 || math.IsNaN(sd) || math.IsInf(sd, 0) {
			return fmt.Errorf("detection: %s: ImageStd[%d] is %v, want a finite non-zero value", opName, c, sd)
		}
	}
	if s[0] != len(t.ImageMean) {
		return fmt.Errorf("detection: %s: %s has %d channels, want %d (ImageMean's entries), shape %v", opName, what, s[0], len(t.ImageMean), s)
	}
	if s[1] < 1 || s[2] < 1 {
		return fmt.Errorf("detection: %s: %s has a zero side, shape %v", opName, what, s)
	}
	bad := false
	if image.Dtype() == tensor.Float32 {
		bad = hasNonFinite(valueData[float32](image))
	} else {
		bad = hasNonFinite(valueData[float64](image))
	}
	if bad {
		return fmt.Errorf("detection: %s: %s has NaN or infinite pixels", opName, what)
	}
	return nil
}

// hasNonFinite reports whether x holds a NaN or an infinity.
func hasNonFinite[T floatType](x []T) bool {
	for _, v := range x {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return true
		}
	}
	return false
}

// Normalize is normalize(image): (image − mean)/std per channel, in the
// image's dtype (the mean and std rounded to it), for image [C, H, W].
// Errors: image not [C, H, W] float32 or float64 with C = len(ImageMean)
// = len(ImageStd), a zero side, NaN or infinite pixels, a mean not finite
// or a std not finite and non-zero.
func (t GeneralizedRCNNTransform) Normalize(image *tensor.Dense) (*tensor.Dense, error) {
	if err := t.checkImage("GeneralizedRCNNTransform.Normalize", "image", image); err != nil {
		return nil, err
	}
	return t.normalize(image), nil
}

// normalize is Normalize of a checked image.
func (t GeneralizedRCNNTransform) normalize(image *tensor.Dense) *tensor.Dense {
	s := image.Shape()
	if image.Dtype() == tensor.Float32 {
		return newValue(normalize(valueData[float32](image), t.ImageMean, t.ImageStd), s...)
	}
	return newValue(normalize(valueData[float64](image), t.ImageMean, t.ImageStd), s...)
}

// normalize is Normalize on a flat [C, H·W] image.
func normalize[T floatType](x []T, mean, std []float64) []T {
	out := make([]T, len(x))
	hw := len(x) / len(mean)
	for c := range mean {
		m, sd := T(mean[c]), T(std[c])
		for i := c * hw; i < (c+1)*hw; i++ {
			out[i] = (x[i] - m) / sd
		}
	}
	return out
}

// ResizeScale is the scale _resize_image_and_masks computes for an image
// of height h and width w: min(minSize/min(h, w), maxSize/max(h, w)) in
// float32 as torch computes it (the reciprocal of the side, then times
// the size), and the resized size ⌊h·scale⌋, ⌊w·scale⌋ (in float64, as
// torch's interpolate with recompute_scale_factor). FixedSize, when set,
// gives its size and a scale of 0.
func (t GeneralizedRCNNTransform) ResizeScale(h, w int, minSize float64) (scale float32, size [2]int) {
	if t.FixedSize != nil {
		return 0, [2]int{t.FixedSize[1], t.FixedSize[0]}
	}
	lo, hi := float32(min(h, w)), float32(max(h, w))
	scale = min((1/lo)*float32(minSize), (1/hi)*float32(t.MaxSize))
	return scale, [2]int{int(math.Floor(float64(h) * float64(scale))), int(math.Floor(float64(w) * float64(scale)))}
}

// Resize is resize(image) of eval mode with min size minSize (pixels):
// torch.nn.functional.interpolate(image[None], scale_factor=scale,
// mode="bilinear", recompute_scale_factor=True, align_corners=False)[0]
// with ResizeScale's scale, for image [C, H, W] → [C, H', W'] in its
// dtype. The bilinear weights are torch's CPU upsample_bilinear2d's for
// sizes only (recompute_scale_factor leaves the kernel no scale): source
// (o + 0.5)·(in/out) − 0.5 clamped at 0, computed in the image's dtype.
// Errors: as Normalize's; minSize or MaxSize not finite and > 0; a
// resized side below 1; more than MaxResizedElements resized elements.
func (t GeneralizedRCNNTransform) Resize(image *tensor.Dense, minSize float64) (*tensor.Dense, error) {
	const op = "GeneralizedRCNNTransform.Resize"
	if err := t.checkImage(op, "image", image); err != nil {
		return nil, err
	}
	return t.resize(op, image, minSize)
}

// resize is Resize on a checked image.
func (t GeneralizedRCNNTransform) resize(op string, image *tensor.Dense, minSize float64) (*tensor.Dense, error) {
	if t.FixedSize == nil {
		for _, v := range []struct {
			name string
			v    float64
		}{{"minSize", minSize}, {"MaxSize", t.MaxSize}} {
			if !(v.v > 0) || math.IsInf(v.v, 0) {
				return nil, fmt.Errorf("detection: %s: %s %v, want a finite size > 0", op, v.name, v.v)
			}
		}
	}
	s := image.Shape()
	_, size := t.ResizeScale(s[1], s[2], minSize)
	if size[0] < 1 || size[1] < 1 || size[0] > math.MaxInt32 || size[1] > math.MaxInt32 {
		return nil, fmt.Errorf("detection: %s: image %v resizes to %v, want sides in [1, 2³¹)", op, s, size)
	}
	if size[0] > MaxResizedElements/size[1]/s[0] {
		return nil, fmt.Errorf("detection: %s: image %v resizes to %v, over %d elements (MaxResizedElements)", op, s, size, MaxResizedElements)
	}
	if image.Dtype() == tensor.Float32 {
		return newValue(bilinear(valueData[float32](image), s[0], s[1], s[2], size), s[0], size[0], size[1]), nil
	}
	return newValue(bilinear(valueData[float64](image), s[0], s[1], s[2], size), s[0], size[0], size[1]), nil
}

// MaxResizedElements bounds a resized image's C·H'·W' (2²⁸: 1 GiB of
// float32, e.g. 3×9459×9459): Resize and Transform refuse to allocate
// more, where torch would try (a huge MinSize, MaxSize or FixedSize).
const MaxResizedElements = 1 << 28

// bilinear resizes c planes of h×w to size with cpu.Interp and
// torchAxis' weights.
func bilinear[T floatType](x []T, c, h, w int, size [2]int) []T {
	g := cpu.InterpGeom{Planes: c, H: h, W: w, Rows: torchAxis[T](h, size[0]), Cols: torchAxis[T](w, size[1])}
	out := make([]T, c*size[0]*size[1])
	cpu.Interp(&g, x, out)
	return out
}

// torchAxis is torch's CPU upsample_bilinear2d axis (align_corners false,
// no scale given) from in to out positions as its
// compute_source_index_and_lambda: scale = T(in)/T(out) in T, source =
// scale·(o + 0.5) − 0.5 in float64 (torch adds 0.5 to the int64 index in
// double) clamped at 0, I0 its integer part, I1 = I0 + 1 but I0 at the
// last position, L = source − I0 rounded to T (cpu.Interp takes 1 − L in
// T, as torch's lambda0).
func torchAxis[T floatType](in, out int) cpu.InterpAxis {
	a := cpu.InterpAxis{I0: make([]int, out), I1: make([]int, out), L: make([]float64, out)}
	scale := float64(T(in) / T(out))
	for o := range a.I0 {
		src := max(float64(scale*(float64(o)+0.5))-0.5, 0)
		i0 := int(src)
		i1 := i0
		if i0 < in-1 {
			i1 = i0 + 1
		}
		a.I0[o], a.I1[o], a.L[o] = i0, i1, float64(T(src-float64(i0)))
	}
	return a
}

// BatchImages is batch_images(images, size_divisible): the images
// [C, H_i, W_i] copied into a zero batch [N, C, Hp, Wp], Hp and Wp the
// largest height and width rounded up to a multiple of SizeDivisible.
// Errors: no images, images not [C, H, W] of one float dtype and one C.
func (t GeneralizedRCNNTransform) BatchImages(images []*tensor.Dense) (*tensor.Dense, error) {
	const op = "GeneralizedRCNNTransform.BatchImages"
	if len(images) == 0 {
		return nil, fmt.Errorf("detection: %s: no images", op)
	}
	var c, hp, wp int
	for i, im := range images {
		s, err := checkValue(op, fmt.Sprintf("images[%d]", i), "[C, H, W]", im, -1, -1, -1)
		if err != nil {
			return nil, err
		}
		if i > 0 && (s[0] != c || im.Dtype() != images[0].Dtype()) {
			return nil, fmt.Errorf("detection: %s: images[%d] is %v %v, images[0] has %d channels and dtype %v", op, i, im.Dtype(), s, c, images[0].Dtype())
		}
		c, hp, wp = s[0], max(hp, s[1]), max(wp, s[2])
	}
	d := t.SizeDivisible
	if d == 0 {
		d = 32
	}
	if d < 0 {
		return nil, fmt.Errorf("detection: %s: SizeDivisible %d, want >= 0", op, t.SizeDivisible)
	}
	hp, wp = (hp+d-1)/d*d, (wp+d-1)/d*d
	if images[0].Dtype() == tensor.Float32 {
		return newValue(batch[float32](images, c, hp, wp), len(images), c, hp, wp), nil
	}
	return newValue(batch[float64](images, c, hp, wp), len(images), c, hp, wp), nil
}

// batch copies checked images into a zero [N, c, hp, wp].
func batch[T floatType](images []*tensor.Dense, c, hp, wp int) []T {
	out := make([]T, len(images)*c*hp*wp)
	for n, im := range images {
		s, x := im.Shape(), valueData[T](im)
		for p := 0; p < c; p++ {
			for y := 0; y < s[1]; y++ {
				copy(out[((n*c+p)*hp+y)*wp:][:s[2]], x[(p*s[1]+y)*s[2]:][:s[2]])
			}
		}
	}
	return out
}

// Transform is GeneralizedRCNNTransform.forward(images) in eval mode:
// each image [C, H_i, W_i] (any sizes, one float dtype) normalised and
// resized with the last of MinSize, then batched. Errors name the image:
// no images, an image not [C, H, W] float32 or float64 with C =
// len(ImageMean), a zero side, NaN or infinite pixels, dtypes differing,
// no MinSize, sizes not finite and > 0, ImageMean or ImageStd as
// Normalize refuses them, a resized image over MaxResizedElements.
func (t GeneralizedRCNNTransform) Transform(images []*tensor.Dense) (ImageList, error) {
	const op = "GeneralizedRCNNTransform.Transform"
	if len(images) == 0 {
		return ImageList{}, fmt.Errorf("detection: %s: no images", op)
	}
	if len(t.MinSize) == 0 && t.FixedSize == nil {
		return ImageList{}, fmt.Errorf("detection: %s: MinSize is empty", op)
	}
	resized := make([]*tensor.Dense, len(images))
	sizes := make([][2]int, len(images))
	for i, im := range images {
		if err := t.checkImage(op, fmt.Sprintf("images[%d]", i), im); err != nil {
			return ImageList{}, err
		}
		if im.Dtype() != images[0].Dtype() {
			return ImageList{}, fmt.Errorf("detection: %s: images[%d] dtype %v differs from images[0]'s %v", op, i, im.Dtype(), images[0].Dtype())
		}
		minSize := 0.0
		if len(t.MinSize) > 0 {
			minSize = t.MinSize[len(t.MinSize)-1]
		}
		var err error
		if resized[i], err = t.resize(op, t.normalize(im), minSize); err != nil {
			return ImageList{}, fmt.Errorf("%w (images[%d])", err, i)
		}
		s := resized[i].Shape()
		sizes[i] = [2]int{s[1], s[2]}
	}
	b, err := t.BatchImages(resized)
	if err != nil {
		return ImageList{}, err
	}
	return ImageList{Tensors: b, ImageSizes: sizes}, nil
}

// Postprocess is GeneralizedRCNNTransform.postprocess in eval mode: each
// detection's boxes mapped from imageSizes[i] (the resized size,
// ImageList.ImageSizes) back to originalImageSizes[i] with ResizeBoxes.
// It returns new Detections (scores and labels shared). Errors: lengths
// differing, boxes not [D, 4], sizes not > 0.
func (t GeneralizedRCNNTransform) Postprocess(result []Detections, imageSizes, originalImageSizes [][2]int) ([]Detections, error) {
	if len(imageSizes) != len(result) || len(originalImageSizes) != len(result) {
		return nil, fmt.Errorf("detection: GeneralizedRCNNTransform.Postprocess: %d results, %d image sizes and %d original sizes, want the same number", len(result), len(imageSizes), len(originalImageSizes))
	}
	out := make([]Detections, len(result))
	for i, r := range result {
		b, err := ResizeBoxes(r.Boxes, imageSizes[i], originalImageSizes[i])
		if err != nil {
			return nil, fmt.Errorf("%w (result %d)", err, i)
		}
		out[i] = Detections{Boxes: b, Scores: r.Scores, Labels: r.Labels}
	}
	return out, nil
}

// ResizeBoxes is transform.resize_boxes(boxes, original_size, new_size):
// boxes [K, 4] (x1, y1, x2, y2) scaled by new/original per axis, the
// ratios computed in float32 (torchvision makes float32 tensors of the
// sizes) and the products in the boxes' dtype. Sizes are (height, width).
// Errors: boxes not [K, 4] float32 or float64, sizes not > 0.
func ResizeBoxes(boxes *tensor.Dense, originalSize, newSize [2]int) (*tensor.Dense, error) {
	const op = "ResizeBoxes"
	if _, err := checkValue(op, "boxes", "[K, 4]", boxes, -1, 4); err != nil {
		return nil, err
	}
	if originalSize[0] < 1 || originalSize[1] < 1 || newSize[0] < 1 || newSize[1] < 1 {
		return nil, fmt.Errorf("detection: %s: sizes %v → %v, want sides > 0", op, originalSize, newSize)
	}
	rh := float32(newSize[0]) / float32(originalSize[0])
	rw := float32(newSize[1]) / float32(originalSize[1])
	k := boxes.Shape()[0]
	if boxes.Dtype() == tensor.Float32 {
		return newValue(scaleBoxes(valueData[float32](boxes), float32(rw), float32(rh)), k, 4), nil
	}
	return newValue(scaleBoxes(valueData[float64](boxes), float64(rw), float64(rh)), k, 4), nil
}

// scaleBoxes is x·rw and y·rh for flat boxes [K, 4].
func scaleBoxes[T floatType](b []T, rw, rh T) []T {
	out := make([]T, len(b))
	for i := 0; i < len(b); i += 4 {
		out[i], out[i+1], out[i+2], out[i+3] = b[i]*rw, b[i+1]*rh, b[i+2]*rw, b[i+3]*rh
	}
	return out
}
