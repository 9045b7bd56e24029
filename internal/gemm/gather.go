package gemm

// PanelRows are the offsets of a panel's rows in the source that
// GatherPanelRows copies them from, with their least and greatest, found
// once (NewPanelRows) for the many panels that gather the same rows at
// other places of their source.
type PanelRows struct {
	offs   []int
	lo, hi int // the least and greatest offset of offs or of a set holding it
}

// NewPanelRows is offs (not copied) as PanelRows.
func NewPanelRows(offs []int) PanelRows {
	p := PanelRows{offs: offs}
	for i, o := range offs {
		if i == 0 || o < p.lo {
			p.lo = o
		}
		if i == 0 || o > p.hi {
			p.hi = o
		}
	}
	return p
}

// Sub is rows [i, j) of p (a K block's); its bounds stay p's, a superset's,
// which bound its offsets as well.
func (p PanelRows) Sub(i, j int) PanelRows { return PanelRows{p.offs[i:j], p.lo, p.hi} }

// GatherPanelRows writes dst[r·ld:][:w] = src[offs[r]:][:w] for the rows'
// offsets offs, r < len(offs): rows of a packed panel (ld = PanelWidth,
// w ≤ ld), each a run of src of its own (GemmPackedRows' panels that it
// cannot read in place: a convolution's column rows in a zero-padded copy
// of its input, each at its own offset). Every element is copied as it is. It panics, as slicing does,
// when a run lies outside src or dst is too short.
func GatherPanelRows[T Float](dst []T, ld int, src []T, rows PanelRows, w int) {
	offs := rows.offs
	if len(offs) == 0 || w == 0 {
		return
	}
	_, _ = src[rows.lo], src[rows.hi+w-1] // both ends of every run inside src
	_ = dst[(len(offs)-1)*ld+w-1]
	if gatherAsm(dst, ld, src, offs, w) {
		return
	}
	for r, o := range offs {
		copy(dst[r*ld:r*ld+w], src[o:o+w])
	}
}
