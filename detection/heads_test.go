package detection

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/dense"
	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// quantTensor is a tensor of heads_golden.json.gz: ints[i]·scale, exact in
// float32 and float64.
type quantTensor struct {
	Key   string  `json:"key"`
	Shape []int   `json:"shape"`
	Ints  []int64 `json:"ints"`
	Scale float64 `json:"scale"`
}

// values is the tensor's elements.
func (q quantTensor) values() []float64 {
	v := make([]float64, len(q.Ints))
	for i, k := range q.Ints {
		v[i] = float64(k) * q.Scale
	}
	return v
}

// headsGolden is a case of testdata/detection/heads_golden.json.gz
// (scripts/gen_detection_heads.py): a torchvision head's state dict, a
// feature pyramid, and the head's concatenated outputs in both dtypes.
type headsGolden struct {
	Name       string        `json:"name"`
	Head       string        `json:"head"`
	Norm       string        `json:"norm"`
	InChannels int           `json:"in_channels"`
	NumAnchors int           `json:"num_anchors"`
	NumClasses int           `json:"num_classes"`
	NumConvs   int           `json:"num_convs"`
	StateDict  []quantTensor `json:"state_dict"`
	Features   []quantTensor `json:"features"`
	Outputs    map[string]struct {
		ClsLogits      []float64        `json:"cls_logits"`
		BboxRegression []float64        `json:"bbox_regression"`
		BboxCtrness    []float64        `json:"bbox_ctrness"`
		Shapes         map[string][]int `json:"shapes"`
	} `json:"outputs"`
}

// head is the part under test: RetinaNetHead or FCOSHead.
type head interface {
	Init(w *Weights, prefix string, rng *rand.Rand) error
	Forward(w *Weights, prefix string, features []*gorgonia.Node, train bool) (*HeadOutputs, error)
}

// config is the case's head.
func (c *headsGolden) config() head {
	if c.Head == "fcos" {
		return FCOSHead{InChannels: c.InChannels, NumAnchors: c.NumAnchors, NumClasses: c.NumClasses, NumConvs: c.NumConvs}
	}
	h := RetinaNetHead{InChannels: c.InChannels, NumAnchors: c.NumAnchors, NumClasses: c.NumClasses, NumConvs: c.NumConvs}
	if c.Norm == "groupnorm" {
		h.Norm = HeadNormGroupNorm
	}
	return h
}

// loadHeadsGolden reads the golden file.
func loadHeadsGolden(t *testing.T) []headsGolden {
	return golden.Load[headsGolden](t, filepath.Join("..", "testdata", "detection", "heads_golden.json.gz"))
}

// headsGoldenTol are the tolerances of TestHeadsGolden: rtol and an atol
// relative to the output's largest magnitude.
var headsGoldenTol = map[tensor.Dtype]float64{tensor.Float64: 1e-10, tensor.Float32: 1e-4}

