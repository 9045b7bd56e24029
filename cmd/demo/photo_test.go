package main

import (
	"bytes"
	"image/png"
	"os"
	"strings"
	"testing"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestPhoto runs the -photo mode: the finite-difference check of ∂P/∂W must
// pass and the PNG must be written and decode with the expected size.
func TestPhoto(t *testing.T) {
	dir := t.TempDir() + "/nested/out"
	var buf bytes.Buffer
	res, err := RunPhoto(dir, &buf)
	if err != nil {
		t.Fatalf("Run: %v\noutput:\n%s", err, buf.String())
	}
	if !(res.FD.MaxRelErr < 1e-6) {
		t.Errorf("max relative error of ∂P/∂W vs finite differences %g, want < 1e-6", res.FD.MaxRelErr)
	}
	for i, a := range res.FD.Analytic {
		if a == 0 {
			t.Errorf("∂P/∂W[%d] is exactly 0: the check would be vacuous", i)
		}
	}
	if !(res.Values.P > 0) {
		t.Errorf("P = %g, want > 0", res.Values.P)
	}
	if !strings.Contains(buf.String(), "): OK") {
		t.Errorf("output does not report the check as OK:\n%s", buf.String())
	}

	f, err := os.Open(res.PNGPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding %s: %v", res.PNGPath, err)
	}
	// 150x103 photo at x4, twice side by side, and a row of 32x32 crops at
	// x7 in 3-pixel frames, with 8-pixel margins.
	const wantW, wantH = 8 + 600 + 8 + 600 + 8, 8 + 412 + 8 + (224 + 6) + 8
	if b := img.Bounds(); b.Dx() != wantW || b.Dy() != wantH {
		t.Errorf("PNG is %dx%d, want %dx%d", b.Dx(), b.Dy(), wantW, wantH)
	}
	if res.PNGW != wantW || res.PNGH != wantH {
		t.Errorf("Result says %dx%d, want %dx%d", res.PNGW, res.PNGH, wantW, wantH)
	}
}

// TestPenaltyRepeatable checks that the compiled graph gives bit-identical
// values when run again at the same W after a run at another W: the
// TapeMachine must not overwrite the image, W or b in place.
func TestPenaltyRepeatable(t *testing.T) {
	img, err := LoadPhoto()
	if err != nil {
		t.Fatal(err)
	}
	md := demoModel
	p, err := NewPenalty(&md, ImageTensor(img), BoxesTensor(photoBoxes))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	a, err := p.Eval(md.W)
	if err != nil {
		t.Fatal(err)
	}
	w2 := md.W
	w2[4] += 0.5
	b, err := p.Eval(w2)
	if err != nil {
		t.Fatal(err)
	}
	if b.P == a.P {
		t.Errorf("P did not change with W")
	}
	c, err := p.Eval(md.W)
	if err != nil {
		t.Fatal(err)
	}
	if a.Loss != c.Loss || a.P != c.P || a.DPdW != c.DPdW {
		t.Errorf("second run at the same W differs: L %v vs %v, P %v vs %v, ∂P/∂W %v vs %v", a.Loss, c.Loss, a.P, c.P, a.DPdW, c.DPdW)
	}
}

// TestLossDerivatives checks the model's loss graph, on a small patch of the
// photo, at orders 1 and 2 w.r.t. the image, W and b against finite
// differences of L (independently of P), and the TapeMachine against the
// LispMachine at order 1.
func TestLossDerivatives(t *testing.T) {
	img, err := LoadPhoto()
	if err != nil {
		t.Fatal(err)
	}
	full := ImageTensor(img).Data().([]float64)
	iw, ih := img.Bounds().Dx(), img.Bounds().Dy()
	const h, w, y0, x0 = 8, 10, 10, 62 // a patch around the gopher's goggles
	patch := make([]float64, 3*h*w)
	for c := 0; c < 3; c++ {
		for y := 0; y < h; y++ {
			copy(patch[(c*h+y)*w:(c*h+y+1)*w], full[(c*ih+y0+y)*iw+x0:(c*ih+y0+y)*iw+x0+w])
		}
	}
	md := demoModel
	md.Opts = gops.RoIAlignOpts{OutputSize: [2]int{3, 4}, SamplingRatio: 2, Aligned: true}
	inputs := []*tensor.Dense{
		tensor.New(tensor.WithShape(1, 3, h, w), tensor.WithBacking(patch)),
		tensor.New(tensor.WithShape(3, 3), tensor.WithBacking(append([]float64(nil), md.W[:]...))),
		tensor.New(tensor.WithShape(3), tensor.WithBacking(append([]float64(nil), md.B[:]...))),
		BoxesTensor([]Box{{"a", 1, 1, 6, 5}, {"b", 3.3, 2.2, 9.1, 7.6}}),
	}
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) { return md.BuildLoss(in[0], in[1], in[2], in[3]) }
	o := graphtest.Options{Order: 2, Wrt: []int{0, 1, 2}, Seed: 7}
	if err := graphtest.Check(f, inputs, o); err != nil {
		t.Error(err)
	}
	if err := graphtest.CheckVMs(f, inputs, o); err != nil {
		t.Error(err)
	}
}

// TestCropsArePixels checks the box convention documented on Box: with
// Aligned, one sample per bin and one bin per pixel, a crop reproduces the
// pixels the box encloses exactly.
func TestCropsArePixels(t *testing.T) {
	img, err := LoadPhoto()
	if err != nil {
		t.Fatal(err)
	}
	x := ImageTensor(img)
	iw, ih := img.Bounds().Dx(), img.Bounds().Dy()
	b := Box{"patch", 70, 12, 75, 16} // pixels x 70..74, y 12..15
	crops, err := Crops(x, BoxesTensor([]Box{b}), gops.RoIAlignOpts{OutputSize: [2]int{4, 5}, SamplingRatio: 1, Aligned: true})
	if err != nil {
		t.Fatal(err)
	}
	got := crops.Data().([]float64)
	xd := x.Data().([]float64)
	for c := 0; c < 3; c++ {
		for i := 0; i < 4; i++ {
			for j := 0; j < 5; j++ {
				want := xd[(c*ih+12+i)*iw+70+j]
				if g := got[(c*4+i)*5+j]; g != want {
					t.Fatalf("crop[%d, %d, %d] = %v, want pixel %v", c, i, j, g, want)
				}
			}
		}
	}
}
