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