// TestHeadsGolden: RetinaNetHead v1 and v2 and FCOSHead, initialised by
// Init (whose keys and shapes must be torchvision's state_dict's, in its
// order) and then given torchvision's values, equal torchvision's
// outputs on a 3–5 level pyramid, concatenated (HeadOutputs.Cat) and per
// level: float64 to 1e-10 relative, float32 to 1e-4.
func TestHeadsGolden(t *testing.T) {
	for _, c := range loadHeadsGolden(t) {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(c.Name+"/"+dt.String(), func(t *testing.T) {
				w := goldenWeights(t, &c, dt)
				g := gorgonia.NewGraph()
				feats := make([]*gorgonia.Node, len(c.Features))
				for l, f := range c.Features {
					feats[l] = gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(f.Shape...), gorgonia.WithName(fmt.Sprintf("p%d", l)),
						gorgonia.WithValue(dense.Of(dt, f.Shape, f.values())))
				}
				out, err := c.config().Forward(w, "head", feats, false)
				if err != nil {
					t.Fatal(err)
				}
				cls, reg, ctr, err := out.Cat()
				if err != nil {
					t.Fatal(err)
				}
				want := c.Outputs[dt.String()]
				names := []string{"cls_logits", "bbox_regression"}
				nodes := []*gorgonia.Node{cls, reg}
				wants := [][]float64{want.ClsLogits, want.BboxRegression}
				levels := [][]*gorgonia.Node{out.ClsLogits, out.BboxRegression}
				if c.Head == "fcos" {
					names, nodes, wants = append(names, "bbox_ctrness"), append(nodes, ctr), append(wants, want.BboxCtrness)
					levels = append(levels, out.BboxCtrness)
				} else if ctr != nil || out.BboxCtrness != nil {
					t.Fatal("RetinaNetHead gave bbox_ctrness")
				}
				for _, ls := range levels {
					nodes = append(nodes, ls...)
				}
				got, err := graphtest.Eval(g, nodes...)
				if err != nil {
					t.Fatal(err)
				}
				for i, name := range names {
					if !slices.Equal([]int(nodes[i].Shape()), want.Shapes[name]) {
						t.Fatalf("%s shape %v, want %v", name, nodes[i].Shape(), want.Shapes[name])
					}
					assertRel(t, name, got[i], wants[i], headsGoldenTol[dt])
					// Level l is rows [off_l, off_l + H_l·W_l·A) of each image.
					lv := got[len(names)+i*len(c.Features) : len(names)+(i+1)*len(c.Features)]
					var cat []float64
					for n := 0; n < 2; n++ {
						for l, f := range c.Features {
							rows := f.Shape[2] * f.Shape[3] * c.NumAnchors
							if s := levels[i][l].Shape(); !slices.Equal([]int(s), []int{2, rows, want.Shapes[name][2]}) {
								t.Fatalf("%s level %d shape %v, want [2, %d, %d]", name, l, s, rows, want.Shapes[name][2])
							}
							per := len(lv[l]) / 2
							cat = append(cat, lv[l][n*per:(n+1)*per]...)
						}
					}
					golden.AssertClose(t, name+" levels", cat, got[i], 0, 0)
				}
			})
		}
	}
}

