package pack

import (
	"strings"
	"testing"

	"github.com/gops-dev/gops/internal/cpu"
)

func TestPack(t *testing.T) {
	bx := []float64{1, 0, 0, 4, 2}
	gr := []cpu.RoIAlignBox[float64]{{StartY: -0.5, StartX: 0.5, BinH: 1, BinW: 2, GH: 2, GW: 3, Count: 6}}
	p, err := Grids("RoIAlign", gr, bx)
	if err != nil || len(p) != GridPack || p[0] != 1 || p[5] != 2 || p[6] != 3 || p[7] != 6 {
		t.Fatalf("Grids = %v, %v", p, err)
	}
	// unaligned, height 2·0.25 < 1: the y coefficient is clamped, x not.
	p, err = BoxDerivGrids("RoIAlign", bx, gr, 0.25, false)
	if err != nil || len(p) != BoxDerivPack || p[8] != 1 || p[9] != 0 {
		t.Fatalf("BoxDerivGrids = %v, %v", p, err)
	}
	big := []cpu.RoIAlignBox[float64]{{GH: 1<<24 + 1, GW: 1}}
	if _, err := Grids("RoIAlign", big, bx); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("Grids of a 2²⁴+1 grid: %v", err)
	}
	if _, err := BoxDerivGrids("RoIAlign", bx, big, 1, true); err == nil {
		t.Error("BoxDerivGrids of a 2²⁴+1 grid: no error")
	}
	// 2³² points in a box: the kernels number a box's points with 64 bits.
	many := []cpu.RoIAlignBox[float64]{{GH: 1 << 16, GW: 1 << 16}}
	if _, err := Grids("PSRoIAlign", many, bx); err != nil {
		t.Errorf("Grids of 2³² points: %v", err)
	}
	if _, err := PoolBins("RoIPool", &cpu.PoolGeom{N: 1, C: 1, H: 4, W: 4, PH: 1, PW: 1, Scale: 1}, bx, true); err == nil {
		t.Error("PoolBins of a box of batch 1 of 1 image: no error")
	}
}
