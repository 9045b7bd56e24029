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
