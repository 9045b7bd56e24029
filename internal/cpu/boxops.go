package cpu

// ClipBoxes clips the coordinates of boxes [K, 4] (x1, y1, x2, y2) to
// [0, hi[col]] (torchvision.ops.clip_boxes_to_image; NaN stays NaN), or,
// with mask, sets out to 1 where a coordinate is inside its range and 0
// elsewhere (the clip's gradient mask).
func ClipBoxes[T Float](out, in []T, hi [4]float64, mask bool) {
	for i, v := range in {
		x, h := float64(v), hi[i%4]
		if mask {
			out[i] = 0
			if x >= 0 && x <= h {
				out[i] = 1
			}
			continue
		}
		out[i] = T(clamp(x, 0, h))
	}
}

// BoxConversion is one of BoxConvert's four linear maps to or from xyxy,
// in the order of the ConvertKind enum of the CUDA kernels' boxops.cu
// (XYXYToXYWH is its xyxyToXYWH).
type BoxConversion int

const (
	XYXYToXYWH   BoxConversion = iota // (x1, y1, x2, y2) → (x1, y1, w, h)
	XYWHToXYXY                        // (x1, y1, w, h) → (x1, y1, x2, y2)
	XYXYToCXCYWH                      // (x1, y1, x2, y2) → (cx, cy, w, h)
	CXCYWHToXYXY                      // (cx, cy, w, h) → (x1, y1, x2, y2)
)

// BoxConvert sets y [K, 4] to conversion kind (or, with transpose, its
// transpose) of each row of x [K, 4], with torchvision.ops.box_convert's
// arithmetic (cx = (x1 + x2)/2, x1 = cx − 0.5·w, ...). The explicit
// conversions T(...) round each product, so that no multiply-add is fused
// (torch rounds each step).
func BoxConvert[T Float](kind BoxConversion, transpose bool, y, x []T) {
	for r := 0; r+4 <= len(x); r += 4 {
		a, b, c, d := x[r], x[r+1], x[r+2], x[r+3]
		var o [4]T
		switch {
		case kind == XYXYToXYWH && !transpose:
			o = [4]T{a, b, c - a, d - b}
		case kind == XYXYToXYWH:
			o = [4]T{a - c, b - d, c, d}
		case kind == XYWHToXYXY && !transpose:
			o = [4]T{a, b, a + c, b + d}
		case kind == XYWHToXYXY:
			o = [4]T{a + c, b + d, c, d}
		case kind == XYXYToCXCYWH && !transpose:
			o = [4]T{(a + c) / 2, (b + d) / 2, c - a, d - b}
		case kind == XYXYToCXCYWH:
			o = [4]T{T(a/2) - c, T(b/2) - d, T(a/2) + c, T(b/2) + d}
		case kind == CXCYWHToXYXY && !transpose:
			o = [4]T{a - T(0.5*c), b - T(0.5*d), a + T(0.5*c), b + T(0.5*d)}
		default: // CXCYWHToXYXY transposed
			o = [4]T{a + c, b + d, T(0.5*c) - T(0.5*a), T(0.5*d) - T(0.5*b)}
		}
		copy(y[r:r+4], o[:])
	}
}

// BoxesToRoIs sets rois [K, 5] to the box lists boxes (image i's [L_i, 4],
// K = Σ L_i) with their image index in column 0
// (torchvision.ops._utils.convert_boxes_to_roi_format): row r holds
// (i, x1, y1, x2, y2), images in order.
func BoxesToRoIs[T Float](rois []T, boxes [][]T) {
	r := 0
	for i, b := range boxes {
		for j := 0; j+4 <= len(b); j += 4 {
			rois[5*r] = T(i)
			copy(rois[5*r+1:5*r+5], b[j:j+4])
			r++
		}
	}
}

// RoIRows copies rows off..off+n, columns 1..4, of rois [K, 5] into boxes
// [n, 4]; with embed it does the transpose instead, copying boxes into
// those places of rois and leaving the rest of rois as it is.
func RoIRows[T Float](off, n int, embed bool, boxes, rois []T) {
	for j := 0; j < n; j++ {
		r := 5 * (off + j)
		if embed {
			copy(rois[r+1:r+5], boxes[4*j:4*j+4])
		} else {
			copy(boxes[4*j:4*j+4], rois[r+1:r+5])
		}
	}
}

// BoxCoords copies one axis' coordinates of rois [K, 5] into pairs [K, 2]:
// (y1, y2), columns 2 and 4, for dir 0; (x1, x2), columns 1 and 3, for
// dir 1. With embed it does the transpose instead, copying pairs into
// those columns of rois and leaving the rest of rois as it is.
func BoxCoords[T Float](dir int, embed bool, pairs, rois []T) {
	c0 := 2 - dir // y1 is column 2, x1 column 1; the second is two further
	for i := 0; 2*i < len(pairs); i++ {
		if embed {
			rois[5*i+c0], rois[5*i+c0+2] = pairs[2*i], pairs[2*i+1]
		} else {
			pairs[2*i], pairs[2*i+1] = rois[5*i+c0], rois[5*i+c0+2]
		}
	}
}
