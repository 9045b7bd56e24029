package detection

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"
)

// DefaultBboxXformClip is torchvision's default bbox_xform_clip,
// log(1000/16): the largest width and height code BoxCoder.DecodeSingle
// exponentiates.
var DefaultBboxXformClip = math.Log(1000.0 / 16)

// BoxCoder is torchvision's det_utils.BoxCoder (RetinaNet, Faster R-CNN):
// boxes coded relative to reference boxes as (dx, dy, dw, dh) =
// (wx·Δcx/w, wy·Δcy/h, ww·log(w'/w), wh·log(h'/h)). Values on
// *tensor.Dense, float32 or float64, computed in the codes' dtype with
// torchvision's operation order.
type BoxCoder struct {
	// Weights is (wx, wy, ww, wh): (1, 1, 1, 1) for RetinaNet, (10, 10,
	// 5, 5) for Faster R-CNN's box head.
	Weights [4]float64
	// BboxXformClip caps dw/ww and dh/wh before exp when decoding; 0
	// stands for DefaultBboxXformClip (torchvision's default).
	BboxXformClip float64
}

// NewBoxCoder is torchvision's BoxCoder(weights) with the default
// bbox_xform_clip.
func NewBoxCoder(weights [4]float64) BoxCoder {
	return BoxCoder{Weights: weights, BboxXformClip: DefaultBboxXformClip}
}

// clip is the coder's bbox_xform_clip.
func (c BoxCoder) clip() float64 {
	if c.BboxXformClip == 0 {
		return DefaultBboxXformClip
	}
	return c.BboxXformClip
}

// checkWeights checks that the weights are finite and not zero.
func (c BoxCoder) checkWeights(opName string) error {
	for i, w := range c.Weights {
		if w == 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return fmt.Errorf("detection: %s: Weights[%d] = %v, want a finite non-zero weight", opName, i, w)
		}
	}
	if math.IsNaN(c.BboxXformClip) {
		return fmt.Errorf("detection: %s: BboxXformClip is NaN", opName)
	}
	return nil
}

// boxPair checks a [K, cols] tensor a and boxes [K, 4] of a's dtype.
func boxPair(opName, aName, aWant, bName string, a, b *tensor.Dense, cols int) (k, c int, err error) {
	sa, err := checkValue(opName, aName, aWant, a, -1, cols)
	if err != nil {
		return 0, 0, err
	}
	if cols < 0 && sa[1]%4 != 0 {
		return 0, 0, fmt.Errorf("detection: %s: %s must be %s with a multiple of 4 columns, got %v", opName, aName, aWant, sa)
	}
	if _, err := checkValue(opName, bName, "[K, 4]", b, sa[0], 4); err != nil {
		return 0, 0, fmt.Errorf("%w (K = %d from %s)", err, sa[0], aName)
	}
	if b.Dtype() != a.Dtype() {
		return 0, 0, fmt.Errorf("detection: %s: %s dtype %v differs from %s dtype %v", opName, bName, b.Dtype(), aName, a.Dtype())
	}
	return sa[0], sa[1], nil
}

// DecodeSingle is BoxCoder.decode_single(rel_codes, boxes): relCodes
// [K, 4·C] (C boxes per reference box, torchvision's multi-class layout;
// C = 1 for RetinaNet) decoded against the reference boxes [K, 4]
// (x1, y1, x2, y2) into boxes [K, 4·C] of relCodes' dtype. With w, h,
// cx, cy the reference width, height and centre, and dw, dh clamped above
// at BboxXformClip: cx' = dx/wx·w + cx, w' = exp(dw/ww)·w, and the box is
// cx' ∓ 0.5·w', cy' ∓ 0.5·h'. Errors: nil tensors, other shapes or
// dtypes (boxes must have relCodes' dtype), zero, NaN or infinite weights.
func (c BoxCoder) DecodeSingle(relCodes, boxes *tensor.Dense) (*tensor.Dense, error) {
	const op = "BoxCoder.DecodeSingle"
	if err := c.checkWeights(op); err != nil {
		return nil, err
	}
	k, cols, err := boxPair(op, "relCodes", "[K, 4·C]", "boxes", relCodes, boxes, -1)
	if err != nil {
		return nil, err
	}
	return byDtype(relCodes, boxes, k, cols,
		func(r, b []float32) []float32 { return decodeBoxes(c, r, b, k, cols) },
		func(r, b []float64) []float64 { return decodeBoxes(c, r, b, k, cols) }), nil
}

