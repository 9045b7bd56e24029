package grid

import (
	"math"
	"testing"
)

func TestGrid(t *testing.T) {
	for _, c := range []struct{ n, want int }{
		{0, 0}, {1, 1}, {Block, 1}, {Block + 1, 2}, {Block * GridMax, GridMax},
		{Block*GridMax + 1, GridMax}, {math.MaxInt32, GridMax}, {math.MaxInt, GridMax},
	} {
		if got := Grid(c.n); got != c.want {
			t.Errorf("Grid(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	if got := GridWith(1000, 3); got != 3 {
		t.Errorf("GridWith(1000, 3) = %d, want 3", got)
	}
}
