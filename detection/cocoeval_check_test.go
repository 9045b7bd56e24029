package detection

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/tensor"
)

// cocoDets is one image's detections from x1, y1, x2, y2 rows.
func cocoDets(boxes [][4]float64, scores []float64, labels []int) Detections {
	return Detections{Boxes: boxTensor(boxes), Scores: golden.Tensor("float64", []int{len(scores)}, scores), Labels: labels}
}

// cocoGT is one image's ground truth from x1, y1, x2, y2 rows.
func cocoGT(boxes [][4]float64, labels []int, crowd []bool) GroundTruth {
	return GroundTruth{Boxes: boxTensor(boxes), Labels: labels, IsCrowd: crowd}
}

func boxTensor(boxes [][4]float64) *tensor.Dense {
	var b []float64
	for _, r := range boxes {
		b = append(b, r[:]...)
	}
	return golden.Tensor("float64", []int{len(boxes), 4}, b)
}

// oneMinus is pycocotools' precision of a first true positive,
// 1/(1 + np.spacing(1)) = 1 − 2⁻⁵².
const oneMinus = 1 - 0x1p-52

// TestEvaluateHand checks small cases worked out by hand. "≈" values are
// within 1e-15: a true positive's precision is 1/(1 + 2⁻⁵²) in COCOeval.
func TestEvaluateHand(t *testing.T) {
	sq := func(x, y, s float64) [4]float64 { return [4]float64{x, y, x + s, y + s} }
	medium := sq(10, 10, 50) // area 2500: medium
	type want struct {
		i    int
		v    float64
		near bool // within 1e-15 rather than ==
	}
	cases := []struct {
		name string
		dets []Detections
		gts  []GroundTruth
		want []want
	}{
		{"one perfect detection", []Detections{cocoDets([][4]float64{medium}, []float64{0.9}, []int{3})},
			[]GroundTruth{cocoGT([][4]float64{medium}, []int{3}, nil)},
			[]want{{0, 1, true}, {1, 1, true}, {2, 1, true}, {3, -1, false}, {4, 1, true}, {5, -1, false},
				{6, 1, false}, {7, 1, false}, {8, 1, false}, {9, -1, false}, {10, 1, false}, {11, -1, false}}},
		{"IoU 0.72 passes 5 of 10 thresholds", []Detections{cocoDets([][4]float64{{0, 0, 100, 72}}, []float64{0.5}, []int{0})},
			[]GroundTruth{cocoGT([][4]float64{{0, 0, 100, 100}}, []int{0}, nil)},
			[]want{{0, 0.5, true}, {1, 1, true}, {2, 0, false}, {5, 0.5, true}, {8, 0.5, false}}},
		{"a false positive first", []Detections{cocoDets([][4]float64{sq(200, 200, 50), medium}, []float64{0.9, 0.8}, []int{1, 1})},
			[]GroundTruth{cocoGT([][4]float64{medium}, []int{1}, nil)},
			[]want{{0, 0.5, false}, {1, 0.5, false}, {6, 0, false}, {7, 1, false}}},
		{"crowd only: nothing to average", []Detections{cocoDets([][4]float64{sq(20, 20, 10)}, []float64{0.9}, []int{0})},
			[]GroundTruth{cocoGT([][4]float64{sq(0, 0, 100)}, []int{0}, []bool{true})},
			[]want{{0, -1, false}, {1, -1, false}, {6, -1, false}, {8, -1, false}}},
		{"detections on a crowd region are ignored", []Detections{
			cocoDets([][4]float64{sq(20, 20, 10), sq(25, 25, 10), medium}, []float64{0.95, 0.9, 0.8}, []int{0, 0, 0})},
			[]GroundTruth{cocoGT([][4]float64{sq(0, 0, 100), medium}, []int{0, 0}, []bool{true, false})},
			[]want{{0, 1, true}, {1, 1, true}, {8, 1, false}}},
		{"no detections", []Detections{{}}, []GroundTruth{cocoGT([][4]float64{medium}, []int{0}, nil)},
			[]want{{0, 0, false}, {1, 0, false}, {8, 0, false}}},
		{"no ground truth", []Detections{cocoDets([][4]float64{medium}, []float64{0.9}, []int{0})}, []GroundTruth{{}},
			[]want{{0, -1, false}, {8, -1, false}}},
		{"maxDets 1 finds one of two", []Detections{cocoDets([][4]float64{medium, sq(100, 100, 50)}, []float64{0.9, 0.8}, []int{0, 0})},
			[]GroundTruth{cocoGT([][4]float64{medium, sq(100, 100, 50)}, []int{0, 0}, nil)},
			[]want{{0, 1, true}, {6, 0.5, false}, {7, 1, false}}},
		{"wrong label", []Detections{cocoDets([][4]float64{medium}, []float64{0.9}, []int{1})},
			[]GroundTruth{cocoGT([][4]float64{medium}, []int{0}, nil)},
			[]want{{0, 0, false}, {8, 0, false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := Evaluate(c.dets, c.gts)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				got := e.Stats[w.i]
				if w.near && math.Abs(got-w.v) > 1e-15 || !w.near && got != w.v {
					t.Errorf("Stats[%d] = %v, want %v", w.i, got, w.v)
				}
			}
		})
	}
}

