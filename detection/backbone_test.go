package detection_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gops-dev/gops/detection"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// backboneConfig is a golden case's configuration
// (scripts/gen_detection_backbone.py).
type backboneConfig struct {
	Block           string  `json:"block"`
	Layers          []int   `json:"layers"`
	Planes          []int   `json:"planes"`
	StemWidth       int     `json:"stem_width"`
	Groups          int     `json:"groups"`
	WidthPerGroup   int     `json:"width_per_group"`
	Norm            string  `json:"norm"`
	Eps             float64 `json:"eps"`
	TrainableLayers int     `json:"trainable_layers"`
	ReturnedLayers  []int   `json:"returned_layers"`
	OutChannels     int     `json:"out_channels"`
	Extra           string  `json:"extra"`
	ExtraIn         int     `json:"extra_in"`
	Train           bool    `json:"train"`
}

// backbone is c as a BackboneWithFPN.
func (c backboneConfig) backbone() detection.BackboneWithFPN {
	r := detection.ResNet{Layers: c.Layers, Planes: c.Planes, StemWidth: c.StemWidth, Groups: c.Groups,
		WidthPerGroup: c.WidthPerGroup, Eps: c.Eps}
	if c.Block == "Bottleneck" {
		r.Block = detection.Bottleneck
	}
	if c.Norm == "bn" {
		r.NormLayer = detection.BatchNorm2d
	}
	b := detection.BackboneWithFPN{Body: r, TrainableLayers: c.TrainableLayers, ReturnedLayers: c.ReturnedLayers,
		OutChannels: c.OutChannels}
	if c.Extra == "p6p7" {
		b.ExtraBlocks = detection.LastLevelP6P7{InChannels: c.ExtraIn, OutChannels: c.OutChannels}
	}
	return b
}

