package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"
	"strings"

	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/tensor"
)

// Layout of the MAML figure, in output pixels.
const (
	figCanvasScale  = 6   // query canvas pixel -> figure pixels
	figSupportScale = 4   // support canvas pixel -> figure pixels
	figCropSide     = 192 // side of a drawn crop
	figFeatScale    = 6   // feature-crop bin -> figure pixels
	figText         = 3   // font pixel -> figure pixels
	figMargin       = 12
)

// Figure is the rendered picture and its caption.
type Figure struct {
	Image   *image.RGBA
	Caption string
}

// Figure draws the first query canvas of task t and, for each of its
// boxes, the RoIAlign crop with the deformable convolution's sampling
// points at the initial parameters p0 and at the meta-trained p, each
// adapted to t with one inner step, and the model's feature crops. If ref
// is not nil, the canvas also shows each box jittered and refined.
func (l *Learner) Figure(p0, p Params, t *scenes.Task, ref *Refinement) (*Figure, error) {
	a := l.cfg.Arch
	sc := t.Query
	s := a.Canvas
	q, pc := a.Q(), a.Crop
	bx := sc.Boxes.Data().([]float64)
	var idx []int // boxes on canvas 0
	for k := 0; k < len(sc.Labels); k++ {
		if bx[5*k] == 0 {
			idx = append(idx, k)
		}
	}
	canvas := sc.Canvas.Data().([]float64)[:s*s]

	// The model at both parameter vectors, adapted to t.
	var runs [2]*LossGradValues
	for i, pp := range []Params{p0, p} {
		var err error
		if _, runs[i], err = l.Objective(pp, t); err != nil {
			return nil, err
		}
	}
	// High-resolution crops of the canvas for display (the model's crops
	// are 8x8 bins of the feature map, drawn below them).
	const hires = 48
	var boxes []Box
	for _, k := range idx {
		boxes = append(boxes, Box{Name: fmt.Sprint(k), X1: bx[5*k+1], Y1: bx[5*k+2], X2: bx[5*k+3], Y2: bx[5*k+4]})
	}
	img := tensor.New(tensor.WithShape(1, 1, s, s), tensor.WithBacking(append([]float64(nil), canvas...)))
	crops, err := Crops(img, BoxesTensor(boxes), gops.RoIAlignOpts{OutputSize: [2]int{hires, hires}, SamplingRatio: 2, Aligned: true})
	if err != nil {
		return nil, err
	}
	cd := crops.Data().([]float64)

	canvasW := s * figCanvasScale
	featW := a.Feat*(pc*figFeatScale+2) - 2
	colW := max(figCropSide, featW)
	textH := 5*figText + 2*figText
	n := len(idx)
	supCanvases := t.Support.Canvas.Shape()[0]
	supW := s * figSupportScale
	topW := 2*figMargin + canvasW + figMargin + supCanvases*(supW+figMargin)
	width := max(topW, figMargin+n*(colW+figMargin))
	height := figMargin + textH + canvasW + figMargin + // canvas and its title
		2*(textH+figCropSide+figMargin) + // before, after
		textH + pc*figFeatScale + figMargin // feature crops
	out := image.NewRGBA(image.Rect(0, 0, width, height))
	draw.Draw(out, out.Bounds(), image.NewUniform(color.RGBA{24, 24, 24, 255}), image.Point{}, draw.Src)
	white := color.RGBA{230, 230, 230, 255}
	grey := color.RGBA{160, 160, 160, 255}
	green, red := color.RGBA{90, 230, 90, 255}, color.RGBA{240, 70, 70, 255}
	jittered, refined := color.RGBA{110, 120, 255, 255}, color.RGBA{0, 235, 255, 255}

	// The query canvas, its boxes and each box's prediction after
	// meta-training.
	y := figMargin
	drawText(out, figMargin, y, "QUERY SET, PREDICTED", white)
	y += textH
	cv := image.Rect(figMargin, y, figMargin+canvasW, y+canvasW)
	drawCanvas(out, cv, canvas, s, figCanvasScale)
	for j, k := range idx {
		r := boxRect(boxes[j], cv.Min, figCanvasScale)
		outline(out, r, boxColours[j%len(boxColours)], 2)
		pred := argmax(runs[1].Logits[k*a.Ways : (k+1)*a.Ways])
		c := green
		if pred != sc.Labels[k] {
			c = red
		}
		drawLabel(out, r, cv, fmt.Sprint(t.Classes[pred]), c)
		if ref != nil {
			rb := ref.Boxes[k]
			outline(out, boxRect(Box{X1: rb.Before[0], Y1: rb.Before[1], X2: rb.Before[2], Y2: rb.Before[3]}, cv.Min, figCanvasScale), jittered, 1)
			outline(out, boxRect(Box{X1: rb.After[0], Y1: rb.After[1], X2: rb.After[2], Y2: rb.After[3]}, cv.Min, figCanvasScale), refined, 1)
		}
	}

	// The support canvases the model adapts on, with their labels.
	sx := cv.Max.X + 2*figMargin
	drawText(out, sx, figMargin, "SUPPORT SET", white)
	sb := t.Support.Boxes.Data().([]float64)
	sd := t.Support.Canvas.Data().([]float64)
	for c := 0; c < supCanvases; c++ {
		r := image.Rect(sx+c*(supW+figMargin), y, sx+c*(supW+figMargin)+supW, y+supW)
		drawCanvas(out, r, sd[c*s*s:(c+1)*s*s], s, figSupportScale)
		for k := range t.Support.Labels {
			if int(sb[5*k]) != c {
				continue
			}
			b := Box{X1: sb[5*k+1], Y1: sb[5*k+2], X2: sb[5*k+3], Y2: sb[5*k+4]}
			br := boxRect(b, r.Min, figSupportScale)
			outline(out, br, grey, 1)
			// The label inside the box's top-left corner, on a dark patch.
			draw.Draw(out, image.Rect(br.Min.X+1, br.Min.Y+1, br.Min.X+1+5*figText, br.Min.Y+1+7*figText),
				image.NewUniform(color.RGBA{24, 24, 24, 255}), image.Point{}, draw.Src)
			drawText(out, br.Min.X+1+figText, br.Min.Y+1+figText, fmt.Sprint(t.Classes[t.Support.Labels[k]]), white)
		}
	}
	// The legend, under the support canvases.
	ly := y + supW + figMargin
	for i := 0; i < 120; i++ {
		draw.Draw(out, image.Rect(sx+44+i, ly, sx+45+i, ly+5*figText), image.NewUniform(viridis(float64(i)/119)), image.Point{}, draw.Src)
	}
	drawText(out, sx, ly, "MASK", white)
	drawText(out, sx+44+120+figText*2, ly, "0 TO 1", white)
	drawText(out, sx, ly+textH, "WHITE: CENTRE OUTPUT, GRID TO TAPS", white)
	drawText(out, sx+0, ly+2*textH, "PREDICTION", white)
	drawText(out, sx+11*4*figText, ly+2*textH, "RIGHT", green)
	drawText(out, sx+17*4*figText, ly+2*textH, "WRONG", red)
	if ref != nil {
		drawText(out, sx, ly+3*textH, "BOXES", white)
		drawText(out, sx+6*4*figText, ly+3*textH, "JITTERED", jittered)
		drawText(out, sx+15*4*figText, ly+3*textH, "REFINED", refined)
	}
	y += canvasW + figMargin

	// Sampling points before and after.
	for i, title := range []string{"SAMPLING POINTS, INITIAL WEIGHTS ADAPTED", "SAMPLING POINTS, META-TRAINED WEIGHTS ADAPTED"} {
		drawText(out, figMargin, y, title, white)
		y += textH
		for j, k := range idx {
			x0 := figMargin + j*(colW+figMargin)
			r := image.Rect(x0, y, x0+figCropSide, y+figCropSide)
			plane := cd[j*hires*hires : (j+1)*hires*hires]
			for py := 0; py < figCropSide; py++ {
				for px := 0; px < figCropSide; px++ {
					v := byte8(plane[(py*hires/figCropSide)*hires+px*hires/figCropSide])
					out.SetRGBA(r.Min.X+px, r.Min.Y+py, color.RGBA{v / 2, v / 2, v / 2, 255})
				}
			}
			drawSamplingPoints(out, r, runs[i].Offset, runs[i].Mask, k, q, pc)
			outline(out, r.Inset(-2), boxColours[j%len(boxColours)], 2)
		}
		y += figCropSide + figMargin
	}

	// The model's RoIAlign crops of the feature map.
	drawText(out, figMargin, y, "ROIALIGN CROPS OF THE FEATURE MAP", white)
	y += textH
	for j, k := range idx {
		x0 := figMargin + j*(colW+figMargin)
		for c := 0; c < a.Feat; c++ {
			base := (k*a.Feat + c) * pc * pc
			cx := x0 + c*(pc*figFeatScale+2)
			for py := 0; py < pc*figFeatScale; py++ {
				for px := 0; px < pc*figFeatScale; px++ {
					v := runs[1].Crops[base+(py/figFeatScale)*pc+px/figFeatScale]
					out.SetRGBA(cx+px, y+py, diverging(v))
				}
			}
		}
	}

	var cap strings.Builder
	fmt.Fprintf(&cap, "   top left, a query canvas of held-out task 1 (x%d) with its %d boxes and the digit the meta-trained\n", figCanvasScale, n)
	fmt.Fprintf(&cap, "   model predicts for each after one inner step (green right, red wrong); top right, the support\n")
	fmt.Fprintf(&cap, "   canvases of that step with their labels, and a legend. Then, per query box, its crop with the\n")
	fmt.Fprintf(&cap, "   %d sampling points of the deformable convolution (%dx%d outputs x 9 taps, colour = mask from dark\n", q*q*9, q, q)
	fmt.Fprintf(&cap, "   blue 0 to yellow 1), at the initial and at the meta-trained weights, each adapted to the task;\n")
	fmt.Fprintf(&cap, "   white lines join the taps of the centre output to their places on the regular grid. Last, the\n")
	fmt.Fprintf(&cap, "   %d channels of the %dx%d RoIAlign crop of the feature map (blue < 0 < red) that the deformable\n", a.Feat, pc, pc)
	fmt.Fprintf(&cap, "   convolution reads.\n")
	if ref != nil {
		fmt.Fprintf(&cap, "   On the query canvas, thin lines: each box jittered (blue) and refined by %d gradient steps on\n", ref.Steps)
		fmt.Fprintf(&cap, "   the classifier's confidence w.r.t. the box (cyan), as in section 5.\n")
	}
	return &Figure{Image: out, Caption: cap.String()}, nil
}

