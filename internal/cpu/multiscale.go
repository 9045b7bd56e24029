package cpu

import (
	"fmt"
	"math"
	"strings"

	"github.com/gops-dev/gops/internal/par"
)

// LevelMapper is torchvision's LevelMapper (FPN paper, eq. 1): a box of
// size s = sqrt(w·h) pools from FPN level k = floor(K0 + log2(s/S0) +
// 1e-6) clamped to [KMin, KMax], that is from feature map k − KMin.
type LevelMapper struct {
	KMin, KMax int // the FPN levels of the first and last feature maps (ScaleLevel)
	K0, S0     int // the canonical level and box size (torchvision's 4 and 224)
}

// levelEps is LevelMapper's eps.
const levelEps = 1e-6

// ScaleLevel is the FPN level of a feature map of spatial scale scale, as
// torchvision's _setup_scales: −log2(scale) computed in float32,
// truncated.
func ScaleLevel(scale float64) int {
	return int(-math.Log2(float64(float32(scale))))
}

// FPNLevel is the index of the feature map that box (x1, y1, x2, y2)
// pools from under m, computed in T as torchvision does, or -1 for a box
// of negative area (NaN level), which pools to zeros.
func FPNLevel[T Float](m LevelMapper, x1, y1, x2, y2 T) int {
	s := T(math.Sqrt(float64((x2 - x1) * (y2 - y1))))
	k := T(m.K0) + T(math.Log2(float64(s/T(m.S0))))
	k += T(levelEps)
	f := math.Floor(float64(k))
	if math.IsNaN(f) {
		return -1
	}
	return int(min(max(f, float64(m.KMin)), float64(m.KMax))) - m.KMin
}

// Pyramid is what MultiScaleRoIAlign's kernels need: each feature map's
// RoIAlign geometry (its shape [N, C, Hl, Wl] and spatial scale; N, C, the
// output size and the sampling ratio are the same for all) and the level
// mapper.
type Pyramid struct {
	Levels []*RoIAlignGeom
	Mapper LevelMapper
}

// PyramidBoxError is a MultiScaleRoIAlign kernel's error about one box,
// for the caller to name the box in its own terms (gops names it by image
// and row). Its Error names the box by its row in the RoIs.
type PyramidBoxError struct {
	Box   int    // the box's row in the RoIs [K, 5]
	Level int    // the feature map it pools from, or -1 where it has none yet
	What  string // what is wrong with it, e.g. "x1 is NaN"
}

func (e *PyramidBoxError) Error() string {
	if e.Level < 0 {
		return fmt.Sprintf("gops: MultiScaleRoIAlign: box %d: %s", e.Box, e.What)
	}
	return fmt.Sprintf("gops: MultiScaleRoIAlign: box %d, level %d: %s", e.Box, e.Level, e.What)
}

// PyramidLevels checks the RoIs [K, 5] and returns the boxes of each level
// in order (boxes of no level, FPNLevel's -1, in none). A non-finite
// coordinate is a *PyramidBoxError (level -1) naming the first box with
// one; other bad boxes are CheckBoxes' error.
func PyramidLevels[T Float](p *Pyramid, rois []T) ([][]int, error) {
	if err := CheckBoxes("MultiScaleRoIAlign", rois, p.Levels[0].N); err != nil {
		for k := 0; 5*k+5 <= len(rois); k++ {
			for j := 1; j < 5; j++ {
				if c := float64(rois[5*k+j]); math.IsNaN(c) || math.IsInf(c, 0) {
					return nil, &PyramidBoxError{Box: k, Level: -1, What: fmt.Sprintf("%s is %v", BoxColumns[j], c)}
				}
			}
		}
		return nil, err
	}
	byLevel := make([][]int, len(p.Levels))
	for k := 0; 5*k+5 <= len(rois); k++ {
		r := rois[5*k : 5*k+5]
		if l := FPNLevel(p.Mapper, r[1], r[2], r[3], r[4]); l >= 0 {
			byLevel[l] = append(byLevel[l], k)
		}
	}
	return byLevel, nil
}

// PyramidLevelError is the error err of RoIAlign's kernel on level l's
// boxes idx of rois, as a *PyramidBoxError naming the box at fault (each
// is tried alone to find it), else err wrapped with the level.
func PyramidLevelError[T Float](p *Pyramid, l int, rois []T, idx []int, err error) error {
	g := p.Levels[l]
	for _, k := range idx {
		if e := CheckBoxes("RoIAlign", rois[5*k:5*k+5], g.N); e != nil {
			continue
		}
		one := append([]T{0}, rois[5*k+1:5*k+5]...)
		if _, e := RoIAlignGrids(g, one); e != nil {
			return &PyramidBoxError{Box: k, Level: l, What: strings.TrimPrefix(e.Error(), "gops: RoIAlign: box 0: ")}
		}
	}
	return fmt.Errorf("gops: MultiScaleRoIAlign: level %d: %w", l, err)
}

