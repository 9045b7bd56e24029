package detection

import (
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/tensor"
)

// f64s is t's elements as float64.
func f64s(t *tensor.Dense) []float64 {
	if t.Dtype() == tensor.Float32 {
		return convertValues[float64](valueData[float32](t))
	}
	return append([]float64(nil), valueData[float64](t)...)
}

func TestBoxCodersGolden(t *testing.T) {
	for _, c := range loadValues(t).BoxCoder {
		name := c.Kind + "/" + c.Dtype
		boxes := golden.Tensor(c.Dtype, []int{c.K, 4}, goldenBoxes(c.Seed, c.K, 100))
		ref := golden.Tensor(c.Dtype, []int{c.K, 4}, goldenBoxes(c.Seed+2, c.K, 100))
		props := golden.Tensor(c.Dtype, []int{c.K, 4}, goldenBoxes(c.Seed+3, c.K, 100))
		if c.Kind == "box" {
			cols := 4 * c.Classes
			codes := affine(uniforms(c.Seed+1, c.K*cols), 8, -4)
			for i := 0; i < c.K; i++ {
				for j := 0; j < cols; j += 4 {
					if i < 5 {
						codes[i*cols+j+2] = 30
					} else if i < 8 {
						codes[i*cols+j+3] = 25
					}
				}
			}
			coder := NewBoxCoder([4]float64(c.Weights))
			dec, decErr := coder.DecodeSingle(golden.Tensor(c.Dtype, []int{c.K, cols}, codes), boxes)
			enc, encErr := coder.EncodeSingle(ref, props)
			assertCoded(t, name, c, dec, enc, decErr, encErr)
			continue
		}
		coder := BoxLinearCoder{NormalizeBySize: c.NormalizeBySize}
		codes := golden.Tensor(c.Dtype, []int{c.K, 4}, affine(uniforms(c.Seed+1, 4*c.K), 3, 0))
		dec, decErr := coder.Decode(codes, boxes)
		enc, encErr := coder.Encode(ref, props)
		assertCoded(t, name, c, dec, enc, decErr, encErr)
	}
}

// assertCoded compares a coder's decoded and encoded boxes with the case's.
func assertCoded(t *testing.T, name string, c boxCoderCase, dec, enc *tensor.Dense, decErr, encErr error) {
	t.Helper()
	if decErr != nil || encErr != nil {
		t.Fatal(name, decErr, encErr)
	}
	tol := tolFor(c.Dtype)
	golden.AssertClose(t, name+" decoded", f64s(dec), c.Decoded, tol, 0)
	golden.AssertClose(t, name+" encoded", f64s(enc), c.Encoded, tol, tol)
}

func TestBoxCodersErrors(t *testing.T) {
	b4 := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking(make([]float64, 12)))
	b4f := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking(make([]float32, 12)))
	b5 := tensor.New(tensor.WithShape(3, 5), tensor.WithBacking(make([]float64, 15)))
	b2 := tensor.New(tensor.WithShape(2, 4), tensor.WithBacking(make([]float64, 8)))
	bi := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking(make([]int, 12)))
	ok := NewBoxCoder([4]float64{1, 1, 1, 1})
	cases := []struct {
		name string
		f    func() error
		want string
	}{
		{"decode nil codes", func() error { _, err := ok.DecodeSingle(nil, b4); return err }, "relCodes is nil"},
		{"decode codes not 4·C", func() error { _, err := ok.DecodeSingle(b5, b4); return err }, "multiple of 4"},
		{"decode rank", func() error { _, err := ok.DecodeSingle(b4, b5); return err }, "boxes must be [K, 4]"},
		{"decode K mismatch", func() error { _, err := ok.DecodeSingle(b4, b2); return err }, "K = 3"},
		{"decode dtype mismatch", func() error { _, err := ok.DecodeSingle(b4, b4f); return err }, "differs"},
		{"decode int", func() error { _, err := ok.DecodeSingle(bi, b4); return err }, "want float32 or float64"},
		{"decode zero weight", func() error { _, err := BoxCoder{Weights: [4]float64{1, 0, 1, 1}}.DecodeSingle(b4, b4); return err }, "Weights[1]"},
		{"encode NaN weight", func() error {
			_, err := BoxCoder{Weights: [4]float64{1, 1, math.NaN(), 1}}.EncodeSingle(b4, b4)
			return err
		}, "Weights[2]"},
		{"encode shape", func() error { _, err := ok.EncodeSingle(b5, b4); return err }, "referenceBoxes must be [K, 4]"},
		{"linear encode K", func() error { _, err := BoxLinearCoder{}.Encode(b4, b2); return err }, "proposals must be [K, 4]"},
		{"linear decode nil", func() error { _, err := BoxLinearCoder{}.Decode(b4, nil); return err }, "boxes is nil"},
	}
	for _, c := range cases {
		err := c.f()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestBoxCoderClampAndDefaults(t *testing.T) {
	// Decoding dw = 100 with weight 1 gives exp(log(1000/16))·w = 62.5·w.
	codes := tensor.New(tensor.WithShape(1, 4), tensor.WithBacking([]float64{0, 0, 100, 0}))
	boxes := tensor.New(tensor.WithShape(1, 4), tensor.WithBacking([]float64{0, 0, 2, 2}))
	for _, c := range []BoxCoder{NewBoxCoder([4]float64{1, 1, 1, 1}), {Weights: [4]float64{1, 1, 1, 1}}} {
		out, err := c.DecodeSingle(codes, boxes)
		if err != nil {
			t.Fatal(err)
		}
		got := f64s(out)
		if math.Abs(got[2]-got[0]-125) > 1e-9 || got[3]-got[1] != 2 {
			t.Fatalf("decoded %v, want width 125 (clamped) and height 2", got)
		}
	}
}
