package detection

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"
)

// AnchorGenerator is torchvision's anchor_utils.AnchorGenerator: per
// feature-map level l, len(Sizes[l])·len(AspectRatios[l]) anchors centred
// at every location, aspect ratio = height/width. RetinaNet: Sizes[l] =
// (s, ⌊s·2^(1/3)⌋, ⌊s·2^(2/3)⌋) for s = 32, 64, 128, 256, 512 and
// AspectRatios[l] = (0.5, 1, 2); FCOS: Sizes = (8), (16), (32), (64), (128)
// and AspectRatios[l] = (1).
type AnchorGenerator struct {
	// Sizes is each level's anchor sizes (pixels of the padded image).
	Sizes [][]float64
	// AspectRatios is each level's height/width ratios.
	AspectRatios [][]float64
}

// NumAnchorsPerLocation is num_anchors_per_location(): A_l =
// len(Sizes[l])·len(AspectRatios[l]) per level (over the levels both
// have).
func (g AnchorGenerator) NumAnchorsPerLocation() []int {
	n := make([]int, min(len(g.Sizes), len(g.AspectRatios)))
	for l := range n {
		n[l] = len(g.Sizes[l]) * len(g.AspectRatios[l])
	}
	return n
}

// check checks the configuration against levels feature maps (−1: any).
func (g AnchorGenerator) check(opName string, levels int) error {
	if len(g.Sizes) == 0 || len(g.Sizes) != len(g.AspectRatios) {
		return fmt.Errorf("detection: %s: %d levels of Sizes and %d of AspectRatios, want the same number, at least 1", opName, len(g.Sizes), len(g.AspectRatios))
	}
	if levels >= 0 && levels != len(g.Sizes) {
		return fmt.Errorf("detection: %s: %d feature maps for %d levels of Sizes and AspectRatios", opName, levels, len(g.Sizes))
	}
	for l := range g.Sizes {
		if len(g.Sizes[l]) == 0 || len(g.AspectRatios[l]) == 0 {
			return fmt.Errorf("detection: %s: level %d has %d sizes and %d aspect ratios, want at least 1 of each", opName, l, len(g.Sizes[l]), len(g.AspectRatios[l]))
		}
		for _, s := range g.Sizes[l] {
			if !(s > 0) || math.IsInf(s, 0) {
				return fmt.Errorf("detection: %s: Sizes[%d] holds %v, want finite sizes > 0", opName, l, s)
			}
		}
		for _, r := range g.AspectRatios[l] {
			if !(r > 0) || math.IsInf(r, 0) {
				return fmt.Errorf("detection: %s: AspectRatios[%d] holds %v, want finite ratios > 0", opName, l, r)
			}
		}
	}
	return nil
}

// checkModel checks g for a detector (named model in errors) whose
// backbone returns levels maps and whose head predicts perLocation anchors
// at every location of every level (torchvision asserts the first on the
// first forward and takes the head's count from level 0).
func (g AnchorGenerator) checkModel(model string, levels, perLocation int) error {
	if err := g.check("AnchorGenerator", levels); err != nil {
		return err
	}
	for l, a := range g.NumAnchorsPerLocation() {
		if a != perLocation {
			return fmt.Errorf("detection: AnchorGenerator: %d anchors per location at level %d, %s's head predicts %d", a, l, model, perLocation)
		}
	}
	return nil
}

// CellAnchors is generate_anchors for every level: the zero-centred
// anchors [A_l, 4] (x1, y1, x2, y2) of level l, in dtype dt, ratio-major
// (anchor i·len(Sizes[l]) + j has AspectRatios[l][i] and Sizes[l][j]).
// As torchvision they are computed in float32 (h = √ratio, w = 1/h,
// ±(w·size)/2 and ±(h·size)/2), rounded half to even (torch.round) and
// then converted to dt. Errors: dt not float32 or float64, levels of
// Sizes and AspectRatios differing in number or empty, sizes or ratios
// not finite and > 0.
func (g AnchorGenerator) CellAnchors(dt tensor.Dtype) ([]*tensor.Dense, error) {
	if err := g.check("AnchorGenerator.CellAnchors", -1); err != nil {
		return nil, err
	}
	cells := make([]*tensor.Dense, len(g.Sizes))
	for l := range g.Sizes {
		c := g.cellAnchors(l)
		if dt == tensor.Float32 {
			cells[l] = newValue(c, len(c)/4, 4)
			continue
		}
		if dt != tensor.Float64 {
			return nil, fmt.Errorf("detection: AnchorGenerator.CellAnchors: dtype %v, want float32 or float64", dt)
		}
		cells[l] = newValue(convertValues[float64](c), len(c)/4, 4)
	}
	return cells, nil
}