// GatherLevelRows copies rows idx (of width w) of src into dst, in order
// (GatherRows, in parallel over the rows), and returns dst, reallocated if
// shorter than len(idx)·w.
func GatherLevelRows[T Float](dst, src []T, idx []int, w int) []T {
	dst = resizeRows(dst, len(idx)*w)
	par.For(len(idx), func(lo, hi int) {
		GatherRows(dst[lo*w:hi*w], src, idx[lo:hi], w)
	})
	return dst
}

// ScatterLevelRows copies the rows of src (of width w) to rows idx of dst
// (a copy, not ScatterAddRows' sum: each box's row is written once), in
// parallel over the rows.
func ScatterLevelRows[T Float](dst, src []T, idx []int, w int) {
	par.For(len(idx), func(lo, hi int) {
		for j := lo; j < hi; j++ {
			copy(dst[idx[j]*w:(idx[j]+1)*w], src[j*w:(j+1)*w])
		}
	})
}

// resizeRows is s with length n, reallocated if too short.
func resizeRows[T Float](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// RoIKernel is a RoIAlign-family kernel k(g, data, rois, out) on one
// level: RoIAlignForward, RoIAlignTranspose, or a box-family member or its
// transpose (RoIAlignMember, RoIAlignMemberTranspose).
type RoIKernel[T Float] func(g *RoIAlignGeom, data, rois, out []T) error

// RoIAlignMember is member F_ab of RoIAlign's box family as a RoIKernel:
// RoIAlignForward for a = b = 0, else RoIAlignBoxDeriv into a cleared out.
func RoIAlignMember[T Float](a, b int, xMajor bool) RoIKernel[T] {
	if a+b == 0 {
		return RoIAlignForward[T]
	}
	return func(g *RoIAlignGeom, x, rois, out []T) error {
		clear(out) // RoIAlignBoxDeriv adds to out
		return RoIAlignBoxDeriv(g, a, b, xMajor, x, rois, out)
	}
}

// RoIAlignMemberTranspose is F_abᵀ as a RoIKernel (adding to its output):
// RoIAlignTranspose for a = b = 0, else RoIAlignBoxDerivTranspose.
func RoIAlignMemberTranspose[T Float](a, b int, xMajor bool) RoIKernel[T] {
	if a+b == 0 {
		return RoIAlignTranspose[T]
	}
	return func(g *RoIAlignGeom, grad, rois, dst []T) error {
		return RoIAlignBoxDerivTranspose(g, a, b, xMajor, grad, rois, dst)
	}
}

// PyramidForward pools every box of the level only (of all levels when
// only < 0) into out [K, R] (R = C·PH·PW for RoIAlign, J·C·PH·PW for a
// box-family member) from maps[l] with kernel k, leaving the other rows
// untouched. A level's boxes are gathered, pooled together and scattered
// to their rows; a level holding every box is pooled in place. Errors are
// PyramidLevels' and PyramidLevelError's.
func PyramidForward[T Float](p *Pyramid, maps [][]T, rois, out []T, only int, k RoIKernel[T]) error {
	byLevel, err := PyramidLevels(p, rois)
	if err != nil {
		return err
	}
	row := len(out) / max(len(rois)/5, 1)
	var sub, buf []T
	for l, idx := range byLevel {
		if len(idx) == 0 || only >= 0 && l != only {
			continue
		}
		if len(idx) == len(rois)/5 { // every box on this level: in place
			if err := k(p.Levels[l], maps[l], rois, out); err != nil {
				return PyramidLevelError(p, l, rois, idx, err)
			}
			continue
		}
		sub = GatherLevelRows(sub, rois, idx, 5)
		buf = resizeRows(buf, len(idx)*row)
		pooled := buf
		if err := k(p.Levels[l], maps[l], sub, pooled); err != nil {
			return PyramidLevelError(p, l, rois, idx, err)
		}
		ScatterLevelRows(out, pooled, idx, row)
	}
	return nil
}

// PyramidTranspose adds to dst (map l's shape) the transpose kernel k of
// level l's RoIAlign (or box-family member) applied to the rows of grad
// [K, R] of level l's boxes. Errors are PyramidForward's.
func PyramidTranspose[T Float](p *Pyramid, l int, grad, rois, dst []T, k RoIKernel[T]) error {
	byLevel, err := PyramidLevels(p, rois)
	if err != nil {
		return err
	}
	idx := byLevel[l]
	if len(idx) == 0 {
		return nil
	}
	sub, gsub := rois, grad
	if len(idx) < len(rois)/5 {
		row := len(grad) / (len(rois) / 5)
		sub = GatherLevelRows(nil, rois, idx, 5)
		gsub = GatherLevelRows(nil, grad, idx, row)
	}
	if err := k(p.Levels[l], gsub, sub, dst); err != nil {
		return PyramidLevelError(p, l, rois, idx, err)
	}
	return nil
}