// goldenWeights is the case's head initialised by Init under "head" in
// dtype dt, its keys and shapes checked against torchvision's state dict,
// then set to the golden values.
func goldenWeights(t *testing.T, c *headsGolden, dt tensor.Dtype) *Weights {
	t.Helper()
	w, err := NewWeights(dt)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.config().Init(w, "head", rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, q := range c.StateDict {
		keys = append(keys, "head."+q.Key)
	}
	if got := w.Params.Names(); !slices.Equal(got, keys) {
		t.Fatalf("keys %v,\nwant torchvision's %v", got, keys)
	}
	if w.Frozen.Len() != 0 {
		t.Fatalf("%d frozen tensors, want none", w.Frozen.Len())
	}
	for _, q := range c.StateDict {
		v, err := w.Value("head." + q.Key)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal([]int(v.Shape()), q.Shape) {
			t.Fatalf("%s shape %v, want torchvision's %v", q.Key, v.Shape(), q.Shape)
		}
		fillDense(v, q.values())
	}
	return w
}

// fillDense writes vals into d (float32 or float64).
func fillDense(d *tensor.Dense, vals []float64) {
	switch data := d.Data().(type) {
	case []float64:
		copy(data, vals)
	case []float32:
		for i, v := range vals {
			data[i] = float32(v)
		}
	}
}

// assertRel compares got with want to rtol relative, with an absolute
// floor of rtol times want's largest magnitude (for elements near zero).
func assertRel(t *testing.T, what string, got, want []float64, rtol float64) {
	t.Helper()
	m := 0.0
	for _, v := range want {
		m = math.Max(m, math.Abs(v))
	}
	golden.AssertClose(t, what, got, want, rtol, rtol*m)
	e := 0.0
	for i := range want {
		e = math.Max(e, math.Abs(got[i]-want[i])/m)
	}
	t.Logf("%s: largest error %.2g of the largest magnitude %.3g", what, e, m)
}

// TestHeadsInit: Init's tensors follow torchvision's initialisation in
// distribution: convolution weights mean 0 and standard deviation 0.01,
// tower and regression biases 0, cls_logits' bias −log(99) (and
// −log(9) for PriorProbability 0.1), GroupNorm weights 1 and biases 0.
func TestHeadsInit(t *testing.T) {
	for _, c := range []struct {
		name  string
		head  head
		prior float64
	}{
		{"retinanet_v1", RetinaNetHead{InChannels: 64, NumAnchors: 9, NumClasses: 91}, 0.01},
		{"retinanet_v2", RetinaNetHead{InChannels: 64, NumAnchors: 9, NumClasses: 5, Norm: HeadNormGroupNorm, PriorProbability: 0.1}, 0.1},
		{"fcos", FCOSHead{InChannels: 64, NumClasses: 91}, 0.01},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := NewWeights(tensor.Float64)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.head.Init(w, "head", rand.New(rand.NewPCG(7, 8))); err != nil {
				t.Fatal(err)
			}
			convs, norms := 0, 0
			for _, k := range w.Params.Names() {
				v, err := w.Value(k)
				if err != nil {
					t.Fatal(err)
				}
				d := v.Data().([]float64)
				switch {
				case v.Dims() == 4:
					convs++
					mean, std := moments(d)
					// The mean of n normal(0, 0.01) draws has standard error 0.01/√n.
					if se := 0.01 / math.Sqrt(float64(len(d))); math.Abs(mean) > 5*se || math.Abs(std-0.01) > 0.01*6/math.Sqrt(2*float64(len(d))) {
						t.Fatalf("%s: mean %g, std %g over %d, want normal(0, 0.01)", k, mean, std, len(d))
					}
				case strings.HasSuffix(k, "cls_logits.bias"):
					assertConst(t, k, d, -math.Log((1-c.prior)/c.prior))
				case isNorm(k) && strings.HasSuffix(k, ".weight"):
					norms++
					assertConst(t, k, d, 1)
				default:
					assertConst(t, k, d, 0)
				}
			}
			if convs == 0 || (c.name != "retinanet_v1") != (norms > 0) {
				t.Fatalf("%d convolutions, %d GroupNorms", convs, norms)
			}
		})
	}
}

// isNorm reports whether key is a head's GroupNorm tensor: RetinaNet v2's
// conv.i.1 or FCOS's conv.(3i+1).
func isNorm(key string) bool {
	i := strings.LastIndex(key, ".conv.")
	if i < 0 {
		return false
	}
	parts := strings.Split(key[i+len(".conv."):], ".")
	switch len(parts) {
	case 3:
		return parts[1] == "1"
	case 2:
		j, err := strconv.Atoi(parts[0])
		return err == nil && j%3 == 1
	}
	return false
}

// moments is d's mean and (biased) standard deviation.
func moments(d []float64) (mean, std float64) {
	for _, v := range d {
		mean += v
	}
	mean /= float64(len(d))
	for _, v := range d {
		std += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(std / float64(len(d)))
}

// assertConst requires every element of d to be v.
func assertConst(t *testing.T, key string, d []float64, v float64) {
	t.Helper()
	for i, x := range d {
		if x != v {
			t.Fatalf("%s[%d] = %g, want %g", key, i, x, v)
		}
	}
}

// TestHeadsSharedWeights: every level reads one node per tensor, so a
// graph of a 3-level head holds each weight once.
func TestHeadsSharedWeights(t *testing.T) {
	h := FCOSHead{InChannels: 32, NumClasses: 2, NumConvs: 1}
	w, err := NewWeights(tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Init(w, "head", rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Fatal(err)
	}
	g := gorgonia.NewGraph()
	var feats []*gorgonia.Node
	for l, s := range []int{4, 2, 1} {
		feats = append(feats, gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 32, s, s), gorgonia.WithName(fmt.Sprint("p", l))))
	}
	if _, err := h.Forward(w, "head", feats, true); err != nil {
		t.Fatal(err)
	}
	for _, k := range w.Params.Names() {
		if n := len(g.ByName(k)); n != 1 {
			t.Fatalf("%s: %d nodes in the graph, want 1", k, n)
		}
	}
}
