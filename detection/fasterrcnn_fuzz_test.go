package detection

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Fuzz targets of Faster R-CNN's value-side selections: arbitrary bytes
// decoded into small inputs (shapes, values with NaN, infinities and huge
// numbers, thresholds, sizes). Each call is either an error of the
// function, exactly when the decoded input is bad, or outputs that keep
// the functions' promises.

// noPanic runs f, failing t on a panic (with its stack) rather than
// ending the test binary, so that the other seeds and tests still run.
func noPanic(t *testing.T, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	f()
}

// fuzzBytes decodes a fuzzer's bytes; past their end it reads zeros.
type fuzzBytes []byte

func (d *fuzzBytes) byte() byte {
	if len(*d) == 0 {
		return 0
	}
	b := (*d)[0]
	*d = (*d)[1:]
	return b
}

// special is the value of the top bytes: NaN, ±Inf, ±1e30, float32's
// largest, a tiny value; ok false for the others.
func special(b byte) (float64, bool) {
	switch b {
	case 255:
		return math.NaN(), true
	case 254:
		return math.Inf(1), true
	case 253:
		return math.Inf(-1), true
	case 252:
		return 1e30, true
	case 251:
		return -1e30, true
	case 250:
		return math.MaxFloat32, true
	case 249:
		return 1e-30, true
	}
	return 0, false
}

// logit is a logit or delta: a special, else in [−8, 7.5] by 1/16.
func (d *fuzzBytes) logit() float64 {
	b := d.byte()
	if v, ok := special(b); ok {
		return v
	}
	return (float64(b) - 128) / 16
}

// coord is a box coordinate: a special, else in [−2, 60] by 1/4.
func (d *fuzzBytes) coord() float64 {
	b := d.byte()
	if v, ok := special(b); ok {
		return v
	}
	return float64(b)/4 - 2
}

// thresh is a threshold: NaN, ±Inf, −0.5, else in [0, 1.26] by 1/200.
func (d *fuzzBytes) thresh() float64 {
	switch b := d.byte(); b {
	case 255:
		return math.NaN()
	case 254:
		return math.Inf(1)
	case 253:
		return math.Inf(-1)
	case 252:
		return -0.5
	default:
		return float64(b) / 200
	}
}

// count is a count in [−1, 8] (−1 one time in ten).
func (d *fuzzBytes) count() int { return int(d.byte()%10) - 1 }

// size is an image side in [−1, 62] (−1 one time in 64).
func (d *fuzzBytes) size() int { return int(d.byte()%64) - 1 }

// values is n decoded values of f as a tensor of dt and shape.
func (d *fuzzBytes) values(dt tensor.Dtype, f func() float64, shape ...int) *tensor.Dense {
	n := 1
	for _, s := range shape {
		n *= s
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = f()
	}
	return denseOf(dt, v, shape...)
}

// dtypeOfByte is float32 for an odd b, float64 otherwise.
func dtypeOfByte(b byte) tensor.Dtype {
	if b&1 == 1 {
		return tensor.Float32
	}
	return tensor.Float64
}

// otherDtype is the float dtype that is not dt.
func otherDtype(dt tensor.Dtype) tensor.Dtype {
	if dt == tensor.Float32 {
		return tensor.Float64
	}
	return tensor.Float32
}