// byDtype is f32 or f64, by a's dtype, on the data of a and b (one dtype),
// as a [k, cols] tensor.
func byDtype(a, b *tensor.Dense, k, cols int, f32 func(a, b []float32) []float32, f64 func(a, b []float64) []float64) *tensor.Dense {
	if a.Dtype() == tensor.Float32 {
		return newValue(f32(valueData[float32](a), valueData[float32](b)), k, cols)
	}
	return newValue(f64(valueData[float64](a), valueData[float64](b)), k, cols)
}

// decodeBoxes is DecodeSingle on flat slices: codes [k, cols], boxes
// [k, 4]. Each product is rounded to T before a sum, as torch's separate
// kernels round.
func decodeBoxes[T floatType](c BoxCoder, codes, boxes []T, k, cols int) []T {
	out := make([]T, k*cols)
	wx, wy, ww, wh := T(c.Weights[0]), T(c.Weights[1]), T(c.Weights[2]), T(c.Weights[3])
	clip, half := T(c.clip()), T(0.5)
	for i := 0; i < k; i++ {
		b := boxes[4*i : 4*i+4]
		w, h := b[2]-b[0], b[3]-b[1]
		cx, cy := b[0]+T(half*w), b[1]+T(half*h)
		for j := 0; j < cols; j += 4 {
			r, o := codes[i*cols+j:][:4], out[i*cols+j:][:4]
			dx, dy, dw, dh := r[0]/wx, r[1]/wy, r[2]/ww, r[3]/wh
			if dw > clip {
				dw = clip
			}
			if dh > clip {
				dh = clip
			}
			pcx, pcy := T(dx*w)+cx, T(dy*h)+cy
			pw, ph := T(exp(dw))*w, T(exp(dh))*h
			hw, hh := T(half*pw), T(half*ph)
			o[0], o[1], o[2], o[3] = pcx-hw, pcy-hh, pcx+hw, pcy+hh
		}
	}
	return out
}

// exp is e^x rounded to T.
func exp[T floatType](x T) T { return T(math.Exp(float64(x))) }

// EncodeSingle is BoxCoder.encode_single(reference_boxes, proposals)
// (torchvision's encode_boxes): the codes [K, 4] of the boxes
// referenceBoxes [K, 4] (the targets, x1, y1, x2, y2) relative to
// proposals [K, 4] (the anchors), in their dtype: dx = wx·(cx − pcx)/pw,
// dy likewise, dw = ww·log(w/pw), dh = wh·log(h/ph). Errors: nil tensors,
// other shapes, differing dtypes, zero, NaN or infinite weights.
func (c BoxCoder) EncodeSingle(referenceBoxes, proposals *tensor.Dense) (*tensor.Dense, error) {
	const op = "BoxCoder.EncodeSingle"
	if err := c.checkWeights(op); err != nil {
		return nil, err
	}
	k, _, err := boxPair(op, "referenceBoxes", "[K, 4]", "proposals", referenceBoxes, proposals, 4)
	if err != nil {
		return nil, err
	}
	return byDtype(referenceBoxes, proposals, k, 4,
		func(r, p []float32) []float32 { return encodeBoxes(c, r, p, k) },
		func(r, p []float64) []float64 { return encodeBoxes(c, r, p, k) }), nil
}

// encodeBoxes is EncodeSingle on flat slices [k, 4].
func encodeBoxes[T floatType](c BoxCoder, ref, props []T, k int) []T {
	out := make([]T, 4*k)
	wx, wy, ww, wh := T(c.Weights[0]), T(c.Weights[1]), T(c.Weights[2]), T(c.Weights[3])
	half := T(0.5)
	for i := 0; i < k; i++ {
		p, g, o := props[4*i:4*i+4], ref[4*i:4*i+4], out[4*i:4*i+4]
		pw, ph := p[2]-p[0], p[3]-p[1]
		pcx, pcy := p[0]+T(half*pw), p[1]+T(half*ph)
		gw, gh := g[2]-g[0], g[3]-g[1]
		gcx, gcy := g[0]+T(half*gw), g[1]+T(half*gh)
		o[0] = T(wx*(gcx-pcx)) / pw
		o[1] = T(wy*(gcy-pcy)) / ph
		o[2] = ww * T(math.Log(float64(gw/pw)))
		o[3] = wh * T(math.Log(float64(gh/ph)))
	}
	return out
}

