package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"sort"

	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"github.com/gops-dev/gops/detection"
)

// Figure settings: canvas pixels are drawn zoom×zoom, detections below
// minScore are left out, cells are pad pixels apart, labels are drawn
// glyph pixels a bitmap pixel.
const (
	glyph    = 3
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
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return fmt.Errorf("figure: %w", err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// drawDetections draws d's boxes scoring at least minScore at (x0, y0),
// best first, leaving out those overlapping a drawn one by IoU > 0.5 (the
// detector's NMS runs per class; the figure shows one label an object).
func drawDetections(img *image.RGBA, d detection.Detections, x0, y0 int) error {
	if len(d.Labels) == 0 {
		return nil // an empty tensor's Data panics
	}
	boxes, ok1 := d.Boxes.Data().([]float64)
	scores, ok2 := d.Scores.Data().([]float64)
	if !ok1 || !ok2 {
		return fmt.Errorf("detections are not float64")
	}
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
	clip := img.Bounds()
	var drawn [][]float64
	for _, i := range order {
		l, b := d.Labels[i], boxes[4*i:4*i+4]
		if scores[i] < minScore || l < 0 || l >= NumClasses || overlaps(b, drawn) {
			continue
		}
		drawn = append(drawn, b)
		c := labelColours[l]
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
		// The digit on black, glyph×glyph pixels a bitmap pixel, in the
		// box's corner.
		for gy := -1; gy <= 5; gy++ {
			for gx := -1; gx <= 3; gx++ {
				on := gy >= 0 && gy < 5 && gx >= 0 && gx < 3 && glyphs[l][gy]&(4>>gx) != 0
				col := color.RGBA{0, 0, 0, 255}
				if on {
					col = c
				}
				for dy := 0; dy < glyph; dy++ {
					for dx := 0; dx < glyph; dx++ {
						set(img, clip, x1+1+glyph*(gx+1)+dx, y1+1+glyph*(gy+1)+dy, col)
					}
				}
			}
		}
	}
	return nil
}

// overlaps says whether box b has IoU above 0.5 with one of others.
func overlaps(b []float64, others [][]float64) bool {
	area := func(r []float64) float64 { return (r[2] - r[0]) * (r[3] - r[1]) }
	for _, o := range others {
		w := min(b[2], o[2]) - max(b[0], o[0])
		h := min(b[3], o[3]) - max(b[1], o[1])
		if w > 0 && h > 0 && w*h > 0.5*(area(b)+area(o)-w*h) {
			return true
		}
	}
	return false
}

// set colours pixel (x, y) if it lies in r.
func set(img *image.RGBA, r image.Rectangle, x, y int, c color.RGBA) {
	if image.Pt(x, y).In(r) {
		img.SetRGBA(x, y, c)
	}
}