// drawSamplingPoints marks, inside r (a crop of pc x pc bins drawn at
// r's size), where the deformable convolution of box k samples: output
// (ho, wo) tap (i, j) reads crop position (2ho - 1 + i + dy, 2wo - 1 + j + dx)
// in bin units, bin centres at integers.
func drawSamplingPoints(out *image.RGBA, r image.Rectangle, offset, mask []float64, k, q, pc int) {
	scale := float64(r.Dx()) / float64(pc)
	at := func(yy, xx float64) (int, int) {
		return r.Min.X + int(math.Round((xx+0.5)*scale)), r.Min.Y + int(math.Round((yy+0.5)*scale))
	}
	plane := q * q
	centre := (q / 2) * q
	if q%2 == 0 {
		centre = (q/2-1)*q + q/2 - 1
	}
	for l := 0; l < plane; l++ {
		ho, wo := l/q, l%q
		for tap := 0; tap < 9; tap++ {
			i, j := tap/3, tap%3
			dy := offset[(k*18+2*tap)*plane+l]
			dx := offset[(k*18+2*tap+1)*plane+l]
			m := mask[(k*9+tap)*plane+l]
			gy, gx := float64(2*ho-1+i), float64(2*wo-1+j)
			px, py := at(gy+dy, gx+dx)
			if l == centre {
				x0, y0 := at(gy, gx)
				line(out, r, x0, y0, px, py, color.RGBA{255, 255, 255, 255})
			}
			dot(out, r, px, py, 3, viridis(m))
		}
	}
}

