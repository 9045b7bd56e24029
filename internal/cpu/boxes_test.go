package cpu

import (
	"strings"
	"testing"
)

// Every kernel of RoIPool, PSRoIAlign and PSRoIPool checks what it indexes
// with, so that a bad box or index reaching only a backward kernel is an
// error, never an out-of-range access or a data race.
func TestPoolKernelsRejectBadInput(t *testing.T) {
	g := &PoolGeom{N: 1, C: 4, H: 3, W: 3, PH: 2, PW: 2, Scale: 1}
	x := make([]float64, 1*4*3*3)
	bad := []float64{1, 0, 0, 2, 2} // batch index 1 of 1 image
	y := make([]float64, 1*1*2*2)   // PS ops: 4 channels / 4 bins
	idx := make([]int, 1*4*2*2)
	kernels := map[string]func() error{
		"RoIPool argmax":      func() error { return RoIPoolArgmax(g, x, bad, idx) },
		"PSRoIAlign forward":  func() error { return PSRoIAlignForward(g, x, bad, y) },
		"PSRoIAlign adjoint":  func() error { return PSRoIAlignTranspose(g, y, bad, x) },
		"PSRoIPool forward":   func() error { return PSRoIPoolForward(g, x, bad, y) },
		"PSRoIPool transpose": func() error { return PSRoIPoolTranspose(g, y, bad, x) },
	}
	for name, k := range kernels {
		if err := k(); err == nil || !strings.Contains(err.Error(), "box 0: batch index 1") {
			t.Errorf("%s: error %v", name, err)
		}
	}

	// Indices: RoIGather needs them in [-1, len(x)); RoIScatterAdd also
	// needs row (k, c) inside one plane of channel c.
	grad := make([]float64, len(idx))
	for i := range idx {
		idx[i] = -1
	}
	for _, c := range []struct {
		name    string
		at, v   int
		gather  bool // RoIGather rejects it too
		wantErr string
	}{
		{"past the end", 5, len(x), true, "index 36 at 5"},
		{"below -1", 3, -2, true, "index -2 at 3"},
		{"another channel", 4, 0, false, "index 0 at 4"},         // row 1 is channel 1
		{"another plane of the row", 2, 9 + 4, false, "at 2"},    // row 0 mixes planes 0 and 1
		{"plane of the right channel", 4, 9 + 4, false, "<nil>"}, // channel 1, fine
	}[:] {
		t.Run(c.name, func(t *testing.T) {
			ix := append([]int(nil), idx...)
			ix[c.at] = c.v
			if c.name == "another plane of the row" {
				ix[0] = 0
			}
			err := RoIScatterAdd(g, grad, ix, make([]float64, len(x)))
			if got := errString(err); !strings.Contains(got, c.wantErr) {
				t.Errorf("RoIScatterAdd: error %v, want %q", err, c.wantErr)
			}
			err = RoIGather(x, ix, make([]float64, len(ix)), g.PH*g.PW)
			if (err != nil) != c.gather {
				t.Errorf("RoIGather: error %v", err)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