// TestEvaluateEmpty: no images, or images with nothing, give −1 stats and
// arrays with no categories, as COCOeval does.
func TestEvaluateEmpty(t *testing.T) {
	for _, n := range []int{0, 3} {
		e, err := Evaluate(make([]Detections, n), make([]GroundTruth, n))
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range e.Stats {
			if s != -1 {
				t.Errorf("%d images: Stats[%d] = %v, want -1", n, i, s)
			}
		}
		if got := e.Shape(); got != [5]int{10, 101, 0, 4, 3} || len(e.Precision) != 0 || len(e.Recall) != 0 {
			t.Errorf("Shape %v, %d precision and %d recall values", got, len(e.Precision), len(e.Recall))
		}
	}
	e, err := Evaluate([]Detections{{}}, []GroundTruth{{}}, WithCatIDs(4, 2))
	if err != nil {
		t.Fatal(err)
	}
	if p := e.Precision; len(p) != 10*101*2*4*3 || p[0] != -1 || e.Params.CatIDs[0] != 2 {
		t.Errorf("precision of %d values, first %v; CatIDs %v", len(p), p[0], e.Params.CatIDs)
	}
}

// TestEvaluateOptions checks that a nil COCOOption changes nothing and
// that WithCatIDs() with no ids evaluates no category (pycocotools'
// params.catIds = []: every number −1), not the ground truth's labels.
func TestEvaluateOptions(t *testing.T) {
	b := [][4]float64{{10, 10, 60, 60}}
	dets, gts := []Detections{cocoDets(b, []float64{1}, []int{0})}, []GroundTruth{cocoGT(b, []int{0}, nil)}
	e, err := Evaluate(dets, gts, nil, WithUseCats(true), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 - 0x1p-52; e.Stats[0] != want {
		t.Errorf("with nil options: AP %v, want %v", e.Stats[0], want)
	}
	if e, err = Evaluate(dets, gts, WithCatIDs()); err != nil {
		t.Fatal(err)
	}
	for i, s := range e.Stats {
		if s != -1 {
			t.Errorf("WithCatIDs(): Stats[%d] = %v, want -1", i, s)
		}
	}
	if k := e.Shape()[2]; k != 0 {
		t.Errorf("WithCatIDs(): %d categories, want 0", k)
	}
}

// TestEvaluateString checks summarize's printed lines.
func TestEvaluateString(t *testing.T) {
	b := [][4]float64{{10, 10, 60, 60}}
	e, err := Evaluate([]Detections{cocoDets(b, []float64{1}, []int{0})}, []GroundTruth{cocoGT(b, []int{0}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if p := e.Precision[0]; p != oneMinus {
		t.Errorf("precision of a true positive %v, want 1/(1 + 2⁻⁵²) = %v", p, oneMinus)
	}
	lines := strings.Split(e.String(), "\n")
	for i, want := range map[int]string{
		0:  " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 1.000",
		1:  " Average Precision  (AP) @[ IoU=0.50      | area=   all | maxDets=100 ] = 1.000",
		3:  " Average Precision  (AP) @[ IoU=0.50:0.95 | area= small | maxDets=100 ] = -1.000",
		6:  " Average Recall     (AR) @[ IoU=0.50:0.95 | area=   all | maxDets=  1 ] = 1.000",
		11: " Average Recall     (AR) @[ IoU=0.50:0.95 | area= large | maxDets=100 ] = -1.000",
	} {
		if lines[i] != want {
			t.Errorf("line %d\n%q, want\n%q", i, lines[i], want)
		}
	}
}

// TestEvaluateBadInput: each bad input is an error naming it.
func TestEvaluateBadInput(t *testing.T) {
	box := [][4]float64{{0, 0, 10, 10}}
	good := func() ([]Detections, []GroundTruth) {
		return []Detections{cocoDets(box, []float64{0.5}, []int{1})}, []GroundTruth{cocoGT(box, []int{1}, nil)}
	}
	cases := []struct {
		name, want string
		edit       func(d []Detections, g []GroundTruth) ([]Detections, []GroundTruth)
		opts       []COCOOption
	}{
		{"lengths", "1 images of detections and 2", func(d []Detections, g []GroundTruth) ([]Detections, []GroundTruth) {
			return d, append(g, GroundTruth{})
		}, nil},
		{"boxes shape", "detections[0].Boxes must be [D, 4]", func(d []Detections, g []GroundTruth) ([]Detections, []GroundTruth) {
			d[0].Boxes = golden.Tensor("float64", []int{1, 5}, make([]float64, 5))
			return d, g
		}, nil},
		{"scores length", "detections[0].Scores must be [D]", func(d []Detections, g []GroundTruth) ([]Detections, []GroundTruth) {
			d[0].Scores = golden.Tensor("float64", []int{2}, []float64{1, 2})
			return d, g
		}, nil},
		{"nil boxes", "groundTruth[0].Boxes is nil", func(d []Detections, g []GroundTruth) ([]Detections, []GroundTruth) {
			g[0].Boxes = nil
			return d, g
		}, nil},
		{"int boxes", "dtype int", func(d []Detections, g []GroundTruth) ([]Detections, []GroundTruth) {
			g[0].Boxes = tensor.New(tensor.WithShape(1, 4), tensor.WithBacking([]int{0, 0, 1, 1}))
			return d, g
		}, nil},
		{"NaN box", "detections[0].Boxes[0] = [NaN 0 10 10] is not finite", func(d []Detections, g []GroundTruth) ([]Detections, []GroundTruth) {
			d[0] = cocoDets([][4]float64{{math.NaN(), 0, 10, 10}}, []float64{0.5}, []int{1})
			return d, g
		}, nil},
		{"Inf score", "detections[0].Scores[0] is +Inf", func(d []Detections, g []GroundTruth) ([]Detections, []GroundTruth) {
			d[0] = cocoDets(box, []float64{math.Inf(1)}, []int{1})
			return d, g
		}, nil},
		{"x2 < x1", "groundTruth[0].Boxes[0] = [5 0 4 10] has x2 < x1", func(d []Detections, g []GroundTruth) ([]Detections, []GroundTruth) {
			g[0] = cocoGT([][4]float64{{5, 0, 4, 10}}, []int{1}, nil)
			return d, g
		}, nil},
		{"y2 < y1", "y2 < y1", func(d []Detections, g []GroundTruth) ([]Detections, []GroundTruth) {
			d[0] = cocoDets([][4]float64{{0, 5, 10, 4}}, []float64{0.5}, []int{1})
			return d, g
		}, nil},
		{"negative label", "detections[0].Labels[0] = -1 is negative", func(d []Detections, g []GroundTruth) ([]Detections, []GroundTruth) {
			d[0].Labels = []int{-1}
			return d, g
		}, nil},
		{"IsCrowd length", "groundTruth[0].IsCrowd has 2 values for 1 labels", func(d []Detections, g []GroundTruth) ([]Detections, []GroundTruth) {
			g[0].IsCrowd = []bool{true, false}
			return d, g
		}, nil},
		{"NaN area", "groundTruth[0].Area[0] is NaN", func(d []Detections, g []GroundTruth) ([]Detections, []GroundTruth) {
			g[0].Area = []float64{math.NaN()}
			return d, g
		}, nil},
		{"two maxDets", "MaxDets [1 100]", nil, []COCOOption{func(p *COCOParams) { p.MaxDets = []int{100, 1} }}},
		{"repeated maxDets", "repeats", nil, []COCOOption{func(p *COCOParams) { p.MaxDets = []int{1, 10, 10} }}},
		{"IoU threshold", "threshold 1.5 outside [0, 1]", nil, []COCOOption{func(p *COCOParams) { p.IoUThrs = []float64{0.5, 1.5} }}},
		{"area labels", "4 AreaRng and 3 AreaRngLbl", nil, []COCOOption{func(p *COCOParams) { p.AreaRngLbl = p.AreaRngLbl[:3] }}},
		{"pooled repeats", "CatIDs [1 1] repeats 1", nil, []COCOOption{WithUseCats(false), WithCatIDs(1, 1)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, g := good()
			if c.edit != nil {
				d, g = c.edit(d, g)
			}
			_, err := Evaluate(d, g, c.opts...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	if d, g := good(); true {
		if _, err := Evaluate(d, g); err != nil {
			t.Errorf("good input: %v", err)
		}
	}
}

// FuzzEvaluate: any boxes, scores and labels give an error or stats,
// precision and recall in [−1, 1], never a panic.
func FuzzEvaluate(f *testing.F) {
	f.Add([]byte{0, 10, 10, 40, 40, 200, 1, 0, 12, 9, 44, 41, 100, 1, 1, 0, 0, 255, 255, 3})
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var dets []Detections
		var gts []GroundTruth
		for len(data) >= 7 && len(dets) < 4 {
			n := int(data[0] % 4)
			data = data[1:]
			var db, gb, ds []float64
			var dl, gl []int
			var crowd []bool
			for j := 0; j < n && len(data) >= 6; j++ {
				b := []float64{float64(data[0]), float64(data[1]), float64(data[0]) + float64(data[2]), float64(data[1]) + float64(data[3])}
				gb, gl, crowd = append(gb, b...), append(gl, int(data[5]%3)), append(crowd, data[4] < 20)
				b[0] += float64(data[4]%16) - 8
				db, ds, dl = append(db, b...), append(ds, float64(data[4])/255), append(dl, int(data[5]/85))
				data = data[6:]
			}
			dets = append(dets, Detections{Boxes: golden.Tensor("float64", []int{len(ds), 4}, db), Scores: golden.Tensor("float64", []int{len(ds)}, ds), Labels: dl})
			gts = append(gts, GroundTruth{Boxes: golden.Tensor("float64", []int{len(gl), 4}, gb), Labels: gl, IsCrowd: crowd})
		}
		e, err := Evaluate(dets, gts)
		if err != nil {
			return
		}
		for _, s := range [][]float64{e.Stats[:], e.Precision, e.Recall} {
			for _, v := range s {
				if !(v == -1 || v >= 0 && v <= 1) {
					t.Fatalf("value %v outside {-1} ∪ [0, 1]", v)
				}
			}
		}
	})
}

// cocoBenchImages is n images of dets detections and about gt ground-truth
// boxes each, labels in [0, classes).
func cocoBenchImages(n, dets, gt, classes int) ([]Detections, []GroundTruth) {
	r := rand.New(rand.NewPCG(1, 2))
	box := func() [4]float64 {
		x, y, s := r.Float64()*500, r.Float64()*500, 4+r.Float64()*200
		return [4]float64{x, y, x + s, y + s*(0.5+r.Float64())}
	}
	ds, gs := make([]Detections, n), make([]GroundTruth, n)
	for i := range ds {
		var gb [][4]float64
		var gl []int
		for j := 0; j < 1+r.IntN(2*gt); j++ {
			gb, gl = append(gb, box()), append(gl, r.IntN(classes))
		}
		var db [][4]float64
		var sc []float64
		var dl []int
		for j := 0; j < dets; j++ {
			b, l := box(), r.IntN(classes)
			if k := r.IntN(2 * len(gb)); k < len(gb) {
				b, l = gb[k], gl[k]
				b[0] += r.Float64() * 4
			}
			db, sc, dl = append(db, b), append(sc, r.Float64()), append(dl, l)
		}
		ds[i], gs[i] = cocoDets(db, sc, dl), cocoGT(gb, gl, nil)
	}
	return ds, gs
}

// BenchmarkEvaluate is COCO val-sized work: 500 images of 100 detections
// and about 7 ground-truth boxes, 80 classes.
func BenchmarkEvaluate(b *testing.B) {
	ds, gs := cocoBenchImages(500, 100, 7, 80)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Evaluate(ds, gs); err != nil {
			b.Fatal(err)
		}
	}
}
