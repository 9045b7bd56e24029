package cpu

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestPyramidLevels: boxes go to their FPN level (clamped to the maps),
// a box of negative area to none, and a non-finite coordinate is a
// *PyramidBoxError naming the first box with one.
func TestPyramidLevels(t *testing.T) {
	p := &Pyramid{Mapper: LevelMapper{KMin: ScaleLevel(0.25), KMax: ScaleLevel(0.125), K0: 4, S0: 224}}
	for range 2 {
		p.Levels = append(p.Levels, &RoIAlignGeom{N: 2, C: 1, H: 4, W: 4, PH: 1, PW: 1})
	}
	if p.Mapper.KMin != 2 || p.Mapper.KMax != 3 {
		t.Fatalf("levels %d..%d, want 2..3", p.Mapper.KMin, p.Mapper.KMax)
	}
	rois := []float64{
		0, 0, 0, 10, 10, // small: clamped to level 2, map 0
		1, 0, 0, 500, 500, // large: clamped to level 3, map 1
		0, 5, 5, 0, 10, // negative area: no level
		1, 0, 0, 56, 56, // 56 = 224/4: level 2
		0, 0, 0, 112, 112, // 112 = 224/2: level 3
	}
	got, err := PyramidLevels(p, rois)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int{{0, 3}, {1, 4}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("levels %v, want %v", got, want)
	}
	rois[3*5+2] = math.NaN()
	rois[0] = 7 // a bad batch index in an earlier box: the NaN is still named
	_, err = PyramidLevels(p, rois)
	var e *PyramidBoxError
	if !errors.As(err, &e) || *e != (PyramidBoxError{Box: 3, Level: -1, What: "y1 is NaN"}) {
		t.Fatalf("error %v, want box 3's y1 NaN", err)
	}
	if want := "gops: MultiScaleRoIAlign: box 3: y1 is NaN"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if want := "gops: MultiScaleRoIAlign: box 1, level 0: x"; (&PyramidBoxError{Box: 1, What: "x"}).Error() != want {
		t.Errorf("level error %q, want %q", (&PyramidBoxError{Box: 1, What: "x"}).Error(), want)
	}
}
