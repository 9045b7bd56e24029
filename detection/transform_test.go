package detection

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/tensor"
)

// lcgImage is scripts/gen_detection_values.py's lcg_image: pixel i (row
// major) ((i·7919 + seed·104729) mod 1009)/1008, in dtype.
func lcgImage(dtype string, c, h, w, seed int) *tensor.Dense {
	v := make([]float64, c*h*w)
	for i := range v {
		v[i] = float64((i*7919+seed*104729)%1009) / 1008
	}
	return golden.Tensor(dtype, []int{c, h, w}, v)
}

func TestGeneralizedRCNNTransformGolden(t *testing.T) {
	for _, c := range loadValues(t).Transform {
		name := fmt.Sprintf("%v/%v/%s/%v", c.MinSize, c.MaxSize, c.Dtype, c.Shapes)
		tr := NewGeneralizedRCNNTransform(c.MinSize, c.MaxSize)
		images := make([]*tensor.Dense, len(c.Shapes))
		for i, s := range c.Shapes {
			images[i] = lcgImage(c.Dtype, s[0], s[1], s[2], c.Seeds[i])
		}
		il, err := tr.Transform(images)
		if err != nil {
			t.Fatal(name, err)
		}
		if fmt.Sprint(il.Tensors.Shape()) != fmt.Sprint(tensor.Shape(c.OutShape)) || fmt.Sprint(il.ImageSizes) != fmt.Sprint(c.ImageSizes) {
			t.Fatalf("%s: batch %v sizes %v, want %v %v", name, il.Tensors.Shape(), il.ImageSizes, c.OutShape, c.ImageSizes)
		}
		if il.Tensors.Dtype() != dtypeNamed(c.Dtype) {
			t.Fatalf("%s: dtype %v", name, il.Tensors.Dtype())
		}
		got := f64s(il.Tensors)
		sample := make([]float64, len(c.SampleIdx))
		var sum, abs float64
		for i, j := range c.SampleIdx {
			sample[i] = got[j]
		}
		for _, v := range got {
			sum, abs = sum+v, abs+math.Abs(v)
		}
		// float32: torch's kernel rounds its products differently (fused
		// or vectorised); the values agree to an ulp (about 1.2e-7).
		tol, sumTol := 1e-6, 1e-6
		if c.Dtype == "float64" {
			tol, sumTol = 1e-12, 1e-10
		}
		golden.AssertClose(t, name+" sample", sample, c.Sample, tol, tol)
		golden.AssertClose(t, name+" sums", []float64{sum, abs}, []float64{c.Sum, c.AbsSum}, sumTol, 0)
		// Boxes in the resized images mapped back (transform.postprocess).
		dets := make([]Detections, len(c.Shapes))
		orig := make([][2]int, len(c.Shapes))
		for i, s := range c.Shapes {
			b := goldenUniformBoxes(c.BoxSeeds[i], 6, il.ImageSizes[i])
			dets[i] = Detections{Boxes: golden.Tensor(c.Dtype, []int{6, 4}, b)}
			orig[i] = [2]int{s[1], s[2]}
		}
		back, err := tr.Postprocess(dets, il.ImageSizes, orig)
		if err != nil {
			t.Fatal(name, err)
		}
		for i := range back {
			golden.AssertClose(t, name+" boxes back", f64s(back[i].Boxes), c.OrigBoxes[i], tol, 0)
		}
	}
}

// goldenUniformBoxes is the script's boxes for resize_boxes: uniforms(seed)
// [k, 4] with x times the width and y times the height of size.
func goldenUniformBoxes(seed uint64, k int, size [2]int) []float64 {
	u := uniforms(seed, 4*k)
	for i := range u {
		u[i] *= float64(size[1-i%2])
	}
	return u
}