// fuzzFilterProposals decodes data into FilterProposals' inputs: 1 or 2
// images of sides in [−1, 62], 1 to 3 levels of 0 to 6 anchors, a dtype,
// the mode, RPNConfig's counts and thresholds, and one of four breakages
// (or none): a nil objectness level, deltas of 3 columns, anchors of the
// other dtype, no images.
func fuzzFilterProposals(t *testing.T, data []byte) {
	d := fuzzBytes(data)
	hdr := d.byte()
	dt, train, n := dtypeOfByte(hdr), hdr&2 != 0, 1+int(hdr>>2)%2
	breakage := int(hdr>>3) % 16 // 0..3 break the input, the rest not
	levels := 1 + int(d.byte())%3
	cfg := RPNConfig{PreNMSTopNTrain: d.count(), PreNMSTopNTest: d.count(), PostNMSTopNTrain: d.count(), PostNMSTopNTest: d.count(),
		NMSThresh: d.thresh(), ScoreThresh: d.thresh(), MinSize: 4 * d.thresh()}
	sizes := make([][2]int, n)
	for i := range sizes {
		sizes[i] = [2]int{d.size(), d.size()}
	}
	var obj, deltas, anchors []*tensor.Dense
	candidates := 0
	pre, _ := cfg.topN(train)
	for l := 0; l < levels; l++ {
		hwa := int(d.byte()) % 7
		obj = append(obj, d.values(dt, d.logit, n, hwa, 1))
		deltas = append(deltas, d.values(dt, d.logit, n, hwa, 4))
		anchors = append(anchors, d.values(dt, d.coord, hwa, 4))
		candidates += max(0, min(pre, hwa))
	}
	switch breakage {
	case 0:
		obj[levels-1] = nil
	case 1:
		deltas[0] = denseOf(dt, nil, n, deltas[0].Shape()[1], 3)
	case 2:
		anchors[levels-1] = denseOf(otherDtype(dt), f64s(anchors[levels-1]), anchors[levels-1].Shape()...)
	case 3:
		sizes = nil
	}
	bad := breakage < 4 || cfg.PreNMSTopNTrain < 0 || cfg.PreNMSTopNTest < 0 || cfg.PostNMSTopNTrain < 0 || cfg.PostNMSTopNTest < 0 ||
		!(cfg.NMSThresh >= 0) || math.IsNaN(cfg.ScoreThresh) || math.IsNaN(cfg.MinSize)
	for _, s := range sizes {
		bad = bad || s[0] < 0 || s[1] < 0
	}

	props, err := FilterProposals(cfg, obj, deltas, anchors, sizes, train)
	if errorAsExpected(t, "FilterProposals", err, bad, fmt.Sprintf("breakage %d, %+v, sizes %v, train %v", breakage, cfg, sizes, train)) {
		return
	}
	if len(props) != n {
		t.Fatalf("%d images' proposals for %d", len(props), n)
	}
	for i, p := range props {
		what := fmt.Sprintf("%v train=%v image %d", dt, train, i)
		if p.Boxes.Dtype() != dt || p.Scores.Dtype() != dt {
			t.Fatalf("%s: proposals of dtype %v and %v", what, p.Boxes.Dtype(), p.Scores.Dtype())
		}
		checkProposals(t, what, p, cfg, train, sizes[i], candidates)
		if levels == 1 {
			// One level: NMS kept no two boxes overlapping by more than
			// NMSThresh (IoU in float64 here, in the dtype there).
			b := f64s(p.Boxes)
			for j := 0; 4*j < len(b); j++ {
				for k := 0; k < j; k++ {
					if iou := boxIoU1(b[4*k:4*k+4], b[4*j:4*j+4]); iou > cfg.NMSThresh+1e-4 {
						t.Errorf("%s: proposals %d and %d overlap by IoU %v > NMSThresh %v", what, k, j, iou, cfg.NMSThresh)
					}
				}
			}
		}
	}
}

// FuzzFilterProposals: FilterProposals on any small input is an error
// exactly when the input is bad, else proposals inside the image, of
// scores in [ScoreThresh, 1] in decreasing order, sides >= MinSize, at
// most PostNMSTopN, never a panic.
func FuzzFilterProposals(f *testing.F) {
	// A good float64 input: 1 image 40×50, 1 level of 4 anchors.
	f.Add([]byte{32, 0, 5, 5, 5, 5, 140, 0, 1, 41, 51, 4, 160, 150, 140, 130, 128, 128, 128, 128, 130, 126, 132, 124, 128, 128, 140, 140, 120, 136, 128, 128, 40, 40, 200, 200, 88, 88, 248, 240, 128, 48, 208, 168, 8, 8, 72, 72})
	// float32, training, 2 images, 3 levels with NaN, infinities and
	// huge values.
	f.Add([]byte{39, 2, 8, 8, 6, 6, 100, 20, 10, 30, 30, 50, 50, 3, 255, 254, 140, 253, 252, 130, 128, 128, 128, 128, 255, 0, 0, 0, 252, 251, 250, 249, 128, 128, 128, 128, 130, 126, 254, 253, 128, 128, 140, 140, 8, 8, 48, 48, 255, 8, 40, 40, 40, 40, 254, 254, 2, 251, 150, 160, 250, 128, 128, 128, 128, 128, 128, 128, 128, 120, 136, 128, 128, 128, 128, 128, 128, 0, 0, 4, 44, 20, 20, 100, 120, 1, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 0, 0, 250, 250})
	// Bad: a nil objectness level; then no images.
	f.Add([]byte{0x00, 0, 5, 5, 5, 5, 140, 0, 1, 41, 51, 1, 128, 128, 128, 128, 128, 0, 0, 4, 4})
	f.Add([]byte{0x18, 0, 5, 5, 5, 5, 140, 0, 1, 41, 51, 1, 128, 128, 128, 128, 128, 0, 0, 4, 4})
	f.Fuzz(func(t *testing.T, data []byte) { noPanic(t, func() { fuzzFilterProposals(t, data) }) })
}

