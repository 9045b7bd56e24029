package gemm

// GatherPanelRows writes dst[r·ld:][:w] = src[offs[r]:][:w] for
// r < len(offs): rows of a packed panel (ld = PanelWidth, w ≤ ld), each a
// run of src of its own (a FillB's tool: a convolution's column rows read
// from a zero-padded copy of its input, each at its own offset). Every
// element is copied as it is. It panics, as slicing does, when a run lies
// outside src or dst is too short.
func GatherPanelRows[T Float](dst []T, ld int, src []T, offs []int, w int) {
	if len(offs) == 0 || w == 0 {
		return
	}
	lo, hi := offs[0], offs[0]
	for _, o := range offs[1:] {
		lo, hi = min(lo, o), max(hi, o)
	}
	_, _ = src[lo], src[hi+w-1] // both ends of every run inside src
	_ = dst[(len(offs)-1)*ld+w-1]
	if gatherAsm(dst, ld, src, offs, w) {
		return
	}
	for r, o := range offs {
		copy(dst[r*ld:r*ld+w], src[o:o+w])
	}
}
