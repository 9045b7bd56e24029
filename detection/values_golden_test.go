package detection

import (
	"sync"
	"testing"

	"github.com/gops-dev/gops/internal/golden"
)

// valuesGolden is testdata/detection/values_golden.json.gz
// (scripts/gen_detection_values.py).
type valuesGolden struct {
	Transform []transformCase   `json:"transform"`
	Anchors   []anchorCase      `json:"anchors"`
	BoxCoder  []boxCoderCase    `json:"boxcoder"`
	Post      []postprocessCase `json:"postprocess"`
	Topk      []topkCase        `json:"topk"`
}

type transformCase struct {
	Dtype      string      `json:"dtype"`
	MinSize    float64     `json:"min_size"`
	MaxSize    float64     `json:"max_size"`
	Shapes     [][3]int    `json:"shapes"`
	Seeds      []int       `json:"seeds"`
	OutShape   []int       `json:"out_shape"`
	ImageSizes [][2]int    `json:"image_sizes"`
	Sum        float64     `json:"sum"`
	AbsSum     float64     `json:"abs_sum"`
	SampleIdx  []int       `json:"sample_idx"`
	Sample     []float64   `json:"sample"`
	BoxSeeds   []uint64    `json:"box_seeds"`
	OrigBoxes  [][]float64 `json:"orig_boxes"`
}

type anchorCase struct {
	Name                  string      `json:"name"`
	Dtype                 string      `json:"dtype"`
	Sizes                 [][]float64 `json:"sizes"`
	AspectRatios          [][]float64 `json:"aspect_ratios"`
	ImageSize             [2]int      `json:"image_size"`
	GridSizes             [][2]int    `json:"grid_sizes"`
	NumAnchorsPerLocation []int       `json:"num_anchors_per_location"`
	PerLevel              []int       `json:"per_level"`
	Anchors               []float64   `json:"anchors"`
	CellAnchors           [][]float64 `json:"cell_anchors"`
}

type boxCoderCase struct {
	Kind            string    `json:"kind"`
	Weights         []float64 `json:"weights"`
	NormalizeBySize bool      `json:"normalize_by_size"`
	Dtype           string    `json:"dtype"`
	Classes         int       `json:"classes"`
	K               int       `json:"k"`
	Seed            uint64    `json:"seed"`
	Decoded         []float64 `json:"decoded"`
	Encoded         []float64 `json:"encoded"`
}

type postprocessCase struct {
	Name             string      `json:"name"`
	Model            string      `json:"model"`
	Dtype            string      `json:"dtype"`
	Levels           []int       `json:"levels"`
	Classes          int         `json:"classes"`
	Quantised        bool        `json:"quantised"`
	Seed             uint64      `json:"seed"`
	ScoreThresh      float64     `json:"score_thresh"`
	NMSThresh        float64     `json:"nms_thresh"`
	DetectionsPerImg int         `json:"detections_per_img"`
	TopkCandidates   int         `json:"topk_candidates"`
	ImageSizes       [][2]int    `json:"image_sizes"`
	Boxes            [][]float64 `json:"boxes"`
	Scores           [][]float64 `json:"scores"`
	Labels           [][]int     `json:"labels"`
}

type topkCase struct {
	Values      []float64 `json:"values"`
	K           int       `json:"k"`
	TopkValues  []float64 `json:"topk_values"`
	TopkIndices []int     `json:"topk_indices"`
}

var (
	valuesOnce sync.Once
	valuesDoc  valuesGolden
)

// loadValues reads the golden file once per test binary.
func loadValues(t *testing.T) *valuesGolden {
	t.Helper()
	valuesOnce.Do(func() { golden.Decode(t, "../testdata/detection/values_golden.json.gz", &valuesDoc) })
	if len(valuesDoc.Transform) == 0 || len(valuesDoc.Post) == 0 {
		t.Fatal("values golden file not read or empty")
	}
	return &valuesDoc
}

// uniforms is scripts/gen_detection_values.py's uniforms: splitmix64 from
// state seed·φ, n values (z >> 11)·2^−53 in [0, 1).
func uniforms(seed uint64, n int) []float64 {
	const golden = 0x9E3779B97F4A7C15
	s := seed * golden
	out := make([]float64, n)
	for i := range out {
		s += golden
		z := s
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		z ^= z >> 31
		out[i] = float64(z>>11) * 0x1p-53
	}
	return out
}

// goldenBoxes is the script's random_boxes: k boxes from uniforms(seed):
// x1 = u0·scale, x2 = x1 + (u2·scale·0.5 + 0.5), y likewise.
func goldenBoxes(seed uint64, k int, scale float64) []float64 {
	u := uniforms(seed, 4*k)
	out := make([]float64, 4*k)
	for i := 0; i < k; i++ {
		x, y := float64(u[4*i]*scale), float64(u[4*i+1]*scale)
		w, h := float64(float64(u[4*i+2]*scale)*0.5)+0.5, float64(float64(u[4*i+3]*scale)*0.5)+0.5
		out[4*i], out[4*i+1], out[4*i+2], out[4*i+3] = x, y, x+w, y+h
	}
	return out
}

// affine is u·a + b for each u (the script's float64 formulas).
func affine(u []float64, a, b float64) []float64 {
	out := make([]float64, len(u))
	for i, v := range u {
		out[i] = float64(v*a) + b
	}
	return out
}

// tolFor is the tolerance of a dtype's comparisons: float64 rtol 1e-12,
// float32 1e-5 (torch's float32 exp, log and sigmoid are within an ulp or
// two of Go's correctly rounded ones).
func tolFor(dtype string) float64 {
	if dtype == "float32" {
		return 1e-5
	}
	return 1e-12
}

func TestTopkTorchOrder(t *testing.T) {
	for i, c := range loadValues(t).Topk {
		got := topk(c.Values, c.K)
		if len(got) != len(c.TopkIndices) {
			t.Fatalf("case %d: %d indices, want %d", i, len(got), len(c.TopkIndices))
		}
		for j := range got {
			if got[j] != c.TopkIndices[j] {
				t.Fatalf("case %d (n %d, k %d): index %d is %d, want torch's %d", i, len(c.Values), c.K, j, got[j], c.TopkIndices[j])
			}
		}
	}
}