// argmax is the index of the largest value.
func argmax(v []float64) int {
	best := 0
	for i := range v {
		if v[i] > v[best] {
			best = i
		}
	}
	return best
}

// outline draws a rectangle's border of width lw.
func outline(out *image.RGBA, r image.Rectangle, c color.RGBA, lw int) {
	u := image.NewUniform(c)
	for _, side := range []image.Rectangle{
		{r.Min, image.Pt(r.Max.X, r.Min.Y+lw)},
		{image.Pt(r.Min.X, r.Max.Y-lw), r.Max},
		{r.Min, image.Pt(r.Min.X+lw, r.Max.Y)},
		{image.Pt(r.Max.X-lw, r.Min.Y), r.Max},
	} {
		draw.Draw(out, side.Intersect(out.Bounds()), u, image.Point{}, draw.Src)
	}
}

// dot draws a filled disc clipped to clip.
func dot(out *image.RGBA, clip image.Rectangle, x, y, rad int, c color.RGBA) {
	for dy := -rad; dy <= rad; dy++ {
		for dx := -rad; dx <= rad; dx++ {
			if dx*dx+dy*dy <= rad*rad && image.Pt(x+dx, y+dy).In(clip) {
				out.SetRGBA(x+dx, y+dy, c)
			}
		}
	}
}