// cellAnchors is level l's base anchors in float32, flat [A, 4].
func (g AnchorGenerator) cellAnchors(l int) []float32 {
	sizes, ratios := g.Sizes[l], g.AspectRatios[l]
	out := make([]float32, 0, 4*len(sizes)*len(ratios))
	for _, r := range ratios {
		hr := float32(math.Sqrt(float64(float32(r))))
		wr := 1 / hr
		for _, s := range sizes {
			ws, hs := wr*float32(s), hr*float32(s)
			out = append(out, round32(-ws/2), round32(-hs/2), round32(ws/2), round32(hs/2))
		}
	}
	return out
}

// round32 is torch.round on float32: half to even.
func round32(x float32) float32 { return float32(math.RoundToEven(float64(x))) }

// Anchors is AnchorGenerator.forward for one image list: the anchors of
// the padded batch of size imageSize (H, W: ImageList.Tensors' last two
// axes) with feature maps of gridSizes[l] = (H_l, W_l), in dtype dt (the
// feature maps'). The stride of level l is (H / H_l, W / W_l) (integer
// division, as torchvision), and levels[l] is [H_l·W_l·A_l, 4] with anchor
// a at location (y, x) in row (y·W_l + x)·A_l + a: cell anchor a shifted
// by (x·stride_w, y·stride_h). all is the levels concatenated
// [Σ H_l·W_l·A_l, 4], the anchors torchvision gives every image. Errors:
// as CellAnchors', a number of gridSizes other than the number of levels,
// grid sizes < 1, negative image sizes.
func (g AnchorGenerator) Anchors(dt tensor.Dtype, imageSize [2]int, gridSizes [][2]int) (levels []*tensor.Dense, all *tensor.Dense, err error) {
	const op = "AnchorGenerator.Anchors"
	if err := g.check(op, len(gridSizes)); err != nil {
		return nil, nil, err
	}
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, nil, fmt.Errorf("detection: %s: dtype %v, want float32 or float64", op, dt)
	}
	if imageSize[0] < 0 || imageSize[1] < 0 {
		return nil, nil, fmt.Errorf("detection: %s: imageSize %v has a negative side", op, imageSize)
	}
	for l, gs := range gridSizes {
		if gs[0] < 1 || gs[1] < 1 {
			return nil, nil, fmt.Errorf("detection: %s: gridSizes[%d] = %v, want sides >= 1", op, l, gs)
		}
	}
	if dt == tensor.Float32 {
		levels, all = gridAnchors[float32](g, imageSize, gridSizes)
	} else {
		levels, all = gridAnchors[float64](g, imageSize, gridSizes)
	}
	return levels, all, nil
}

// gridAnchors is Anchors in T for a checked configuration.
func gridAnchors[T floatType](g AnchorGenerator, imageSize [2]int, gridSizes [][2]int) ([]*tensor.Dense, *tensor.Dense) {
	levels := make([]*tensor.Dense, len(gridSizes))
	var all []T
	for l, gs := range gridSizes {
		cell := convertValues[T](g.cellAnchors(l))
		a := len(cell) / 4
		sh, sw := imageSize[0]/gs[0], imageSize[1]/gs[1]
		out := make([]T, 0, gs[0]*gs[1]*len(cell))
		for y := 0; y < gs[0]; y++ {
			for x := 0; x < gs[1]; x++ {
				dx, dy := T(x*sw), T(y*sh)
				for i := 0; i < a; i++ {
					c := cell[4*i : 4*i+4]
					out = append(out, dx+c[0], dy+c[1], dx+c[2], dy+c[3])
				}
			}
		}
		levels[l] = newValue(out, len(out)/4, 4)
		all = append(all, out...)
	}
	return levels, newValue(all, len(all)/4, 4)
}
