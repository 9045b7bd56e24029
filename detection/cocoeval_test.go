package detection

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"
	"testing"

	"github.com/gops-dev/gops/internal/golden"
)

// cocoGolden is testdata/detection/coco_eval.json.gz
// (scripts/gen_coco_eval.py, from scripts/coco_eval_ref.py).
type cocoGolden struct {
	IoUThrs []float64  `json:"iou_thrs"`
	RecThrs []float64  `json:"rec_thrs"`
	Cases   []cocoCase `json:"cases"`
}

type cocoCase struct {
	Name            string    `json:"name"`
	Seed            uint64    `json:"seed"`
	Images          int       `json:"images"`
	Classes         int       `json:"classes"`
	MaxGT           int       `json:"max_gt"`
	MaxDet          int       `json:"max_det"`
	Size            float64   `json:"size"`
	ScoreLevels     float64   `json:"score_levels"`
	Float32         bool      `json:"float32"`
	UseCats         *bool     `json:"use_cats"`
	CatIDs          []int     `json:"cat_ids"`
	MaxDets         []int     `json:"max_dets"`
	Draws           int       `json:"draws"`
	Dets            int       `json:"dets"`
	Stats           []float64 `json:"stats"`
	CategoryAP      []float64 `json:"category_ap"`
	Recall          []float64 `json:"recall"`
	PrecisionShape  []int     `json:"precision_shape"`
	PrecisionSHA256 string    `json:"precision_sha256"`
	ScoresSHA256    string    `json:"scores_sha256"`
	Precision       []float64 `json:"precision"`
}

// boxSide is the script's box_side: a side in pixels, tiny/small, medium
// or large by kind in thirds.
func boxSide(kind, s float64) float64 {
	switch {
	case kind < 1.0/3:
		return 1 + float64(s*30)
	case kind < 2.0/3:
		return 32 + float64(s*64)
	}
	return 96 + float64(s*160)
}

// floorInt is ⌊x⌋ capped at hi.
func floorInt(x float64, hi int) int { return min(int(math.Floor(x)), hi) }

// cocoImages is the script's random_images: the case's detections and
// ground truth from uniforms(seed) read in order, and how many were read.
func cocoImages(c *cocoCase) ([]Detections, []GroundTruth, int) {
	u := uniforms(c.Seed, c.Draws)
	pos := 0
	next := func(n int) []float64 { pos += n; return u[pos-n : pos] }
	k, w := c.Classes, c.Size
	var dets []Detections
	var gts []GroundTruth
	for i := 0; i < c.Images; i++ {
		v := next(4)
		ng := 0
		if v[0] >= 0.15 {
			ng = floorInt(v[1]*float64(c.MaxGT+1), c.MaxGT)
		}
		var gt GroundTruth
		var gb []float64
		area := make([]float64, ng)
		for j := 0; j < ng; j++ {
			g := next(8)
			bw := boxSide(g[0], g[1])
			bh := float64(bw * (0.5 + g[2]))
			x1, y1 := float64(g[3]*w), float64(g[4]*w)
			gb = append(gb, x1, y1, x1+bw, y1+bh)
			gt.Labels = append(gt.Labels, floorInt(g[5]*float64(k), k-1))
			gt.IsCrowd = append(gt.IsCrowd, g[6] < 0.08)
			area[j] = float64(float64(bw*bh) * (0.5 + float64(0.5*g[7])))
		}
		if v[2] < 0.3 {
			gt.Area = area
		}
		r := next(1)[0]
		nd := 0
		if v[3] >= 0.15 {
			nd = int(math.Floor(r * float64(c.MaxDet+1)))
		}
		if i%7 == 3 {
			nd += 101
		}
		var db, ds []float64
		var dl []int
		for d := 0; d < nd; d++ {
			e := next(9)
			if d > 0 && e[0] < 0.05 {
				db = append(db, db[len(db)-4:]...)
				ds = append(ds, ds[len(ds)-1])
				dl = append(dl, dl[len(dl)-1])
				continue
			}
			var x1, y1, bw, bh float64
			var lbl int
			if ng > 0 && e[1] < 0.6 {
				g := floorInt(e[2]*float64(ng), ng-1)
				b := gb[4*g : 4*g+4]
				gw, gh := b[2]-b[0], b[3]-b[1]
				x1 = b[0] + float64(float64((e[3]-0.5)*0.2)*gw)
				y1 = b[1] + float64(float64((e[4]-0.5)*0.2)*gh)
				bw, bh = float64(gw*(0.85+float64(0.3*e[5]))), float64(gh*(0.85+float64(0.3*e[6])))
				lbl = gt.Labels[g]
				if e[7] >= 0.9 {
					lbl = floorInt(float64(float64((e[7]-0.9)*10)*float64(k)), k-1)
				}
			} else {
				bw = boxSide(e[3], e[4])
				bh = float64(bw * (0.5 + e[5]))
				x1, y1 = float64(e[6]*w), float64(e[2]*w)
				lbl = floorInt(e[7]*float64(k), k-1)
			}
			s := e[8]
			if c.ScoreLevels != 0 {
				s = math.Floor(float64(s*c.ScoreLevels)) / c.ScoreLevels
			}
			db = append(db, x1, y1, x1+bw, y1+bh)
			ds = append(ds, s)
			dl = append(dl, lbl)
		}
		dtype := "float64"
		if c.Float32 {
			dtype = "float32"
		}
		dets = append(dets, Detections{Boxes: golden.Tensor(dtype, []int{nd, 4}, db), Scores: golden.Tensor(dtype, []int{nd}, ds), Labels: dl})
		gt.Boxes = golden.Tensor(dtype, []int{ng, 4}, gb)
		gts = append(gts, gt)
	}
	return dets, gts, pos
}

