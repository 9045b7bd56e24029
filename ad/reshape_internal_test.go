package ad

import (
	"math"
	"testing"
)

// TestReshapeCopyOverwrites: ReshapeSpec declares KernelOverwrites (a
// recycled result comes uncleared), so its kernel, copyData, must write
// every element of its result: none of the NaNs it is given survives.
func TestReshapeCopyOverwrites(t *testing.T) {
	if !ReshapeSpec([]int{2, 3}, []int{3, 2}).KernelOverwrites {
		t.Fatal("ReshapeSpec does not declare KernelOverwrites")
	}
	for _, n := range []int{1, 7, 4096} {
		in, out := make([]float64, n), make([]float64, n)
		for i := range in {
			in[i], out[i] = float64(i)-2.5, math.NaN()
		}
		if err := copyData(Tensor[float64]{Data: out}, []Tensor[float64]{{Data: in}}); err != nil {
			t.Fatal(err)
		}
		for i, v := range out {
			if v != in[i] {
				t.Fatalf("n %d: out[%d] = %v, want %v", n, i, v, in[i])
			}
		}
	}
}