// goldenMap is one named feature map.
type goldenMap struct {
	Name  string    `json:"name"`
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

type goldenTensor struct {
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

// backboneGolden is testdata/detection/backbone_golden.json.gz.
type backboneGolden struct {
	Inputs []goldenTensor `json:"inputs"`
	Cases  []struct {
		Name         string                  `json:"name"`
		Config       backboneConfig          `json:"config"`
		Keys         []string                `json:"keys"`
		RequiresGrad []string                `json:"requires_grad"`
		StateDict    map[string]goldenTensor `json:"state_dict"`
		Runs         []struct {
			Dtype        string               `json:"dtype"`
			Input        int                  `json:"input"`
			Outputs      []goldenMap          `json:"outputs"`
			RunningAfter map[string][]float64 `json:"running_after"`
		} `json:"runs"`
	} `json:"cases"`
	Trainable []struct {
		Config       backboneConfig `json:"config"`
		RequiresGrad []string       `json:"requires_grad"`
	} `json:"trainable"`
}

func loadBackboneGolden(t *testing.T) *backboneGolden {
	t.Helper()
	var doc backboneGolden
	golden.Decode(t, filepath.Join("..", "testdata", "detection", "backbone_golden.json.gz"), &doc)
	if len(doc.Cases) == 0 || len(doc.Trainable) == 0 {
		t.Fatal("backbone_golden.json.gz has no cases")
	}
	return &doc
}

// dtypeOf is "float32" or "float64" as a tensor.Dtype.
func dtypeOf(s string) tensor.Dtype {
	if s == "float32" {
		return tensor.Float32
	}
	return tensor.Float64
}

// initWeights returns b's weights (Init with a fixed seed, no prefix).
func initWeights(t *testing.T, b detection.BackboneWithFPN, dt tensor.Dtype) *detection.Weights {
	t.Helper()
	w, err := detection.NewWeights(dt)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Init(w, "", rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	return w
}

// setValue overwrites the weights' tensor k with data.
func setValue(t *testing.T, w *detection.Weights, k string, data []float64) {
	t.Helper()
	v, err := w.Value(k)
	if err != nil {
		t.Fatal(err)
	}
	if v.Shape().TotalSize() != len(data) {
		t.Fatalf("%s: %v, golden has %d values", k, v.Shape(), len(data))
	}
	switch d := v.Data().(type) {
	case []float64:
		copy(d, data)
	case []float32:
		for i, x := range data {
			d[i] = float32(x)
		}
	}
}

// sortedKeys are the keys of both of w's sets, sorted.
func sortedKeys(w *detection.Weights) []string {
	var ks []string
	for k := range w.StateDict() {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// runBackbone builds b on x in a new graph and returns its maps' values
// and names.
func runBackbone(t *testing.T, b detection.BackboneWithFPN, w *detection.Weights, x *tensor.Dense, train bool) ([][]float64, [][]int, []string) {
	t.Helper()
	g := gorgonia.NewGraph()
	xn := gorgonia.NewTensor(g, x.Dtype(), 4, gorgonia.WithShape(x.Shape()...), gorgonia.WithValue(x), gorgonia.WithName("images"))
	maps, names, err := b.Forward(w, "", xn, train)
	if err != nil {
		t.Fatal(err)
	}
	got, err := graphtest.Eval(g, maps...)
	if err != nil {
		t.Fatal(err)
	}
	var shapes [][]int
	for _, m := range maps {
		shapes = append(shapes, m.Shape().Clone())
	}
	return got, shapes, names
}

// assertMaps compares maps with torchvision's, each within tol of its
// largest |value|.
func assertMaps(t *testing.T, got [][]float64, shapes [][]int, names []string, want []goldenMap, tol float64) {
	t.Helper()
	if len(names) != len(want) {
		t.Fatalf("names %v, want %d maps", names, len(want))
	}
	for i, m := range want {
		if names[i] != m.Name || !slices.Equal(shapes[i], m.Shape) {
			t.Fatalf("map %d: %q %v, want %q %v", i, names[i], shapes[i], m.Name, m.Shape)
		}
		scale := 0.0
		for _, v := range m.Data {
			scale = max(scale, math.Abs(v))
		}
		golden.AssertClose(t, "map "+m.Name, got[i], m.Data, 0, tol*scale)
	}
}

// tolFor is the relative tolerance of a dtype: 1e-10 of the largest
// value in float64, 1e-4 in float32.
func tolFor(dt tensor.Dtype) float64 {
	if dt == tensor.Float32 {
		return 1e-4
	}
	return 1e-10
}

// TestBackboneGolden: tiny ResNet-FPN backbones (BasicBlock and
// Bottleneck with groups, 3 and 4 stages, FrozenBatchNorm2d with eps 0
// and 1e-5, BatchNorm2d in eval and training, LastLevelMaxPool and
// LastLevelP6P7 from P5 and from C5, returned layers [1,2,3], [2,3,4],
// [2,3]) with torchvision's weights give torchvision's feature maps for
// three image sizes (odd ones, and 5×7 where the last maps are 1×1),
// float64 within 1e-10 and float32 within 1e-4 of each map's largest
// value; Init's keys are torchvision's state_dict keys, its Params keys
// the parameters with requires_grad; a training run updates the running
// statistics as torch.
func TestBackboneGolden(t *testing.T) {
	doc := loadBackboneGolden(t)
	for _, c := range doc.Cases {
		b := c.Config.backbone()
		t.Run(c.Name+"/keys", func(t *testing.T) {
			w := initWeights(t, b, tensor.Float64)
			want := slices.Clone(c.Keys)
			sort.Strings(want)
			if got := sortedKeys(w); !slices.Equal(got, want) {
				t.Fatalf("keys\n%v\nwant torchvision's\n%v", got, want)
			}
			got := w.Params.Names()
			sort.Strings(got)
			if !slices.Equal(got, c.RequiresGrad) {
				t.Fatalf("Params\n%v\nwant requires_grad\n%v", got, c.RequiresGrad)
			}
		})
		for _, r := range c.Runs {
			in := doc.Inputs[r.Input]
			t.Run(fmt.Sprintf("%s/%s/%v", c.Name, r.Dtype, in.Shape), func(t *testing.T) {
				dt := dtypeOf(r.Dtype)
				w := initWeights(t, b, dt)
				for k, v := range c.StateDict {
					setValue(t, w, k, v.Data)
				}
				got, shapes, names := runBackbone(t, b, w, golden.Tensor(r.Dtype, in.Shape, in.Data), c.Config.Train)
				assertMaps(t, got, shapes, names, r.Outputs, tolFor(dt))
				if c.Config.Train != (len(r.RunningAfter) > 0) {
					t.Fatalf("train %v with %d running statistics after", c.Config.Train, len(r.RunningAfter))
				}
				for k, want := range r.RunningAfter {
					v, err := w.Value(k)
					if err != nil {
						t.Fatal(err)
					}
					golden.AssertClose(t, k, graphtest.Floats(v), want, 0, tolFor(dt))
				}
			})
		}
	}
}

// TestBackboneTrainableLayers: for trainable_layers 0 to 5, with
// FrozenBatchNorm2d and with BatchNorm2d, the keys in Weights.Params are
// the parameters torchvision's _resnet_fpn_extractor leaves with
// requires_grad, and every other key is in Weights.Frozen.
func TestBackboneTrainableLayers(t *testing.T) {
	doc := loadBackboneGolden(t)
	for _, c := range doc.Trainable {
		t.Run(fmt.Sprintf("%s/%d", c.Config.Norm, c.Config.TrainableLayers), func(t *testing.T) {
			w := initWeights(t, c.Config.backbone(), tensor.Float32)
			got := w.Params.Names()
			sort.Strings(got)
			if !slices.Equal(got, c.RequiresGrad) {
				t.Fatalf("Params\n%v\nwant\n%v", got, c.RequiresGrad)
			}
			if w.Params.Len()+w.Frozen.Len() != len(w.StateDict()) {
				t.Fatalf("%d + %d tensors, %d keys: a key in both sets", w.Params.Len(), w.Frozen.Len(), len(w.StateDict()))
			}
		})
	}
}

// formulaValue is scripts/detection_models.py's formula_value: element i
// of the k-th tensor (sorted keys) of a formula-filled model.
func formulaValue(key string, k, i int, shape []int) float64 {
	s := math.Sin(0.37*float64(i) + float64(k))
	switch {
	case strings.HasSuffix(key, "running_var"):
		return 1 + 0.5*s*s
	case strings.HasSuffix(key, "running_mean"), strings.HasSuffix(key, "bias"):
		return 0.1 * s
	case len(shape) == 1:
		return 1 + 0.2*s
	}
	fanIn := 1
	for _, d := range shape[1:] {
		fanIn *= d
	}
	return 2 * s / math.Sqrt(float64(fanIn))
}

// fillFormula sets every tensor of w to formulaValue's values (keys in
// sorted order), as detection_models.formula_fill does.
func fillFormula(t *testing.T, w *detection.Weights) {
	t.Helper()
	for k, key := range sortedKeys(w) {
		v, err := w.Value(key)
		if err != nil {
			t.Fatal(err)
		}
		data := make([]float64, v.Shape().TotalSize())
		for i := range data {
			data[i] = formulaValue(key, k, i, v.Shape())
		}
		setValue(t, w, key, data)
	}
}

// TestResNet18FPNGolden: a ResNet-18-FPN as RetinaNet v1's
// (FrozenBatchNorm2d eps 0, layers 2–4, LastLevelP6P7(256, 256)) with
// formula weights gives torchvision's maps on a [1, 3, 64, 96] image:
// float64 within 1e-10 and float32 within 1e-4 of each map's largest
// value (both against torchvision's float64 maps).
func TestResNet18FPNGolden(t *testing.T) {
	var doc struct {
		Config     backboneConfig `json:"config"`
		InputShape []int          `json:"input_shape"`
		Keys       []string       `json:"keys"`
		Outputs    []goldenMap    `json:"outputs"`
	}
	golden.Decode(t, filepath.Join("..", "testdata", "detection", "resnet18_fpn_golden.json.gz"), &doc)
	b := detection.BackboneWithFPN{Body: detection.ResNet18(), TrainableLayers: 3, ReturnedLayers: []int{2, 3, 4},
		ExtraBlocks: detection.LastLevelP6P7{InChannels: 256, OutChannels: 256}}
	b.Body.Eps = 0
	if got := b.Body.Eps; got != doc.Config.Eps || !slices.Equal(b.Body.Layers, doc.Config.Layers) {
		t.Fatalf("config %+v, golden's %+v", b, doc.Config)
	}
	x := make([]float64, tensor.Shape(doc.InputShape).TotalSize())
	for i := range x {
		x[i] = 0.5*math.Sin(0.013*float64(i)+0.3) + 0.2*math.Cos(0.7*float64(i))
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			w := initWeights(t, b, dt)
			keys := sortedKeys(w)
			want := slices.Clone(doc.Keys)
			sort.Strings(want)
			if !slices.Equal(keys, want) {
				t.Fatalf("keys\n%v\nwant\n%v", keys, want)
			}
			fillFormula(t, w)
			got, shapes, names := runBackbone(t, b, w, golden.Tensor(dt.String(), doc.InputShape, x), false)
			assertMaps(t, got, shapes, names, doc.Outputs, tolFor(dt))
		})
	}
}

// TestBackboneInit: Init draws as torchvision's constructors: ResNet
// convolutions N(0, 2/fan_out) (mean and std of a 512×512×3×3 kernel),
// FPN convolutions U(±√(3/fan_in)) (bound and std), norms 1 and 0,
// running statistics 0 and 1, FPN biases 0.
func TestBackboneInit(t *testing.T) {
	b := detection.BackboneWithFPN{Body: detection.ResNet{Layers: []int{1, 1, 1, 1}, Eps: 1e-5}, TrainableLayers: 3}
	w := initWeights(t, b, tensor.Float32)
	stats := func(k string) (mean, std, maxAbs float64, n int) {
		v, err := w.Value(k)
		if err != nil {
			t.Fatal(err)
		}
		d := graphtest.Floats(v)
		for _, x := range d {
			mean += x
			maxAbs = max(maxAbs, math.Abs(x))
		}
		mean /= float64(len(d))
		for _, x := range d {
			std += (x - mean) * (x - mean)
		}
		return mean, math.Sqrt(std / float64(len(d))), maxAbs, len(d)
	}
	mean, std, _, n := stats("body.layer4.0.conv2.weight")
	want := math.Sqrt(2.0 / (512 * 9))
	if n != 512*512*9 || math.Abs(mean) > 3*want/math.Sqrt(float64(n)) || math.Abs(std/want-1) > 0.01 {
		t.Errorf("layer4.0.conv2: %d values, mean %g std %g, want N(0, %g²)", n, mean, std, want)
	}
	bound := math.Sqrt(3.0 / (256 * 9))
	mean, std, maxAbs, n := stats("fpn.layer_blocks.3.0.weight")
	if n != 256*256*9 || maxAbs > bound || maxAbs < 0.999*bound || math.Abs(std/(bound/math.Sqrt(3))-1) > 0.01 || math.Abs(mean) > 0.01*bound {
		t.Errorf("fpn.layer_blocks.3.0: %d values, mean %g std %g max %g, want U(±%g)", n, mean, std, maxAbs, bound)
	}
	for k, want := range map[string]float64{
		"body.bn1.weight": 1, "body.layer2.0.downsample.1.bias": 0, "body.layer3.0.bn2.running_mean": 0,
		"body.layer1.0.bn1.running_var": 1, "fpn.inner_blocks.0.0.bias": 0, "fpn.layer_blocks.2.0.bias": 0,
	} {
		if mean, std, _, _ := stats(k); mean != want || std != 0 {
			t.Errorf("%s: mean %g std %g, want all %g", k, mean, std, want)
		}
	}
}

// tinyBackbone is a very small backbone for the derivative checks.
func tinyBackbone(norm detection.NormLayer) detection.BackboneWithFPN {
	return detection.BackboneWithFPN{
		Body:            detection.ResNet{Layers: []int{1, 1}, Planes: []int{2, 3}, StemWidth: 2, NormLayer: norm, Eps: 1e-5},
		TrainableLayers: 5, OutChannels: 2, ExtraBlocks: detection.LastLevelP6P7{InChannels: 3, OutChannels: 2},
	}
}

// TestBackboneDerivatives: derivatives of orders 1 and 2 of a tiny
// backbone's maps (all of them, flattened and concatenated) w.r.t. the
// image equal finite differences, float64, with FrozenBatchNorm2d and
// with BatchNorm2d in training.
func TestBackboneDerivatives(t *testing.T) {
	for _, c := range []struct {
		name  string
		norm  detection.NormLayer
		train bool
	}{{"frozen", detection.FrozenBatchNorm2d, false}, {"batchnorm-train", detection.BatchNorm2d, true}} {
		t.Run(c.name, func(t *testing.T) {
			b := tinyBackbone(c.norm)
			w := initWeights(t, b, tensor.Float64)
			rng := rand.New(rand.NewPCG(3, 4))
			for _, k := range sortedKeys(w) {
				v, _ := w.Value(k)
				if strings.HasSuffix(k, "running_var") {
					continue
				}
				if err := nn.Normal(v, 0, 0.3, rng); err != nil {
					t.Fatal(err)
				}
			}
			f := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
				maps, _, err := b.Forward(w, "", in[0], c.train)
				if err != nil {
					return nil, err
				}
				var flat gorgonia.Nodes
				for _, m := range maps {
					fm, err := nn.Flatten(m, 0)
					if err != nil {
						return nil, err
					}
					flat = append(flat, fm)
				}
				return nn.Concat(0, flat...)
			}
			x := tensor.New(tensor.WithShape(2, 3, 7, 6), tensor.WithBacking(make([]float64, 2*3*7*6)))
			for i, d := 0, x.Data().([]float64); i < len(d); i++ {
				d[i] = math.Sin(1.3*float64(i)+0.2) + 0.1*float64(i%5)
			}
			if err := graphtest.Check(f, []*tensor.Dense{x}, graphtest.Options{Order: 2, Seed: 5, RTol: 1e-4, ATol: 1e-6}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBackboneBadInput: bad configurations, images and weights give
// errors that name the argument and the problem.
func TestBackboneBadInput(t *testing.T) {
	good := tinyBackbone(detection.FrozenBatchNorm2d)
	w := initWeights(t, good, tensor.Float64)
	empty, err := detection.NewWeights(tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	image := func(dt tensor.Dtype, shape ...int) *gorgonia.Node {
		return gorgonia.NewTensor(gorgonia.NewGraph(), dt, len(shape), gorgonia.WithShape(shape...))
	}
	with := func(f func(b *detection.BackboneWithFPN)) detection.BackboneWithFPN {
		b := good
		b.Body.Layers, b.Body.Planes = slices.Clone(b.Body.Layers), slices.Clone(b.Body.Planes)
		f(&b)
		return b
	}
	x := image(tensor.Float64, 1, 3, 8, 8)
	for _, c := range []struct {
		name string
		b    detection.BackboneWithFPN
		w    *detection.Weights
		x    *gorgonia.Node
		want string
	}{
		{"channels", good, w, image(tensor.Float64, 1, 4, 8, 8), "input must be [N ≥ 1, 3, H ≥ 1, W ≥ 1], got (1, 4, 8, 8)"},
		{"rank", good, w, image(tensor.Float64, 3, 8, 8), "input must be [N ≥ 1, 3, H ≥ 1, W ≥ 1], got (3, 8, 8)"},
		{"zero height", good, w, image(tensor.Float64, 1, 3, 0, 8), "got (1, 3, 0, 8)"},
		{"empty batch", good, w, image(tensor.Float64, 0, 3, 8, 8), "got (0, 3, 8, 8)"},
		{"nil image", good, w, nil, "ResNet.Forward: input is nil"},
		{"dtype", good, w, image(tensor.Float32, 1, 3, 8, 8), "input dtype float32, want the weights' float64"},
		{"nil weights", good, nil, x, "the weights are nil"},
		{"missing weights", good, empty, x, `no tensor "body.conv1.weight"`},
		{"trainable layers", with(func(b *detection.BackboneWithFPN) { b.TrainableLayers = 6 }), w, x, "TrainableLayers 6 must be in [0, 5]"},
		{"returned order", with(func(b *detection.BackboneWithFPN) { b.ReturnedLayers = []int{2, 1} }), w, x, "ReturnedLayers [2 1] must increase within [1, 2]"},
		{"returned range", with(func(b *detection.BackboneWithFPN) { b.ReturnedLayers = []int{1, 3} }), w, x, "ReturnedLayers [1 3] must increase"},
		{"no stages", with(func(b *detection.BackboneWithFPN) { b.Body.Layers, b.Body.Planes = nil, nil }), w, x, "Layers [] must have 1 to 4 stages"},
		{"planes", with(func(b *detection.BackboneWithFPN) { b.Body.Planes = []int{2} }), w, x, "Planes [2] must have one entry per stage"},
		{"zero blocks", with(func(b *detection.BackboneWithFPN) { b.Body.Layers[1] = 0 }), w, x, "stage 2: 0 blocks of 3 planes"},
		{"basic groups", with(func(b *detection.BackboneWithFPN) { b.Body.Groups = 2 }), w, x, "BasicBlock only supports Groups 1 and WidthPerGroup 64"},
		{"eps", with(func(b *detection.BackboneWithFPN) { b.Body.Eps = -1 }), w, x, "Eps -1 must be finite and non-negative"},
		{"batchnorm eps 0", with(func(b *detection.BackboneWithFPN) { b.Body.NormLayer, b.Body.Eps = detection.BatchNorm2d, 0 }), w, x, "(positive with BatchNorm2d)"},
		{"p6p7 in", with(func(b *detection.BackboneWithFPN) {
			b.ExtraBlocks = detection.LastLevelP6P7{InChannels: 5, OutChannels: 2}
		}), w, x, "LastLevelP6P7: its input has 3 channels, InChannels is 5"},
		{"bottleneck width", with(func(b *detection.BackboneWithFPN) {
			b.Body.Block, b.Body.Groups, b.Body.WidthPerGroup = detection.Bottleneck, 4, 4
		}), w, x, "Bottleneck width 0 below Groups 4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := c.b.Forward(c.w, "", c.x, false)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
	// Init's own errors.
	w2, _ := detection.NewWeights(tensor.Float64)
	for _, c := range []struct {
		name string
		b    detection.BackboneWithFPN
		w    *detection.Weights
		want string
	}{
		{"p6p7 out", with(func(b *detection.BackboneWithFPN) {
			b.ExtraBlocks = detection.LastLevelP6P7{InChannels: 3, OutChannels: 4}
		}), w2, "OutChannels 4 the FPN's 2"},
		{"twice", good, w, `"body.conv1.weight" is already in the weights`},
		{"nil weights", good, nil, "the weights are nil"},
	} {
		t.Run("Init/"+c.name, func(t *testing.T) {
			err := c.b.Init(c.w, "", rand.New(rand.NewPCG(1, 1)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// TestResNetAndFPNParts: ResNet.Init and Forward alone (all stages, every
// parameter trainable, keys under the prefix) give BackboneWithFPN's body
// maps; StageChannels and FPN derive torchvision's in_channels_list; the
// FPN alone rejects maps that do not fit it.
func TestResNetAndFPNParts(t *testing.T) {
	r := detection.ResNet{Block: detection.Bottleneck, Layers: []int{1, 1}, Planes: []int{2, 4}, StemWidth: 4, Eps: 1e-5}
	ch, err := r.StageChannels()
	if err != nil || !slices.Equal(ch, []int{8, 16}) {
		t.Fatalf("StageChannels %v %v, want [8 16]", ch, err)
	}
	if ch, _ := detection.ResNet50().StageChannels(); !slices.Equal(ch, []int{256, 512, 1024, 2048}) {
		t.Fatalf("ResNet50 StageChannels %v", ch)
	}
	w, _ := detection.NewWeights(tensor.Float64)
	if err := r.Init(w, "backbone.body", rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"backbone.body.conv1.weight", "backbone.body.bn1.running_var", "backbone.body.layer2.0.conv3.weight",
		"backbone.body.layer1.0.downsample.0.weight", "backbone.body.layer2.0.downsample.1.running_mean"} {
		if !w.Has(k) {
			t.Errorf("no %s in %v", k, sortedKeys(w))
		}
	}
	if w.Frozen.Len() != 4*(1+4+4) || w.Params.Len() != 1+4+4 {
		t.Errorf("%d frozen, %d trainable tensors; want the 36 buffers of 9 FrozenBatchNorm2d and 9 convolutions", w.Frozen.Len(), w.Params.Len())
	}
	b := detection.BackboneWithFPN{Body: r, TrainableLayers: 5, OutChannels: 3}
	fpn, err := b.FPN()
	if err != nil || !slices.Equal(fpn.InChannelsList, []int{8, 16}) || fpn.ExtraBlocks != (detection.LastLevelMaxPool{}) {
		t.Fatalf("FPN %+v %v", fpn, err)
	}
	if err := fpn.Init(w, "backbone.fpn", rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 3, 9, 10), gorgonia.WithInit(gorgonia.RangedFrom(0)), gorgonia.WithName("x"))
	stages, err := r.Forward(w, "backbone.body", x, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 || !slices.Equal(stages[0].Shape(), tensor.Shape{1, 8, 3, 3}) || !slices.Equal(stages[1].Shape(), tensor.Shape{1, 16, 2, 2}) {
		t.Fatalf("stages %v", stages)
	}
	maps, names, err := b.Forward(w, "backbone", x, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"0", "1", "pool"}) || !slices.Equal(maps[2].Shape(), tensor.Shape{1, 3, 1, 1}) {
		t.Fatalf("names %v, pool %v", names, maps[2].Shape())
	}
	got, err := graphtest.Eval(g, stages[1], maps[1])
	if err != nil {
		t.Fatal(err)
	}
	// The backbone's body is the ResNet: the FPN's map 1 from the body's
	// last stage equals the one built from r.Forward's.
	alone, _, err := fpn.Forward(w, "backbone.fpn", stages, []string{"a", "b"}, false)
	if err != nil {
		t.Fatal(err)
	}
	got2, err := graphtest.Eval(g, alone[1])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[1], got2[0]) || len(got[0]) != 16*4 {
		t.Fatalf("FPN maps differ: %v vs %v", got[1], got2[0])
	}
	for _, c := range []struct {
		name  string
		maps  []*gorgonia.Node
		names []string
		want  string
	}{
		{"count", stages[:1], []string{"a"}, "1 maps and 1 names for 2 InChannelsList entries"},
		{"names", stages, []string{"a"}, "2 maps and 1 names"},
		{"channels", []*gorgonia.Node{stages[1], stages[1]}, []string{"a", "b"}, "map 0: input must be [N ≥ 1, 8, H ≥ 1, W ≥ 1], got (1, 16, 2, 2)"},
	} {
		if _, _, err := fpn.Forward(w, "backbone.fpn", c.maps, c.names, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if err := (detection.FeaturePyramidNetwork{}).Init(w, "x", nil); err == nil || !strings.Contains(err.Error(), "InChannelsList is empty") {
		t.Errorf("empty FPN: %v", err)
	}
}