// BoxLinearCoder is torchvision's det_utils.BoxLinearCoder (FCOS): a box
// coded as its distances (l, t, r, b) from the reference box's centre to
// its four sides, divided by the reference width and height when
// NormalizeBySize (FCOS: true).
type BoxLinearCoder struct {
	NormalizeBySize bool
}

// Encode is BoxLinearCoder.encode(reference_boxes, proposals): the codes
// [K, 4] of proposals [K, 4] (x1, y1, x2, y2, the targets) relative to the
// centres of referenceBoxes [K, 4] (the anchors), in their dtype:
// (cx − x1, cy − y1, x2 − cx, y2 − cy), divided by (w, h, w, h) of the
// reference box when NormalizeBySize. Note the argument order is
// torchvision's, the reverse of BoxCoder.EncodeSingle's roles. Errors: nil
// tensors, other shapes, differing dtypes.
func (c BoxLinearCoder) Encode(referenceBoxes, proposals *tensor.Dense) (*tensor.Dense, error) {
	k, _, err := boxPair("BoxLinearCoder.Encode", "referenceBoxes", "[K, 4]", "proposals", referenceBoxes, proposals, 4)
	if err != nil {
		return nil, err
	}
	return byDtype(referenceBoxes, proposals, k, 4,
		func(r, p []float32) []float32 { return linearEncode(c, r, p, k) },
		func(r, p []float64) []float64 { return linearEncode(c, r, p, k) }), nil
}

// linearEncode is Encode on flat slices [k, 4].
func linearEncode[T floatType](c BoxLinearCoder, ref, props []T, k int) []T {
	out := make([]T, 4*k)
	half := T(0.5)
	for i := 0; i < k; i++ {
		r, p, o := ref[4*i:4*i+4], props[4*i:4*i+4], out[4*i:4*i+4]
		cx, cy := T(half*(r[0]+r[2])), T(half*(r[1]+r[3]))
		o[0], o[1], o[2], o[3] = cx-p[0], cy-p[1], p[2]-cx, p[3]-cy
		if c.NormalizeBySize {
			w, h := r[2]-r[0], r[3]-r[1]
			o[0], o[1], o[2], o[3] = o[0]/w, o[1]/h, o[2]/w, o[3]/h
		}
	}
	return out
}

// Decode is BoxLinearCoder.decode(rel_codes, boxes): relCodes [K, 4]
// (l, t, r, b) decoded against the reference boxes [K, 4] into boxes
// [K, 4] of relCodes' dtype: (cx − l, cy − t, cx + r, cy + b), the codes
// first multiplied by (w, h, w, h) when NormalizeBySize. Errors: nil
// tensors, other shapes, differing dtypes.
func (c BoxLinearCoder) Decode(relCodes, boxes *tensor.Dense) (*tensor.Dense, error) {
	k, _, err := boxPair("BoxLinearCoder.Decode", "relCodes", "[K, 4]", "boxes", relCodes, boxes, 4)
	if err != nil {
		return nil, err
	}
	return byDtype(relCodes, boxes, k, 4,
		func(r, b []float32) []float32 { return linearDecode(c, r, b, k) },
		func(r, b []float64) []float64 { return linearDecode(c, r, b, k) }), nil
}

// linearDecode is Decode on flat slices [k, 4].
func linearDecode[T floatType](c BoxLinearCoder, codes, boxes []T, k int) []T {
	out := make([]T, 4*k)
	half := T(0.5)
	for i := 0; i < k; i++ {
		b, r, o := boxes[4*i:4*i+4], codes[4*i:4*i+4], out[4*i:4*i+4]
		cx, cy := T(half*(b[0]+b[2])), T(half*(b[1]+b[3]))
		l, t, rr, bb := r[0], r[1], r[2], r[3]
		if c.NormalizeBySize {
			w, h := b[2]-b[0], b[3]-b[1]
			l, t, rr, bb = T(l*w), T(t*h), T(rr*w), T(bb*h)
		}
		o[0], o[1], o[2], o[3] = cx-l, cy-t, cx+rr, cy+bb
	}
	return out
}