// line draws a straight line clipped to clip.
func line(out *image.RGBA, clip image.Rectangle, x0, y0, x1, y1 int, c color.RGBA) {
	n := max(abs(x1-x0), abs(y1-y0), 1)
	for s := 0; s <= n; s++ {
		x := x0 + (x1-x0)*s/n
		y := y0 + (y1-y0)*s/n
		if image.Pt(x, y).In(clip) {
			out.SetRGBA(x, y, c)
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// viridis maps t in [0, 1] to a dark-blue to yellow scale.
func viridis(t float64) color.RGBA {
	t = math.Min(1, math.Max(0, t))
	stops := [][3]float64{{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}
	f := t * float64(len(stops)-1)
	i := min(int(f), len(stops)-2)
	u := f - float64(i)
	var c [3]uint8
	for k := range c {
		c[k] = uint8(math.Round(stops[i][k]*(1-u) + stops[i+1][k]*u))
	}
	return color.RGBA{c[0], c[1], c[2], 255}
}

// diverging maps v in [-1, 1] to blue, black, red.
func diverging(v float64) color.RGBA {
	if v >= 0 {
		return color.RGBA{byte8(v), byte8(v * 0.3), byte8(v * 0.2), 255}
	}
	return color.RGBA{byte8(-v * 0.2), byte8(-v * 0.5), byte8(-v), 255}
}

// font3x5 is a 3x5 pixel font for upper-case letters, digits and a few
// signs: five rows of three cells, '#' set.
var font3x5 = map[rune][5]string{
	'A': {"###", "#.#", "###", "#.#", "#.#"}, 'B': {"##.", "#.#", "##.", "#.#", "##."},
	'C': {"###", "#..", "#..", "#..", "###"}, 'D': {"##.", "#.#", "#.#", "#.#", "##."},
	'E': {"###", "#..", "##.", "#..", "###"}, 'F': {"###", "#..", "##.", "#..", "#.."},
	'G': {"###", "#..", "#.#", "#.#", "###"}, 'H': {"#.#", "#.#", "###", "#.#", "#.#"},
	'I': {"###", ".#.", ".#.", ".#.", "###"}, 'J': {"..#", "..#", "..#", "#.#", "###"},
	'K': {"#.#", "#.#", "##.", "#.#", "#.#"}, 'L': {"#..", "#..", "#..", "#..", "###"},
	'M': {"#.#", "###", "###", "#.#", "#.#"}, 'N': {"##.", "#.#", "#.#", "#.#", "#.#"},
	'O': {"###", "#.#", "#.#", "#.#", "###"}, 'P': {"###", "#.#", "###", "#..", "#.."},
	'Q': {"###", "#.#", "#.#", "###", "..#"}, 'R': {"##.", "#.#", "##.", "#.#", "#.#"},
	'S': {"###", "#..", "###", "..#", "###"}, 'T': {"###", ".#.", ".#.", ".#.", ".#."},
	'U': {"#.#", "#.#", "#.#", "#.#", "###"}, 'V': {"#.#", "#.#", "#.#", "#.#", ".#."},
	'W': {"#.#", "#.#", "###", "###", "#.#"}, 'X': {"#.#", "#.#", ".#.", "#.#", "#.#"},
	'Y': {"#.#", "#.#", ".#.", ".#.", ".#."}, 'Z': {"###", "..#", ".#.", "#..", "###"},
	'0': {"###", "#.#", "#.#", "#.#", "###"}, '1': {".#.", "##.", ".#.", ".#.", "###"},
	'2': {"###", "..#", "###", "#..", "###"}, '3': {"###", "..#", "###", "..#", "###"},
	'4': {"#.#", "#.#", "###", "..#", "..#"}, '5': {"###", "#..", "###", "..#", "###"},
	'6': {"###", "#..", "###", "#.#", "###"}, '7': {"###", "..#", "..#", "..#", "..#"},
	'8': {"###", "#.#", "###", "#.#", "###"}, '9': {"###", "#.#", "###", "..#", "###"},
	'-': {"...", "...", "###", "...", "..."}, ',': {"...", "...", "...", ".#.", "#.."},
	'.': {"...", "...", "...", "...", ".#."}, '(': {".#.", "#..", "#..", "#..", ".#."},
	')': {".#.", "..#", "..#", "..#", ".#."}, 'x': {"...", "#.#", ".#.", "#.#", "..."}, ':': {"...", ".#.", "...", ".#.", "..."},
}

// drawText writes s with font3x5 at (x, y), each font pixel figText wide.
func drawText(out *image.RGBA, x, y int, s string, c color.RGBA) {
	for _, r := range s {
		if g, ok := font3x5[r]; ok {
			for row, bits := range g {
				for col, b := range bits {
					if b != '#' {
						continue
					}
					for dy := 0; dy < figText; dy++ {
						for dx := 0; dx < figText; dx++ {
							if p := image.Pt(x+col*figText+dx, y+row*figText+dy); p.In(out.Bounds()) {
								out.SetRGBA(p.X, p.Y, c)
							}
						}
					}
				}
			}
		}
		x += 4 * figText
	}
}

// drawCanvas draws an s x s grey canvas into r, each pixel scale wide.
func drawCanvas(out *image.RGBA, r image.Rectangle, plane []float64, s, scale int) {
	for py := 0; py < s*scale; py++ {
		for px := 0; px < s*scale; px++ {
			v := byte8(plane[(py/scale)*s+px/scale])
			out.SetRGBA(r.Min.X+px, r.Min.Y+py, color.RGBA{v, v, v, 255})
		}
	}
}

// boxRect is box b (canvas pixels) on a canvas drawn at origin, scaled.
func boxRect(b Box, origin image.Point, scale int) image.Rectangle {
	f := float64(scale)
	return image.Rect(int(math.Round(b.X1*f)), int(math.Round(b.Y1*f)),
		int(math.Round(b.X2*f)), int(math.Round(b.Y2*f))).Add(origin)
}

// drawLabel writes s above box r (or below it at the top of the canvas cv).
func drawLabel(out *image.RGBA, r, cv image.Rectangle, s string, c color.RGBA) {
	y := r.Min.Y - 6*figText
	if y < cv.Min.Y {
		y = r.Max.Y + figText
	}
	drawText(out, r.Min.X+2, y, s, c)
}
