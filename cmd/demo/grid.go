package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"

	"gorgonia.org/tensor"
)

// Layout of the PNG grid, in output pixels.
const (
	photoScale = 4 // photo and gradient map: each image pixel becomes 4x4
	cropScale  = 7 // crops: each bin becomes 7x7
	margin     = 8 // around and between panels
	frame      = 3 // coloured frame around each crop
	boxLine    = 2 // width of the box outlines on the photo
)

// boxColours gives each box its colour (in the order of the boxes; reused
// cyclically), the same on the photo, the gradient map and the crop frames.
var boxColours = []color.RGBA{
	{230, 25, 75, 255},   // red
	{255, 225, 25, 255},  // yellow
	{60, 220, 75, 255},   // green
	{240, 50, 230, 255},  // magenta
	{245, 130, 48, 255},  // orange
	{70, 240, 240, 255},  // cyan
	{255, 255, 255, 255}, // white
}

// colourName names boxColours[i], for the printed legend.
func colourName(i int) string {
	return []string{"red", "yellow", "green", "magenta", "orange", "cyan", "white"}[i%len(boxColours)]
}

// RenderGrid draws the demo's figure: top left the photograph scaled up with
// the boxes outlined, top right the magnitude of ∂L/∂x (Σ over channels,
// square-root scaled, black to white through red and yellow; nil leaves the
// panel out) with the same outlines, and below it each RoIAlign crop
// ([K, 3, PH, PW], values in [0, 1]) scaled up in a frame of its box's
// colour.
func RenderGrid(img image.Image, boxes []Box, crops *tensor.Dense, gradMag []float64) (*image.RGBA, error) {
	s := crops.Shape()
	if len(s) != 4 || s[0] != len(boxes) || s[1] != 3 {
		return nil, fmt.Errorf("crops have shape %v, want [%d, 3, PH, PW]", s, len(boxes))
	}
	data, ok := crops.Data().([]float64)
	if !ok {
		return nil, fmt.Errorf("crops are %v, want float64", crops.Dtype())
	}
	k, ph, pw := s[0], s[2], s[3]
	ib := img.Bounds()
	iw, ih := ib.Dx(), ib.Dy()
	if gradMag != nil && len(gradMag) != iw*ih {
		return nil, fmt.Errorf("gradient map has %d values, want %d", len(gradMag), iw*ih)
	}

	panelW, panelH := iw*photoScale, ih*photoScale
	cropW, cropH := pw*cropScale+2*frame, ph*cropScale+2*frame
	topW := margin + panelW + margin
	if gradMag != nil {
		topW += panelW + margin
	}
	cropsW := margin + k*(cropW+margin)
	width := max(topW, cropsW)
	height := margin + panelH + margin + cropH + margin
	out := image.NewRGBA(image.Rect(0, 0, width, height))
	draw.Draw(out, out.Bounds(), image.NewUniform(color.RGBA{32, 32, 32, 255}), image.Point{}, draw.Src)

	// The photograph.
	photo := image.Rect(margin, margin, margin+panelW, margin+panelH)
	for y := 0; y < panelH; y++ {
		for x := 0; x < panelW; x++ {
			out.Set(photo.Min.X+x, photo.Min.Y+y, img.At(ib.Min.X+x/photoScale, ib.Min.Y+y/photoScale))
		}
	}
	drawBoxes(out, photo, boxes)

	// The input-gradient magnitude.
	if gradMag != nil {
		heat := photo.Add(image.Pt(panelW+margin, 0))
		var top float64
		for _, v := range gradMag {
			top = math.Max(top, v)
		}
		for y := 0; y < panelH; y++ {
			for x := 0; x < panelW; x++ {
				var t float64
				if top > 0 {
					t = math.Sqrt(gradMag[(y/photoScale)*iw+x/photoScale] / top)
				}
				out.SetRGBA(heat.Min.X+x, heat.Min.Y+y, hot(t))
			}
		}
		drawBoxes(out, heat, boxes)
	}

	// The crops.
	plane := ph * pw
	for i := 0; i < k; i++ {
		r := image.Rect(0, 0, cropW, cropH).Add(image.Pt(margin+i*(cropW+margin), margin+panelH+margin))
		draw.Draw(out, r, image.NewUniform(boxColours[i%len(boxColours)]), image.Point{}, draw.Src)
		crop := data[i*3*plane : (i+1)*3*plane]
		for y := 0; y < ph*cropScale; y++ {
			for x := 0; x < pw*cropScale; x++ {
				j := (y/cropScale)*pw + x/cropScale
				out.SetRGBA(r.Min.X+frame+x, r.Min.Y+frame+y, color.RGBA{
					R: byte8(crop[j]), G: byte8(crop[plane+j]), B: byte8(crop[2*plane+j]), A: 255,
				})
			}
		}
	}
	return out, nil
}

// drawBoxes outlines each box (image pixel coordinates) inside panel, a
// region showing the image at photoScale.
func drawBoxes(out *image.RGBA, panel image.Rectangle, boxes []Box) {
	for i, b := range boxes {
		c := image.NewUniform(boxColours[i%len(boxColours)])
		r := image.Rect(
			int(math.Round(b.X1*photoScale)), int(math.Round(b.Y1*photoScale)),
			int(math.Round(b.X2*photoScale)), int(math.Round(b.Y2*photoScale)),
		).Add(panel.Min).Intersect(panel)
		if r.Empty() {
			continue
		}
		for _, side := range []image.Rectangle{
			{r.Min, image.Pt(r.Max.X, r.Min.Y+boxLine)},
			{image.Pt(r.Min.X, r.Max.Y-boxLine), r.Max},
			{r.Min, image.Pt(r.Min.X+boxLine, r.Max.Y)},
			{image.Pt(r.Max.X-boxLine, r.Min.Y), r.Max},
		} {
			draw.Draw(out, side.Intersect(r), c, image.Point{}, draw.Src)
		}
	}
}

// hot maps t in [0, 1] to black, red, yellow, white.
func hot(t float64) color.RGBA {
	return color.RGBA{R: byte8(3 * t), G: byte8(3*t - 1), B: byte8(3*t - 2), A: 255}
}

// byte8 maps v in [0, 1] (clamped) to 0..255.
func byte8(v float64) uint8 {
	return uint8(math.Round(255 * math.Min(1, math.Max(0, v))))
}

// WritePNG encodes img as a PNG file at path.
func WritePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return f.Close()
}