// fuzzFastRCNNPostprocess decodes data into FastRCNNPostprocessDetections'
// inputs: 1 or 2 images of sides in [−1, 62] with 0 to 4 proposals each,
// K in 0..4 classes, a dtype, RoIHeadsConfig's box weights (0 and NaN
// among them), thresholds and DetectionsPerImg, and one of four
// breakages (or none): nil classLogits, regression of 4K−4 columns,
// proposals of the other dtype, one image size too few.
func fuzzFastRCNNPostprocess(t *testing.T, data []byte) {
	d := fuzzBytes(data)
	hdr := d.byte()
	dt, n, k := dtypeOfByte(hdr), 1+int(hdr>>1)%2, int(hdr>>2)%5
	breakage := int(hdr>>5) + 8*int(d.byte()%2) // 0..3 break the input, the rest not
	var cfg RoIHeadsConfig
	for i := range cfg.BoxWeights {
		switch b := d.byte(); b {
		case 255:
			cfg.BoxWeights[i] = 0
		case 254:
			cfg.BoxWeights[i] = math.NaN()
		case 253:
			cfg.BoxWeights[i] = 1e-30 // 0 in float32
		default:
			cfg.BoxWeights[i] = 0.25 + float64(b)/16
		}
	}
	cfg.ScoreThresh, cfg.NMSThresh, cfg.DetectionsPerImg = d.thresh(), d.thresh(), d.count()
	sizes := make([][2]int, n)
	props := make([]*tensor.Dense, n)
	r := 0
	for i := range sizes {
		sizes[i] = [2]int{d.size(), d.size()}
		p := int(d.byte()) % 5
		props[i] = d.values(dt, d.coord, p, 4)
		r += p
	}
	logits := d.values(dt, d.logit, r, k)
	reg := d.values(dt, d.logit, r, 4*k)
	switch breakage {
	case 0:
		logits = nil
	case 1:
		reg = denseOf(dt, nil, r, 4*k+4)
	case 2:
		props[n-1] = denseOf(otherDtype(dt), f64s(props[n-1]), props[n-1].Shape()...)
	case 3:
		sizes = sizes[:n-1]
	}
	bad := breakage < 4 || math.IsNaN(cfg.ScoreThresh) || !(cfg.NMSThresh >= 0) || cfg.DetectionsPerImg < 0
	for _, w := range cfg.BoxWeights {
		bad = bad || w == 0 || math.IsNaN(w)
	}
	for _, s := range sizes {
		bad = bad || s[0] < 0 || s[1] < 0
	}

	dets, err := FastRCNNPostprocessDetections(cfg, logits, reg, props, sizes)
	if errorAsExpected(t, "FastRCNNPostprocessDetections", err, bad, fmt.Sprintf("breakage %d, %+v, K %d, sizes %v", breakage, cfg, k, sizes)) {
		return
	}
	if len(dets) != n {
		t.Fatalf("%d images' detections for %d", len(dets), n)
	}
	for i, det := range dets {
		what := fmt.Sprintf("%v K=%d image %d", dt, k, i)
		if det.Boxes.Dtype() != dt || det.Scores.Dtype() != dt {
			t.Fatalf("%s: detections of dtype %v and %v", what, det.Boxes.Dtype(), det.Scores.Dtype())
		}
		checkDetections(t, what, det, cfg, k, sizes[i], 0)
	}
}

