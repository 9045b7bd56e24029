package detection

import (
	"strings"
	"testing"

	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/tensor"
)

func dtypeNamed(name string) tensor.Dtype {
	if name == "float32" {
		return tensor.Float32
	}
	return tensor.Float64
}

func TestAnchorGeneratorGolden(t *testing.T) {
	for _, c := range loadValues(t).Anchors {
		name := c.Name + "/" + c.Dtype
		g := AnchorGenerator{Sizes: c.Sizes, AspectRatios: c.AspectRatios}
		n := g.NumAnchorsPerLocation()
		if len(n) != len(c.NumAnchorsPerLocation) {
			t.Fatalf("%s: NumAnchorsPerLocation %v, want %v", name, n, c.NumAnchorsPerLocation)
		}
		for l := range n {
			if n[l] != c.NumAnchorsPerLocation[l] {
				t.Fatalf("%s: NumAnchorsPerLocation %v, want %v", name, n, c.NumAnchorsPerLocation)
			}
		}
		dt := dtypeNamed(c.Dtype)
		cells, err := g.CellAnchors(dt)
		if err != nil {
			t.Fatal(name, err)
		}
		for l, cell := range cells {
			golden.AssertClose(t, name+" cell anchors", f64s(cell), c.CellAnchors[l], 0, 0)
		}
		levels, all, err := g.Anchors(dt, c.ImageSize, c.GridSizes)
		if err != nil {
			t.Fatal(name, err)
		}
		for l, lv := range levels {
			if lv.Dtype() != dt || lv.Shape()[0] != c.PerLevel[l] {
				t.Fatalf("%s: level %d is %v %v, want [%d, 4] %v", name, l, lv.Dtype(), lv.Shape(), c.PerLevel[l], dt)
			}
		}
		golden.AssertClose(t, name+" anchors", f64s(all), c.Anchors, 0, 0)
	}
}

func TestAnchorGeneratorErrors(t *testing.T) {
	ok := AnchorGenerator{Sizes: [][]float64{{32}, {64}}, AspectRatios: [][]float64{{1}, {0.5, 2}}}
	grids := [][2]int{{4, 4}, {2, 2}}
	cases := []struct {
		name  string
		g     AnchorGenerator
		dt    tensor.Dtype
		size  [2]int
		grids [][2]int
		want  string
	}{
		{"no levels", AnchorGenerator{}, tensor.Float64, [2]int{32, 32}, nil, "at least 1"},
		{"levels differ", AnchorGenerator{Sizes: [][]float64{{1}}, AspectRatios: [][]float64{{1}, {1}}}, tensor.Float64, [2]int{32, 32}, grids[:1], "1 levels of Sizes and 2"},
		{"mismatched level count", ok, tensor.Float64, [2]int{32, 32}, grids[:1], "1 feature maps for 2 levels"},
		{"empty level", AnchorGenerator{Sizes: [][]float64{{}}, AspectRatios: [][]float64{{1}}}, tensor.Float64, [2]int{32, 32}, grids[:1], "level 0 has 0 sizes"},
		{"negative size", AnchorGenerator{Sizes: [][]float64{{-3}}, AspectRatios: [][]float64{{1}}}, tensor.Float64, [2]int{32, 32}, grids[:1], "Sizes[0] holds -3"},
		{"zero ratio", AnchorGenerator{Sizes: [][]float64{{3}}, AspectRatios: [][]float64{{0}}}, tensor.Float64, [2]int{32, 32}, grids[:1], "AspectRatios[0] holds 0"},
		{"dtype", ok, tensor.Int, [2]int{32, 32}, grids, "dtype int"},
		{"negative image", ok, tensor.Float32, [2]int{-1, 32}, grids, "negative side"},
		{"zero grid", ok, tensor.Float32, [2]int{32, 32}, [][2]int{{4, 0}, {2, 2}}, "gridSizes[0]"},
	}
	for _, c := range cases {
		_, _, err := c.g.Anchors(c.dt, c.size, c.grids)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := ok.CellAnchors(tensor.Int); err == nil || !strings.Contains(err.Error(), "dtype int") {
		t.Errorf("CellAnchors(int): error %v", err)
	}
}