// sha256Hex is the SHA-256 of x as little-endian float64s.
func sha256Hex(x []float64) string {
	b := make([]byte, 8*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// equalBits reports the first index where got and want differ as
// float64 values (== : the reference's digits, every one), or −1.
func equalBits(got, want []float64) int {
	if len(got) != len(want) {
		return 0
	}
	for i := range got {
		if got[i] != want[i] {
			return i
		}
	}
	return -1
}

// TestEvaluateReference compares Evaluate with the numpy mirror of
// pycocotools' COCOeval on random detection sets: the 12 stats, the
// per-category AP and the recall array with ==, the precision and scores
// arrays by SHA-256 of their bits (and one case's precision with ==).
func TestEvaluateReference(t *testing.T) {
	var doc cocoGolden
	golden.Decode(t, "../testdata/detection/coco_eval.json.gz", &doc)
	if len(doc.Cases) < 5 {
		t.Fatalf("%d cases", len(doc.Cases))
	}
	def := DefaultCOCOParams()
	if i := equalBits(def.IoUThrs, doc.IoUThrs); i >= 0 {
		t.Errorf("IoUThrs %v, numpy's linspace %v", def.IoUThrs, doc.IoUThrs)
	}
	if i := equalBits(def.RecThrs, doc.RecThrs); i >= 0 {
		t.Errorf("RecThrs[%d] differs from numpy's linspace", i)
	}
	fullPrecision := 0
	for _, c := range doc.Cases {
		t.Run(c.Name, func(t *testing.T) {
			dets, gts, draws := cocoImages(&c)
			n := 0
			for _, d := range dets {
				n += len(d.Labels)
			}
			if draws != c.Draws || n != c.Dets {
				t.Fatalf("generator read %d uniforms and made %d detections, the script %d and %d", draws, n, c.Draws, c.Dets)
			}
			var opts []COCOOption
			if c.UseCats != nil {
				opts = append(opts, WithUseCats(*c.UseCats))
			}
			if c.CatIDs != nil {
				opts = append(opts, WithCatIDs(c.CatIDs...))
			}
			if c.MaxDets != nil {
				opts = append(opts, func(p *COCOParams) { p.MaxDets = c.MaxDets })
			}
			e, err := Evaluate(dets, gts, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if i := equalBits(e.Stats[:], c.Stats); i >= 0 {
				t.Errorf("Stats %v\nwant  %v", e.Stats, c.Stats)
			}
			if got := e.CategoryAP(); equalBits(got, c.CategoryAP) >= 0 {
				t.Errorf("CategoryAP %v\nwant       %v", got, c.CategoryAP)
			}
			if i := equalBits(e.Recall, c.Recall); i >= 0 {
				t.Errorf("Recall differs at %d", i)
			}
			if sh := e.Shape(); !slices.Equal(sh[:], c.PrecisionShape) || len(e.Precision) != sh[0]*sh[1]*sh[2]*sh[3]*sh[4] {
				t.Fatalf("Shape %v for %d precision values, want %v", sh, len(e.Precision), c.PrecisionShape)
			}
			if got := sha256Hex(e.Precision); got != c.PrecisionSHA256 {
				t.Errorf("Precision's SHA-256 %s, want %s", got, c.PrecisionSHA256)
			}
			if got := sha256Hex(e.Scores); got != c.ScoresSHA256 {
				t.Errorf("Scores' SHA-256 %s, want %s", got, c.ScoresSHA256)
			}
			if c.Precision != nil {
				fullPrecision++
				if i := equalBits(e.Precision, c.Precision); i >= 0 {
					t.Errorf("Precision[%d] = %v, want %v", i, e.Precision[i], c.Precision[i])
				}
			}
		})
	}
	if fullPrecision == 0 {
		t.Error("no case holds a whole precision array")
	}
}