// FuzzFastRCNNPostprocess: FastRCNNPostprocessDetections on any small
// input is an error exactly when the input is bad, else detections inside
// the image, of scores in (ScoreThresh, 1] in decreasing order, labels in
// 1..K−1, at most DetectionsPerImg, no two of a label overlapping by more
// than NMSThresh, never a panic.
func FuzzFastRCNNPostprocess(f *testing.F) {
	// A good float64 input: 1 image 40×50 of 2 proposals, 3 classes.
	f.Add([]byte{172, 0, 150, 150, 70, 70, 10, 100, 9, 41, 51, 2, 40, 40, 200, 200, 88, 88, 168, 208, 128, 170, 140, 128, 120, 180, 128, 128, 128, 128, 130, 126, 132, 124, 128, 128, 140, 140, 120, 136, 128, 128, 128, 128, 128, 128, 140, 120, 128, 136})
	// float32, 2 images of 3 and 2 proposals, 4 classes, NaN,
	// infinities and huge values among logits, regression and boxes.
	f.Add([]byte{139, 1, 150, 150, 70, 70, 0, 200, 5, 30, 30, 3, 8, 8, 48, 48, 255, 0, 40, 40, 0, 0, 254, 254, 20, 10, 2, 0, 0, 40, 40, 20, 20, 60, 80, 128, 170, 140, 140, 128, 254, 160, 120, 253, 253, 253, 253, 128, 252, 251, 128, 128, 150, 150, 150, 128, 128, 128, 128, 130, 126, 132, 124, 255, 128, 128, 128, 128, 128, 252, 128, 128, 128, 128, 128, 130, 126, 132, 124, 254, 128, 128, 128, 128, 128, 251, 128, 128, 128, 128, 128, 130, 126, 132, 124, 253, 128, 128, 128, 128, 128, 250, 128, 128, 128, 128, 128, 130, 126, 132, 124, 252, 128, 128, 128, 128, 128, 249, 128, 128, 128, 128, 128, 130, 126, 132, 124, 251, 128, 128, 128, 128, 128, 255, 128})
	// Bad: zero box weight; nil classLogits.
	f.Add([]byte{0x88, 0, 255, 150, 70, 70, 10, 100, 20, 41, 51, 1, 8, 8, 48, 48, 128, 170, 140})
	f.Add([]byte{0x08, 0, 150, 150, 70, 70, 10, 100, 20, 41, 51, 1, 8, 8, 48, 48, 128, 170, 140})
	f.Fuzz(func(t *testing.T, data []byte) { noPanic(t, func() { fuzzFastRCNNPostprocess(t, data) }) })
}

// errorAsExpected fails t unless err is an error of function fn exactly
// when the input is bad (what describes it); it reports whether there was
// an error (nothing more to check).
func errorAsExpected(t *testing.T, fn string, err error, bad bool, what string) bool {
	t.Helper()
	switch {
	case err != nil && !strings.HasPrefix(err.Error(), "detection: "+fn+": "):
		t.Fatalf("error without the function's name: %v", err)
	case err != nil && !bad:
		t.Fatalf("good input (%s): error %v", what, err)
	case err == nil && bad:
		t.Fatalf("bad input (%s): no error", what)
	}
	return err != nil
}

