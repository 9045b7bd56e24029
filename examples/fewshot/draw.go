package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"

	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"github.com/gops-dev/gops/detection"
)

// Figure settings: canvas pixels are drawn zoom×zoom, detections below
// minScore are left out, cells are pad pixels apart.
const (
	zoom     = 3
	minScore = 0.3
	pad      = 6
)

// labelColours are the boxes' colours by label (digit).
var labelColours = [NumClasses]color.RGBA{
	{128, 128, 128, 255}, {128, 128, 128, 255}, {128, 128, 128, 255},
	{128, 128, 128, 255}, {128, 128, 128, 255}, {128, 128, 128, 255}, // base digits: grey
	{230, 25, 75, 255},  // 6 red
	{255, 225, 25, 255}, // 7 yellow
	{60, 220, 75, 255},  // 8 green
	{70, 170, 240, 255}, // 9 blue
}

// glyphs are 3×5 bitmaps of the digits, a row per 3 bits (top first).
var glyphs = [10][5]uint8{
	{7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1},
	{7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1}, {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7},
}

// WriteFigure draws the query canvases of sc (columns) once per row of
// dets (dets[r][b]: row r's detections on canvas b; rows in the order of
// names, top to bottom), each detection scoring at least minScore as a
// box in its label's colour with the label's digit above its top-left
// corner, and writes the PNG to path.
func WriteFigure(path string, sc *scenes.Scene, names []string, dets [][]detection.Detections) error {
	if len(names) != len(dets) {
		return fmt.Errorf("figure: %d row names for %d rows", len(names), len(dets))
	}
	s := sc.Canvas.Shape()
	n, side := s[0], s[2]
	cell := side*zoom + pad
	img := image.NewRGBA(image.Rect(0, 0, n*cell+pad, len(dets)*cell+pad))
	for i := range img.Pix {
		img.Pix[i] = 40
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	grey := sc.Canvas.Data().([]float64)
	for r, row := range dets {
		if len(row) != n {
			return fmt.Errorf("figure: row %q has %d canvases, the scene %d", names[r], len(row), n)
		}
		for b, d := range row {
			x0, y0 := pad+b*cell, pad+r*cell
			for y := 0; y < side*zoom; y++ {
				for x := 0; x < side*zoom; x++ {
					v := uint8(255 * min(1, max(0, grey[b*side*side+(y/zoom)*side+x/zoom])))
					img.SetRGBA(x0+x, y0+y, color.RGBA{v, v, v, 255})
				}
			}
			if err := drawDetections(img, d, x0, y0); err != nil {
				return fmt.Errorf("figure: row %q: %w", names[r], err)
			}
		}
	}
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

// drawDetections draws d's boxes scoring at least minScore at (x0, y0).
func drawDetections(img *image.RGBA, d detection.Detections, x0, y0 int) error {
	boxes, ok1 := d.Boxes.Data().([]float64)
	scores, ok2 := d.Scores.Data().([]float64)
	if !ok1 || !ok2 {
		return fmt.Errorf("detections are not float64")
	}
	clip := img.Bounds()
	for i, sc := range scores {
		l := d.Labels[i]
		if sc < minScore || l < 0 || l >= NumClasses {
			continue
		}
		c := labelColours[l]
		b := boxes[4*i : 4*i+4]
		x1, y1 := x0+int(b[0]*zoom), y0+int(b[1]*zoom)
		x2, y2 := x0+int(b[2]*zoom), y0+int(b[3]*zoom)
		for x := x1; x <= x2; x++ {
			set(img, clip, x, y1, c)
			set(img, clip, x, y2, c)
		}
		for y := y1; y <= y2; y++ {
			set(img, clip, x1, y, c)
			set(img, clip, x2, y, c)
		}
		// The digit, 2 pixels a bitmap pixel, inside the box's corner.
		for gy, bits := range glyphs[l] {
			for gx := 0; gx < 3; gx++ {
				if bits&(4>>gx) != 0 {
					for dy := 0; dy < 2; dy++ {
						for dx := 0; dx < 2; dx++ {
							set(img, clip, x1+2+2*gx+dx, y1+2+2*gy+dy, c)
						}
					}
				}
			}
		}
	}
	return nil
}

// set colours pixel (x, y) if it lies in r.
func set(img *image.RGBA, r image.Rectangle, x, y int, c color.RGBA) {
	if image.Pt(x, y).In(r) {
		img.SetRGBA(x, y, c)
	}
}