func TestGeneralizedRCNNTransformErrors(t *testing.T) {
	tr := NewGeneralizedRCNNTransform(32, 48)
	img := func(dt tensor.Dtype, shape ...int) *tensor.Dense {
		return tensor.New(tensor.Of(dt), tensor.WithShape(shape...))
	}
	nan := img(tensor.Float64, 3, 4, 4)
	nan.Data().([]float64)[5] = math.NaN()
	inf := img(tensor.Float32, 3, 4, 4)
	inf.Data().([]float32)[0] = float32(math.Inf(1))
	noMin := tr
	noMin.MinSize = nil
	negMax := tr
	negMax.MaxSize = -1
	badMean := tr
	badMean.ImageStd = []float64{1}
	hugeFixed := tr
	hugeFixed.FixedSize = &[2]int{1 << 30, 1 << 30}
	hugeMin := NewGeneralizedRCNNTransform(1e9, 1e9)
	zeroStd := tr
	zeroStd.ImageStd = []float64{0.2, 0, 0.2}
	nanMean := tr
	nanMean.ImageMean = []float64{0.5, math.NaN(), 0.5}
	cases := []struct {
		name   string
		tr     GeneralizedRCNNTransform
		images []*tensor.Dense
		want   string
	}{
		{"empty batch", tr, nil, "no images"},
		{"nil image", tr, []*tensor.Dense{nil}, "images[0] is nil"},
		{"rank 2", tr, []*tensor.Dense{img(tensor.Float32, 4, 4)}, "images[0] must be [C, H, W]"},
		{"rank 4", tr, []*tensor.Dense{img(tensor.Float32, 1, 3, 4, 4)}, "must be [C, H, W]"},
		{"channels", tr, []*tensor.Dense{img(tensor.Float32, 3, 4, 4), img(tensor.Float32, 1, 4, 4)}, "images[1] has 1 channels, want 3"},
		{"int dtype", tr, []*tensor.Dense{img(tensor.Int, 3, 4, 4)}, "want float32 or float64"},
		{"mixed dtypes", tr, []*tensor.Dense{img(tensor.Float32, 3, 4, 4), img(tensor.Float64, 3, 4, 4)}, "images[1] dtype float64 differs"},
		{"zero height", tr, []*tensor.Dense{img(tensor.Float32, 3, 0, 4)}, "zero side"},
		{"zero width", tr, []*tensor.Dense{img(tensor.Float64, 3, 5, 0)}, "zero side"},
		{"NaN pixel", tr, []*tensor.Dense{img(tensor.Float64, 3, 4, 4), nan}, "images[1] has NaN"},
		{"Inf pixel", tr, []*tensor.Dense{inf}, "NaN or infinite"},
		{"no MinSize", noMin, []*tensor.Dense{img(tensor.Float32, 3, 4, 4)}, "MinSize is empty"},
		{"negative MaxSize", negMax, []*tensor.Dense{img(tensor.Float32, 3, 4, 4)}, "MaxSize -1"},
		{"mean and std", badMean, []*tensor.Dense{img(tensor.Float32, 3, 4, 4)}, "ImageMean has 3 entries and ImageStd 1"},
		{"huge FixedSize", hugeFixed, []*tensor.Dense{img(tensor.Float32, 3, 4, 4)}, "resizes to [1073741824 1073741824], over 268435456 elements"},
		{"huge MinSize", hugeMin, []*tensor.Dense{img(tensor.Float64, 3, 4, 4)}, "over 268435456 elements"},
		{"zero std", zeroStd, []*tensor.Dense{img(tensor.Float32, 3, 4, 4)}, "ImageStd[1] is 0, want a finite non-zero value"},
		{"NaN mean", nanMean, []*tensor.Dense{img(tensor.Float32, 3, 4, 4)}, "ImageMean[1] is NaN, want a finite value"},
		{"resizes to nothing", GeneralizedRCNNTransform{MinSize: []float64{1}, MaxSize: 1, ImageMean: []float64{0}, ImageStd: []float64{1}}, []*tensor.Dense{img(tensor.Float32, 1, 3, 400)}, "resizes to [0 0]"},
	}
	for _, c := range cases {
		_, err := c.tr.Transform(c.images)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	b := img(tensor.Float32, 2, 4)
	if _, err := ResizeBoxes(img(tensor.Float32, 2, 5), [2]int{2, 2}, [2]int{4, 4}); err == nil || !strings.Contains(err.Error(), "boxes must be [K, 4]") {
		t.Errorf("ResizeBoxes [2, 5]: %v", err)
	}
	if _, err := ResizeBoxes(b, [2]int{0, 2}, [2]int{4, 4}); err == nil || !strings.Contains(err.Error(), "want sides > 0") {
		t.Errorf("ResizeBoxes zero size: %v", err)
	}
	if _, err := tr.Postprocess([]Detections{{Boxes: b}}, nil, nil); err == nil || !strings.Contains(err.Error(), "1 results, 0 image sizes") {
		t.Errorf("Postprocess lengths: %v", err)
	}
	if _, err := tr.BatchImages(nil); err == nil || !strings.Contains(err.Error(), "no images") {
		t.Errorf("BatchImages(nil): %v", err)
	}
}

func TestGeneralizedRCNNTransformFixedSizeAndPadding(t *testing.T) {
	tr := NewGeneralizedRCNNTransform(800, 1333)
	tr.FixedSize = &[2]int{7, 5} // width 7, height 5
	tr.SizeDivisible = 4
	im := lcgImage("float64", 3, 9, 11, 3)
	il, err := tr.Transform([]*tensor.Dense{im})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(il.Tensors.Shape(), il.ImageSizes) != "(1, 3, 8, 8) [[5 7]]" {
		t.Fatalf("fixed size: %v %v, want (1, 3, 8, 8) [[5 7]]", il.Tensors.Shape(), il.ImageSizes)
	}
	x := f64s(il.Tensors)
	for c := 0; c < 3; c++ {
		for y := 0; y < 8; y++ {
			for xx := 0; xx < 8; xx++ {
				if v := x[(c*8+y)*8+xx]; (y >= 5 || xx >= 7) && v != 0 {
					t.Fatalf("padding at (%d, %d, %d) is %v, want 0", c, y, xx, v)
				}
			}
		}
	}
}
