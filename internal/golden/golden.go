// Package golden reads the golden files of testdata/ (written by the
// testdata/gen_golden*.py scripts from torch and torchvision) and compares
// values with them, for the tests of gops' packages.
package golden

import (
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/gops-dev/gops/internal/dense"
	"gorgonia.org/tensor"
)

// RoI is the part of a RoI pooling case (testdata/gen_golden.py: RoIAlign,
// RoIPool and their position-sensitive forms) that sets the op and its
// inputs; the golden tests' cases embed it with torch's results.
type RoI struct {
	OutputSize    [2]int    `json:"output_size"`
	SpatialScale  float64   `json:"spatial_scale"`
	SamplingRatio int       `json:"sampling_ratio"`
	Aligned       bool      `json:"aligned"`
	InputShape    []int     `json:"input_shape"`
	Input         []float64 `json:"input"`
	Boxes         []float64 `json:"boxes"`
	GradOutput    []float64 `json:"grad_output"`
}

// Load reads the cases of a .json.gz golden file ({"cases": [...]}),
// failing the test if it cannot or if there are none.
func Load[C any](t testing.TB, path string) []C {
	t.Helper()
	var doc struct {
		Cases []C `json:"cases"`
	}
	Decode(t, path, &doc)
	if len(doc.Cases) == 0 {
		t.Fatalf("%s has no cases", path)
	}
	return doc.Cases
}

// Decode reads a whole .json.gz golden file into doc (a pointer), for
// files with more than one list of cases, failing the test if it cannot.
func Decode(t testing.TB, path string, doc any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(zr).Decode(doc); err != nil {
		t.Fatal(err)
	}
}

// Tensor builds a tensor of the case's dtype ("float32" or "float64").
func Tensor(dtype string, shape []int, data []float64) *tensor.Dense {
	if dtype == "float32" {
		return dense.Of(tensor.Float32, shape, data)
	}
	return dense.Of(tensor.Float64, shape, append([]float64(nil), data...))
}

// AssertClose compares got to want elementwise with
// |got−want| <= atol + rtol·|want|; an infinite want needs the same
// infinity.
func AssertClose(t testing.TB, what string, got, want []float64, rtol, atol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.IsInf(want[i], 0) && got[i] == want[i] {
			continue
		}
		if d := math.Abs(got[i] - want[i]); !(d <= atol+rtol*math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %.10g, want %.10g (diff %.3g)", what, i, got[i], want[i], d)
		}
	}
}