// fuzzConvFCHead decodes data into a FastRCNNConvFCHead (InputSize
// entries in [−1, 4], up to two conv and two linear layers of widths in
// [−1, 3], BatchNorm or not), a dtype, x's shape (the head's, or one
// entry off), train and a row mask of 0s, 1s or a 0.5: Init and Forward
// must fail exactly on bad sizes, a misshapen x or a training norm of one
// value per channel, with the head's name;
// otherwise the graph runs (failing only on the 0.5 mask entry) and its
// result, of [R, the head's width], is finite where x is.
func fuzzConvFCHead(t *testing.T, data []byte) {
	d := fuzzBytes(data)
	hdr := d.byte()
	dt := dtypeOfByte(hdr)
	h := FastRCNNConvFCHead{BatchNorm: hdr&2 != 0}
	train := hdr&4 != 0
	for i := range h.InputSize {
		h.InputSize[i] = int(d.byte()%6) - 1
	}
	layers := func() []int {
		out := make([]int, d.byte()%3)
		for i := range out {
			out[i] = int(d.byte()%5) - 1
		}
		return out
	}
	h.ConvLayers, h.FCLayers = layers(), layers()
	bad := false
	for _, v := range h.InputSize {
		bad = bad || v < 1
	}
	for _, v := range append(slices.Clone(h.ConvLayers), h.FCLayers...) {
		bad = bad || v < 1
	}
	w, err := NewWeights(dt)
	if err != nil {
		t.Fatal(err)
	}
	err = h.Init(w, "h", rand.New(rand.NewPCG(1, uint64(hdr))))
	if errorAsExpected(t, "FastRCNNConvFCHead.Init", err, bad, fmt.Sprintf("%+v", h)) {
		return
	}
	r := 1 + int(d.byte()%3)
	shape := []int{r, h.InputSize[0], h.InputSize[1], h.InputSize[2]}
	off := int(d.byte() % 8) // 0..3: one entry of x's shape off by one
	if off < 4 && off > 0 {
		shape[off]++
	}
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(shape...), gorgonia.WithName("x"),
		gorgonia.WithValue(d.values(dt, d.logit, shape...)))
	var mask *gorgonia.Node
	half := false
	if train && d.byte()%2 == 1 {
		m := make([]float64, r)
		for i := range m {
			switch d.byte() % 5 {
			case 0, 1:
				m[i] = 1
			case 4:
				m[i], half = 0.5, true
			}
		}
		mask = gorgonia.NewTensor(g, dt, 1, gorgonia.WithShape(r), gorgonia.WithName("mask"), gorgonia.WithValue(denseOf(dt, m, r)))
	}
	y, err := h.forward(w, "h", x, train, mask)
	misshapen := off > 0 && off < 4
	// (torch's BatchNorm2d refuses one value per channel in training.)
	one := train && mask == nil && h.BatchNorm && len(h.ConvLayers) > 0 && r*h.InputSize[1]*h.InputSize[2] == 1
	if errorAsExpected(t, "FastRCNNConvFCHead", err, misshapen || one, fmt.Sprint(shape, train, mask != nil)) {
		return
	}
	if want := (tensor.Shape{r, h.outChannels()}); !y.Shape().Eq(want) {
		t.Fatalf("result %v, want %v", y.Shape(), want)
	}
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	err = ad.RunAll(vm)
	switch {
	case half && h.BatchNorm && len(h.ConvLayers) > 0:
		if err == nil || !strings.Contains(err.Error(), "want 0 or 1") {
			t.Fatalf("mask with 0.5: %v", err)
		}
		return
	case err != nil:
		t.Fatal(err)
	}
	for _, v := range graphtest.Floats(x.Value()) {
		if !(math.Abs(v) <= 8) {
			return // (d.logit's specials: NaN, infinities, huge values)
		}
	}
	for i, v := range graphtest.Floats(y.Value()) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("finite x, result[%d] = %v", i, v)
		}
	}
}

// FuzzFastRCNNConvFCHead: see fuzzConvFCHead.
func FuzzFastRCNNConvFCHead(f *testing.F) {
	// v2's structure in small: float64, BatchNorm, train, 2 convs, 1
	// linear layer, 3 rows, a mask of 1, 0, 1.
	f.Add([]byte{6, 3, 4, 4, 2, 3, 3, 1, 4, 2, 4, 0, 1, 1, 2, 1})
	// float32 eval, no norms, no layers; then x with a channel too many.
	f.Add([]byte{1, 2, 2, 2, 0, 0, 1, 0})
	f.Add([]byte{2, 2, 3, 3, 1, 2, 1, 3, 1, 1})
	// A zero InputSize entry; a 0.5 in the mask.
	f.Add([]byte{2, 0, 3, 3, 1, 2, 0})
	f.Add([]byte{7, 2, 3, 3, 1, 2, 0, 2, 0, 1, 4, 1})
	f.Fuzz(func(t *testing.T, data []byte) { noPanic(t, func() { fuzzConvFCHead(t, data) }) })
}
