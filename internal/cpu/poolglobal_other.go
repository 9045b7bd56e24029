//go:build !amd64 || purego

package cpu

// avgOneLanes is 0 here (no vector kernel): avgPoolOne's Go loops do
// every plane.
func avgOneLanes[T Float](hw int) int { return 0 }

func avgOneVec[T Float](out, x []T, groups, hw, w, r0, r1, c0, c1 int, d T) {}

var avgOneAVX2 = false
