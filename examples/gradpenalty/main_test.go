package main

import (
	"image"
	"io"
	"testing"

	"github.com/gops-dev/gops/examples/internal/photo"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// photoTensor is the photograph as [1, 3, H, W] and its bounds.
func photoTensor(t *testing.T) (image.Rectangle, *tensor.Dense) {
	t.Helper()
	x, err := photo.Gopher()
	if err != nil {
		t.Fatal(err)
	}
	s := x.Shape()
	return image.Rect(0, 0, s[3], s[2]), x
}

// The second derivative ∂P/∂W agrees with central differences (and is not
// trivially zero), and training on L + λP lowers it.
func TestRun(t *testing.T) {
	res, err := run(5, 0.5, 3e-4, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !(res.maxRelErr < 1e-6) {
		t.Errorf("∂P/∂W vs central differences: max relative error %g, want < 1e-6", res.maxRelErr)
	}
	for i, a := range res.dPdW {
		if a == 0 {
			t.Errorf("∂P/∂W[%d] is exactly 0: the check would be vacuous", i)
		}
	}
	if !(res.after < res.before) {
		t.Errorf("L + λP went from %g to %g, want lower", res.before, res.after)
	}
}

// The compiled graph gives bit-identical values when run again at the same
// W after a run at another W: the TapeMachine overwrites neither the image
// nor W nor b in place.
func TestModelRepeatable(t *testing.T) {
	_, x := photoTensor(t)
	md, err := newModel(x, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	defer md.m.Close()
	values := func() (l, p float64, dP []float64) {
		if err := md.Eval(); err != nil {
			t.Fatal(err)
		}
		return md.l.Data().(float64), md.p.Data().(float64), append([]float64(nil), md.dP.Data().([]float64)...)
	}
	l1, p1, d1 := values()
	md.w[4] += 0.5
	_, p2, _ := values()
	md.w[4] -= 0.5
	l3, p3, d3 := values()
	if p2 == p1 {
		t.Errorf("P did not change with W")
	}
	if l1 != l3 || p1 != p3 || !equal(d1, d3) {
		t.Errorf("second run at the same W differs: L %v vs %v, P %v vs %v, ∂P/∂W %v vs %v", l1, l3, p1, p3, d1, d3)
	}
}

func equal(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// The loss on a small patch of the photo, at orders 1 and 2 w.r.t. the
// image, W and b against finite differences of L, and the TapeMachine
// against the LispMachine at order 1.
func TestLossDerivatives(t *testing.T) {
	img, full := photoTensor(t)
	iw, ih := img.Dx(), img.Dy()
	const h, w, y0, x0 = 8, 10, 10, 62 // a patch around the gopher's goggles
	fd := full.Data().([]float64)
	patch := make([]float64, 3*h*w)
	for c := 0; c < 3; c++ {
		for y := 0; y < h; y++ {
			copy(patch[(c*h+y)*w:(c*h+y+1)*w], fd[(c*ih+y0+y)*iw+x0:(c*ih+y0+y)*iw+x0+w])
		}
	}
	inputs := []*tensor.Dense{
		tensor.New(tensor.WithShape(1, 3, h, w), tensor.WithBacking(patch)),
		tensor.New(tensor.WithShape(3, 3), tensor.WithBacking([]float64{0.9, 0.3, -0.2, -0.1, 1.1, 0.2, 0.25, -0.3, 0.8})),
		tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{-0.3, 0.1, -0.2})),
		tensor.New(tensor.WithShape(2, 5), tensor.WithBacking([]float64{0, 1, 1, 6, 5, 0, 3.3, 2.2, 9.1, 7.6})),
	}
	opts := gops.RoIAlignOpts{OutputSize: [2]int{3, 4}, SamplingRatio: 2, Aligned: true}
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) { return loss(in[0], in[1], in[2], in[3], opts) }
	o := graphtest.Options{Order: 2, Wrt: []int{0, 1, 2}, Seed: 7}
	if err := graphtest.Check(f, inputs, o); err != nil {
		t.Error(err)
	}
	if err := graphtest.CheckVMs(f, inputs, o); err != nil {
		t.Error(err)
	}
}

// The box convention: pixel (i, j) covers [j, j+1) × [i, i+1), so with
// Aligned, one sample per bin and one bin per pixel, a crop of a box from
// x0 to x1 + 1 reproduces the pixels x0..x1 exactly.
func TestCropsArePixels(t *testing.T) {
	img, x := photoTensor(t)
	iw, ih := img.Dx(), img.Dy()
	g := gorgonia.NewGraph()
	xn := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(x.Shape()...), gorgonia.WithName("x"), gorgonia.WithValue(x))
	bn := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(1, 5), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 5), tensor.WithBacking([]float64{0, 70, 12, 75, 16}))))
	y, err := gops.RoIAlign(xn, bn, gops.RoIAlignOpts{OutputSize: [2]int{4, 5}, SamplingRatio: 1, Aligned: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := graphtest.Eval(g, y)
	if err != nil {
		t.Fatal(err)
	}
	xd := x.Data().([]float64)
	for c := 0; c < 3; c++ {
		for i := 0; i < 4; i++ {
			for j := 0; j < 5; j++ {
				if want := xd[(c*ih+12+i)*iw+70+j]; got[0][(c*4+i)*5+j] != want {
					t.Fatalf("crop[%d, %d, %d] = %v, want pixel %v", c, i, j, got[0][(c*4+i)*5+j], want)
				}
			}
		}
	}
}
