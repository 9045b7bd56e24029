package detection

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Bad input to Faster R-CNN's API: every case is an error naming the
// argument (or the setting) and the problem, never a panic; and the edge
// cases that must work (no proposal surviving, no ground truth, float32).

// errorCase is a named call whose error must contain want.
type errorCase struct {
	name string
	call func() error
	want string
}

// safeCall runs f, turning a panic into an error that says so (with the
// stack), so that a defect fails its case instead of the test binary.
func safeCall(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("PANIC: %v\n%s", r, debug.Stack())
		}
	}()
	return f()
}

// firstLine is err's message up to its first newline (a recovered
// panic's stack left out).
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// checkErrorCases runs the cases: each must fail with an error holding
// its want.
func checkErrorCases(t *testing.T, cases []errorCase) {
	t.Helper()
	for _, c := range cases {
		err := safeCall(c.call)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// rcnnErrorsConfig is a small Faster R-CNN (the goldens' structure, built
// without their files): a 4-stage ResNet of BasicBlocks into a 16-channel
// FPN with a max-pooled level, 3 anchors per location on 5 levels, 3
// classes.
func rcnnErrorsConfig() FasterRCNNConfig {
	body := ResNet{Block: BasicBlock, Layers: []int{1, 1, 1, 1}, StemWidth: 8, Planes: []int{8, 8, 16, 16},
		NormLayer: FrozenBatchNorm2d}
	rpn := DefaultRPNConfig()
	rpn.PreNMSTopNTest, rpn.PostNMSTopNTest, rpn.PreNMSTopNTrain, rpn.PostNMSTopNTrain = 30, 20, 30, 20
	heads := DefaultRoIHeadsConfig()
	heads.BatchSizePerImage = 16
	return FasterRCNNConfig{
		Backbone: BackboneWithFPN{Body: body, TrainableLayers: 3, ReturnedLayers: []int{1, 2, 3, 4},
			OutChannels: 16, ExtraBlocks: LastLevelMaxPool{}},
		NumClasses:      3,
		Transform:       NewGeneralizedRCNNTransform(48, 80),
		AnchorGenerator: AnchorGenerator{Sizes: [][]float64{{8}, {16}, {32}, {64}, {128}}, AspectRatios: [][]float64{{0.5, 1, 2}, {0.5, 1, 2}, {0.5, 1, 2}, {0.5, 1, 2}, {0.5, 1, 2}}},
		RPN:             rpn,
		Representation:  16,
		RoIHeads:        heads,
	}
}

// TestNewFasterRCNNErrors: NewFasterRCNN refuses bad configurations,
// dtypes and a nil rng, naming the setting.
func TestNewFasterRCNNErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	with := func(edit func(c *FasterRCNNConfig)) func() error {
		return func() error {
			c := rcnnErrorsConfig()
			edit(&c)
			m, err := NewFasterRCNN(c, tensor.Float64, rng)
			if err == nil {
				m.Close()
			}
			return err
		}
	}
	nan := math.NaN()
	checkErrorCases(t, []errorCase{
		{"NumClasses 1", with(func(c *FasterRCNNConfig) { c.NumClasses = 1 }), "NumClasses 1, want at least 2"},
		{"NumClasses 0", with(func(c *FasterRCNNConfig) { c.NumClasses = 0 }), "NumClasses 0, want at least 2"},
		{"NumClasses -3", with(func(c *FasterRCNNConfig) { c.NumClasses = -3 }), "NumClasses -3"},
		{"RoIOutputSize -1", with(func(c *FasterRCNNConfig) { c.RoIOutputSize = -1 }), "RoIOutputSize -1"},
		{"SamplingRatio -2", with(func(c *FasterRCNNConfig) { c.SamplingRatio = -2 }), "SamplingRatio -2"},
		{"Representation -3", with(func(c *FasterRCNNConfig) { c.Representation = -3 }), "Representation -3"},
		{"RPNConvDepth -1", with(func(c *FasterRCNNConfig) { c.RPNConvDepth = -1 }), "ConvDepth -1 is negative"},
		{"RPN NMSThresh NaN", with(func(c *FasterRCNNConfig) { c.RPN.NMSThresh = nan }), "RPNConfig.NMSThresh NaN"},
		{"RPN NMSThresh negative", with(func(c *FasterRCNNConfig) { c.RPN.NMSThresh = -0.1 }), "RPNConfig.NMSThresh -0.1"},
		{"RPN ScoreThresh NaN", with(func(c *FasterRCNNConfig) { c.RPN.ScoreThresh = nan }), "RPNConfig.ScoreThresh is NaN"},
		{"RPN MinSize NaN", with(func(c *FasterRCNNConfig) { c.RPN.MinSize = nan }), "RPNConfig.MinSize is NaN"},
		{"RPN PreNMSTopNTest negative", with(func(c *FasterRCNNConfig) { c.RPN.PreNMSTopNTest = -1 }), "RPNConfig's top-n counts"},
		{"RPN PostNMSTopNTrain negative", with(func(c *FasterRCNNConfig) { c.RPN.PostNMSTopNTrain = -5 }), "-5, 20, want >= 0"},
		// The box head's settings share their names with the RPN's
		// (ScoreThresh, NMSThresh): the error must say which config.
		{"RoIHeads ScoreThresh NaN", with(func(c *FasterRCNNConfig) { c.RoIHeads.ScoreThresh = nan }), "RoIHeadsConfig.ScoreThresh"},
		{"RoIHeads NMSThresh NaN", with(func(c *FasterRCNNConfig) { c.RoIHeads.NMSThresh = nan }), "RoIHeadsConfig.NMSThresh"},
		{"RoIHeads NMSThresh negative", with(func(c *FasterRCNNConfig) { c.RoIHeads.NMSThresh = -0.5 }), "RoIHeadsConfig.NMSThresh -0.5"},
		{"RoIHeads DetectionsPerImg negative", with(func(c *FasterRCNNConfig) { c.RoIHeads.DetectionsPerImg = -1 }), "RoIHeadsConfig.DetectionsPerImg -1"},
		{"BoxWeights zero", with(func(c *FasterRCNNConfig) { c.RoIHeads.BoxWeights = [4]float64{} }), "BoxWeights[0] = 0"},
		{"BoxWeights[2] zero", with(func(c *FasterRCNNConfig) { c.RoIHeads.BoxWeights[2] = 0 }), "BoxWeights[2] = 0"},
		{"BoxWeights NaN", with(func(c *FasterRCNNConfig) { c.RoIHeads.BoxWeights[1] = nan }), "BoxWeights[1] = NaN"},
		{"BoxWeights Inf", with(func(c *FasterRCNNConfig) { c.RoIHeads.BoxWeights[3] = math.Inf(1) }), "BoxWeights[3] = +Inf"},
		{"4 anchor levels for 5 maps", with(func(c *FasterRCNNConfig) {
			c.AnchorGenerator.Sizes, c.AnchorGenerator.AspectRatios = c.AnchorGenerator.Sizes[:4], c.AnchorGenerator.AspectRatios[:4]
		}), "5 feature maps for 4 levels"},
		{"6 anchor levels for 5 maps", with(func(c *FasterRCNNConfig) {
			c.AnchorGenerator.Sizes = append(c.AnchorGenerator.Sizes, []float64{256})
			c.AnchorGenerator.AspectRatios = append(c.AnchorGenerator.AspectRatios, []float64{1})
		}), "5 feature maps for 6 levels"},
		{"anchors per location differing by level", with(func(c *FasterRCNNConfig) {
			c.AnchorGenerator.AspectRatios = [][]float64{{0.5, 1, 2}, {0.5, 1, 2}, {1}, {0.5, 1, 2}, {0.5, 1, 2}}
		}), "1 anchors per location at level 2"},
		{"Sizes and AspectRatios levels differ", with(func(c *FasterRCNNConfig) {
			c.AnchorGenerator.AspectRatios = c.AnchorGenerator.AspectRatios[:3]
		}), "5 levels of Sizes and 3 of AspectRatios"},
		{"no anchor levels", with(func(c *FasterRCNNConfig) { c.AnchorGenerator = AnchorGenerator{} }), "0 levels of Sizes"},
		{"negative anchor size", with(func(c *FasterRCNNConfig) { c.AnchorGenerator.Sizes[1] = []float64{-16} }), "Sizes[1] holds -16"},
		{"NaN aspect ratio", with(func(c *FasterRCNNConfig) { c.AnchorGenerator.AspectRatios[0] = []float64{nan, 1, 2} }), "AspectRatios[0]"},
		{"ConvFCHead InputSize not the pooled features'", with(func(c *FasterRCNNConfig) {
			c.ConvFCHead = &FastRCNNConvFCHead{InputSize: [3]int{16, 5, 5}, ConvLayers: []int{8}, FCLayers: []int{16}, BatchNorm: true}
		}), "ConvFCHead.InputSize [16 5 5], want [16 7 7]"},
		{"ConvFCHead InputSize zero", with(func(c *FasterRCNNConfig) { c.ConvFCHead = &FastRCNNConvFCHead{} }), "ConvFCHead: InputSize [0 0 0], want positive sizes"},
		{"ConvFCHead ConvLayers 0", with(func(c *FasterRCNNConfig) {
			c.ConvFCHead = &FastRCNNConvFCHead{InputSize: [3]int{16, 7, 7}, ConvLayers: []int{8, 0}}
		}), "ConvLayers[1] = 0, want at least 1"},
		{"ConvFCHead FCLayers negative", with(func(c *FasterRCNNConfig) {
			c.ConvFCHead = &FastRCNNConvFCHead{InputSize: [3]int{16, 7, 7}, FCLayers: []int{-4}}
		}), "FCLayers[0] = -4, want at least 1"},
		{"nil rng", func() error { _, err := NewFasterRCNN(rcnnErrorsConfig(), tensor.Float64, nil); return err }, "rng is nil"},
		{"int dtype", func() error { _, err := NewFasterRCNN(rcnnErrorsConfig(), tensor.Int, rng); return err }, "int"},
		{"zero dtype", func() error { _, err := NewFasterRCNN(rcnnErrorsConfig(), tensor.Dtype{}, rng); return err }, "NewFasterRCNN"},
		{"LoadFasterRCNN missing file", func() error {
			_, _, err := LoadFasterRCNN("testdata/no-such-checkpoint.pt", rcnnErrorsConfig(), tensor.Float64, LoadOptions{})
			return err
		}, "no-such-checkpoint.pt"},
		{"LoadFasterRCNN bad config", func() error {
			c := rcnnErrorsConfig()
			c.NumClasses = 1
			_, _, err := LoadFasterRCNN("testdata/no-such-checkpoint.pt", c, tensor.Float64, LoadOptions{})
			return err
		}, "NumClasses 1"},
	})
	// The good configurations build, in both dtypes: v1's and v2's
	// structure, and a conv head without norms or linear layers.
	for _, edit := range []func(c *FasterRCNNConfig){
		func(*FasterRCNNConfig) {},
		rcnnErrorsV2,
		func(c *FasterRCNNConfig) {
			c.ConvFCHead = &FastRCNNConvFCHead{InputSize: [3]int{16, 7, 7}, ConvLayers: []int{4}}
		},
	} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			c := rcnnErrorsConfig()
			edit(&c)
			m, err := NewFasterRCNN(c, dt, rng)
			if err != nil {
				t.Fatalf("%v: %v", dt, err)
			}
			m.Close()
		}
	}
}

// rcnnErrorsV2 makes c v2's structure: BatchNorm2d in the body and the
// FPN, two RPN convolutions, a FastRCNNConvFCHead with BatchNorm2d.
func rcnnErrorsV2(c *FasterRCNNConfig) {
	c.Backbone.Body.NormLayer, c.Backbone.Body.Eps = BatchNorm2d, 1e-5
	c.Backbone.FPNBatchNorm = true
	c.RPNConvDepth = 2
	c.ConvFCHead = &FastRCNNConvFCHead{InputSize: [3]int{16, 7, 7}, ConvLayers: []int{8, 8}, FCLayers: []int{16}, BatchNorm: true}
}

// TestFastRCNNConvFCHeadErrors: FastRCNNConvFCHead's Init and Forward
// refuse bad sizes, a nil rng, a misshapen x, missing weights and
// weights of other widths; the head without FCLayers gives the flattened
// features.
func TestFastRCNNConvFCHeadErrors(t *testing.T) {
	h := FastRCNNConvFCHead{InputSize: [3]int{4, 3, 3}, ConvLayers: []int{2}, FCLayers: []int{5}, BatchNorm: true}
	w, err := NewWeights(tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	if err := h.Init(w, "head", rng); err != nil {
		t.Fatal(err)
	}
	g := gorgonia.NewGraph()
	x := func(s ...int) *gorgonia.Node {
		return gorgonia.NewTensor(g, tensor.Float64, len(s), gorgonia.WithShape(s...), gorgonia.WithName(fmt.Sprint("x", s)))
	}
	checkErrorCases(t, []errorCase{
		{"Init nil rng", func() error { return h.Init(w, "other", nil) }, "rng is nil"},
		{"Init again", func() error { return h.Init(w, "head", rng) }, "head.0.0.weight"},
		{"Init bad size", func() error { return FastRCNNConvFCHead{InputSize: [3]int{4, -1, 3}}.Init(w, "bad", rng) }, "InputSize [4 -1 3]"},
		{"Init huge size", func() error {
			return FastRCNNConvFCHead{InputSize: [3]int{1 << 20, 1 << 20, 1 << 10}}.Init(w, "huge", rng)
		}, "over 2^30 values a row"},
		{"Forward nil", func() error { _, err := h.Forward(w, "head", nil, false); return err }, "x must be [R, 4, 3, 3]"},
		{"Forward channels", func() error { _, err := h.Forward(w, "head", x(2, 3, 3, 3), false); return err }, "x must be [R, 4, 3, 3]"},
		{"Forward rank", func() error { _, err := h.Forward(w, "head", x(2, 36), true); return err }, "x must be [R, 4, 3, 3]"},
		{"Forward missing weights", func() error { _, err := h.Forward(w, "nohead", x(2, 4, 3, 3), false); return err }, "nohead.0.0.weight"},
		{"Forward weights of other conv widths", func() error {
			wide := h
			wide.ConvLayers = []int{3}
			_, err := wide.Forward(w, "head", x(2, 4, 3, 3), false)
			return err
		}, "head.0.0.weight has 2 output channels, want ConvLayers[0] = 3"},
	})
	y, err := h.Forward(w, "head", x(2, 4, 3, 3), true)
	if err != nil || !y.Shape().Eq(tensor.Shape{2, 5}) {
		t.Errorf("Forward: %v %v, want (2, 5)", y.Shape(), err)
	}
	flat := FastRCNNConvFCHead{InputSize: [3]int{4, 3, 3}, ConvLayers: []int{2}}
	if err := flat.Init(w, "flat", rng); err != nil {
		t.Fatal(err)
	}
	if y, err := flat.Forward(w, "flat", x(2, 4, 3, 3), false); err != nil || !y.Shape().Eq(tensor.Shape{2, 18}) {
		t.Errorf("Forward without FCLayers: %v %v, want (2, 18)", y.Shape(), err)
	}
	if _, err := w.Value("flat.0.0.bias"); err != nil {
		t.Errorf("a conv without a norm has a bias: %v", err)
	}
}

// denseOf is a tensor of dtype dt and shape with elements data (zeros if
// nil).
func denseOf(dt tensor.Dtype, data []float64, shape ...int) *tensor.Dense {
	if data == nil {
		n := 1
		for _, s := range shape {
			n *= s
		}
		data = make([]float64, n)
	}
	if dt == tensor.Float32 {
		return newValue(convertValues[float32](data), shape...)
	}
	return newValue(append([]float64(nil), data...), shape...)
}

// TestFilterProposalsErrors: FilterProposals refuses nil, misshapen and
// mixed-dtype levels, level counts differing, no images, negative sizes
// and bad settings, naming the argument (objectness, deltas, anchors,
// imageSizes) or the setting.
func TestFilterProposalsErrors(t *testing.T) {
	f64 := func(shape ...int) *tensor.Dense { return denseOf(tensor.Float64, nil, shape...) }
	f32 := func(shape ...int) *tensor.Dense { return denseOf(tensor.Float32, nil, shape...) }
	ls := func(ts ...*tensor.Dense) []*tensor.Dense { return ts }
	ints := tensor.New(tensor.WithShape(1, 5, 1), tensor.WithBacking(make([]int, 5)))
	ok := DefaultRPNConfig()
	sizes := [][2]int{{10, 12}}
	call := func(cfg RPNConfig, obj, dl, anc []*tensor.Dense, sz [][2]int) func() error {
		return func() error { _, err := FilterProposals(cfg, obj, dl, anc, sz, false); return err }
	}
	set := func(edit func(c *RPNConfig)) RPNConfig {
		c := ok
		edit(&c)
		return c
	}
	good := func(cfg RPNConfig) func() error {
		return call(cfg, ls(f64(1, 5, 1)), ls(f64(1, 5, 4)), ls(f64(5, 4)), sizes)
	}
	checkErrorCases(t, []errorCase{
		{"no images", call(ok, ls(f64(1, 5, 1)), ls(f64(1, 5, 4)), ls(f64(5, 4)), nil), "no images"},
		{"negative height", call(ok, ls(f64(1, 5, 1)), ls(f64(1, 5, 4)), ls(f64(5, 4)), [][2]int{{-1, 4}}), "imageSizes[0] = [-1 4] has a negative side"},
		{"negative width", call(ok, ls(f64(2, 5, 1)), ls(f64(2, 5, 4)), ls(f64(5, 4)), [][2]int{{3, 4}, {3, -4}}), "imageSizes[1] = [3 -4]"},
		{"no levels", call(ok, nil, nil, nil, sizes), "0 levels of objectness"},
		{"anchor levels", call(ok, ls(f64(1, 5, 1)), ls(f64(1, 5, 4)), ls(f64(5, 4), f64(5, 4)), sizes), "1 levels of objectness and 2 of anchors"},
		{"deltas levels", call(ok, ls(f64(1, 5, 1), f64(1, 3, 1)), ls(f64(1, 5, 4)), ls(f64(5, 4), f64(3, 4)), sizes), "1 levels of deltas"},
		{"nil objectness", call(ok, ls(nil), ls(f64(1, 5, 4)), ls(f64(5, 4)), sizes), "objectness[0] is nil"},
		{"nil deltas", call(ok, ls(f64(1, 5, 1)), ls(nil), ls(f64(5, 4)), sizes), "deltas[0] is nil"},
		{"nil anchors", call(ok, ls(f64(1, 5, 1)), ls(f64(1, 5, 4)), ls(nil), sizes), "anchors[0] is nil"},
		{"nil second level", call(ok, ls(f64(1, 5, 1), nil), ls(f64(1, 5, 4), f64(1, 5, 4)), ls(f64(5, 4), f64(5, 4)), sizes), "objectness[1] is nil"},
		{"objectness rank", call(ok, ls(f64(5, 1)), ls(f64(1, 5, 4)), ls(f64(5, 4)), sizes), "objectness[0] must be [N, HWA, 1]"},
		{"objectness 2 columns", call(ok, ls(f64(1, 5, 2)), ls(f64(1, 5, 4)), ls(f64(5, 4)), sizes), "objectness[0] must be [N, HWA, 1], got (1, 5, 2)"},
		{"objectness batch", call(ok, ls(f64(2, 5, 1)), ls(f64(2, 5, 4)), ls(f64(5, 4)), sizes), "objectness[0] must be"},
		{"deltas columns", call(ok, ls(f64(1, 5, 1)), ls(f64(1, 5, 3)), ls(f64(5, 4)), sizes), "deltas[0] must be [N, HWA, 4]"},
		{"deltas rows", call(ok, ls(f64(1, 5, 1)), ls(f64(1, 6, 4)), ls(f64(5, 4)), sizes), "deltas[0] must be [N, HWA, 4]"},
		{"anchors rows", call(ok, ls(f64(1, 5, 1)), ls(f64(1, 5, 4)), ls(f64(6, 4)), sizes), "anchors[0] must be [HWA, 4]"},
		{"anchors rank", call(ok, ls(f64(1, 5, 1)), ls(f64(1, 5, 4)), ls(f64(20)), sizes), "anchors[0] must be [HWA, 4]"},
		{"int objectness", call(ok, ls(ints), ls(f64(1, 5, 4)), ls(f64(5, 4)), sizes), "objectness[0] dtype int"},
		{"deltas float32", call(ok, ls(f64(1, 5, 1)), ls(f32(1, 5, 4)), ls(f64(5, 4)), sizes), "float32"},
		{"anchors float32", call(ok, ls(f64(1, 5, 1)), ls(f64(1, 5, 4)), ls(f32(5, 4)), sizes), "float32"},
		{"second level float32", call(ok, ls(f64(1, 5, 1), f32(1, 2, 1)), ls(f64(1, 5, 4), f32(1, 2, 4)), ls(f64(5, 4), f32(2, 4)), sizes), "level 1"},
		{"NaN NMSThresh", good(set(func(c *RPNConfig) { c.NMSThresh = math.NaN() })), "RPNConfig.NMSThresh NaN"},
		{"negative NMSThresh", good(set(func(c *RPNConfig) { c.NMSThresh = -1 })), "RPNConfig.NMSThresh -1"},
		{"NaN ScoreThresh", good(set(func(c *RPNConfig) { c.ScoreThresh = math.NaN() })), "RPNConfig.ScoreThresh is NaN"},
		{"NaN MinSize", good(set(func(c *RPNConfig) { c.MinSize = math.NaN() })), "RPNConfig.MinSize is NaN"},
		{"negative PreNMSTopNTest", good(set(func(c *RPNConfig) { c.PreNMSTopNTest = -1 })), "top-n counts"},
		{"negative PostNMSTopNTest", good(set(func(c *RPNConfig) { c.PostNMSTopNTest = -1 })), "top-n counts"},
	})
	// The errors say which function refused.
	if err := call(ok, nil, nil, nil, sizes)(); err == nil || !strings.HasPrefix(err.Error(), "detection: FilterProposals: ") {
		t.Errorf("error %v, want it to start with the function's name", err)
	}
}

// TestFilterProposalsValues: NaN and infinite objectness, deltas and
// anchors never give a NaN or unclipped proposal; a score threshold
// above every probability and a zero pre-NMS count give none; float32
// works alike.
func TestFilterProposalsValues(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	obj := []float64{nan, inf, -inf, 3, 1e30, -1e30, 0, 2}
	deltas := []float64{
		0, 0, 0, 0, // NaN objectness
		0, 0, 0, 0, // +Inf objectness
		0, 0, 0, 0,
		nan, 0, 0, 0, // NaN delta
		1e30, -1e30, 50, -50, // huge deltas, exp clipped
		0, 0, inf, inf,
		-inf, inf, 0, 0,
		0.1, 0.1, 0.2, 0.2,
	}
	anchors := []float64{
		0, 0, 10, 10,
		-5, -5, 5, 5,
		nan, 0, 4, 4,
		0, 0, 8, 8,
		2, 2, 6, 6,
		1, 1, 3, 3,
		0, 0, inf, 4,
		3, 3, 9, 9,
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, train := range []bool{false, true} {
			cfg := DefaultRPNConfig()
			cfg.NMSThresh = 1 // keep all but equal boxes
			var props []Proposals
			err := safeCall(func() (err error) {
				props, err = FilterProposals(cfg, []*tensor.Dense{denseOf(dt, obj, 1, 8, 1)}, []*tensor.Dense{denseOf(dt, deltas, 1, 8, 4)},
					[]*tensor.Dense{denseOf(dt, anchors, 8, 4)}, [][2]int{{12, 16}}, train)
				return err
			})
			if err != nil {
				t.Fatalf("%v: %v", dt, err)
			}
			if len(props) != 1 {
				t.Fatalf("%v: %d images' proposals, want 1", dt, len(props))
			}
			p := props[0]
			if p.Boxes.Dtype() != dt || p.Scores.Dtype() != dt {
				t.Errorf("%v: proposals of dtype %v and %v", dt, p.Boxes.Dtype(), p.Scores.Dtype())
			}
			checkProposals(t, fmt.Sprintf("%v train=%v", dt, train), p, cfg, train, [2]int{12, 16}, 8)
			if p.Scores.Shape()[0] == 0 {
				t.Errorf("%v: no proposal survives, want the finite ones", dt)
			}
		}
		// No survivor: a threshold above every probability, and no anchor
		// taken before NMS.
		for name, edit := range map[string]func(c *RPNConfig){
			"ScoreThresh 1.5":  func(c *RPNConfig) { c.ScoreThresh = 1.5 },
			"PreNMSTopNTest 0": func(c *RPNConfig) { c.PreNMSTopNTest = 0 },
			"PostNMSTopNTest 0": func(c *RPNConfig) {
				c.PostNMSTopNTest = 0
			},
		} {
			cfg := DefaultRPNConfig()
			edit(&cfg)
			var props []Proposals
			err := safeCall(func() (err error) {
				props, err = FilterProposals(cfg, []*tensor.Dense{denseOf(dt, obj, 2, 4, 1)}, []*tensor.Dense{denseOf(dt, deltas, 2, 4, 4)},
					[]*tensor.Dense{denseOf(dt, anchors[:16], 4, 4)}, [][2]int{{12, 16}, {0, 0}}, false)
				return err
			})
			if err != nil {
				t.Errorf("%v %s: %v", dt, name, firstLine(err))
				continue
			}
			for i, p := range props {
				if s := p.Boxes.Shape(); !s.Eq(tensor.Shape{0, 4}) || p.Scores.Shape()[0] != 0 {
					t.Errorf("%v %s: image %d proposals %v, want none", dt, name, i, s)
				}
			}
		}
	}
}

// checkProposals checks one image's proposals: [P, 4] boxes inside the
// image (no NaN), P scores in [max(ScoreThresh, 0), 1] non-increasing,
// sides >= MinSize, P <= the mode's PostNMSTopN and <= candidates.
func checkProposals(t *testing.T, what string, p Proposals, cfg RPNConfig, train bool, size [2]int, candidates int) {
	t.Helper()
	bs, ss := p.Boxes.Shape(), p.Scores.Shape()
	if bs.Dims() != 2 || bs[1] != 4 || ss.Dims() != 1 || ss[0] != bs[0] {
		t.Fatalf("%s: boxes %v and scores %v, want [P, 4] and [P]", what, bs, ss)
	}
	n := bs[0]
	_, post := cfg.topN(train)
	if n > post || n > candidates {
		t.Errorf("%s: %d proposals, more than PostNMSTopN %d or the %d candidates", what, n, post, candidates)
	}
	boxes, scores := f64s(p.Boxes), f64s(p.Scores)
	h, w := float64(size[0]), float64(size[1])
	// The sides are compared with MinSize in the dtype: allow its rounding.
	minSide := cfg.MinSize - 1e-5*max(h, w, 1)
	for j := 0; j < n; j++ {
		b := boxes[4*j : 4*j+4]
		if !(b[0] >= 0 && b[2] <= w && b[1] >= 0 && b[3] <= h) {
			t.Errorf("%s: proposal %d %v outside the %v image", what, j, b, size)
		}
		if !(b[2]-b[0] >= minSide && b[3]-b[1] >= minSide) {
			t.Errorf("%s: proposal %d %v has a side below MinSize %v", what, j, b, cfg.MinSize)
		}
		if s := scores[j]; !(s >= 0 && s <= 1 && s >= float64(float32(cfg.ScoreThresh))-1e-7) {
			t.Errorf("%s: proposal %d score %v outside [ScoreThresh %v, 1]", what, j, s, cfg.ScoreThresh)
		}
		if j > 0 && !(scores[j] <= scores[j-1]) {
			t.Errorf("%s: scores %v not in decreasing order at %d", what, scores, j)
		}
	}
}

// TestFastRCNNPostprocessErrors: FastRCNNPostprocessDetections refuses nil,
// misshapen and mixed-dtype tensors, proposal lists not matching the
// images, no images, negative sizes and bad settings, naming the argument.
func TestFastRCNNPostprocessErrors(t *testing.T) {
	f64 := func(shape ...int) *tensor.Dense { return denseOf(tensor.Float64, nil, shape...) }
	f32 := func(shape ...int) *tensor.Dense { return denseOf(tensor.Float32, nil, shape...) }
	ls := func(ts ...*tensor.Dense) []*tensor.Dense { return ts }
	ok := DefaultRoIHeadsConfig()
	sizes := [][2]int{{10, 12}, {8, 8}}
	call := func(cfg RoIHeadsConfig, cls, reg *tensor.Dense, props []*tensor.Dense, sz [][2]int) func() error {
		return func() error { _, err := FastRCNNPostprocessDetections(cfg, cls, reg, props, sz); return err }
	}
	set := func(edit func(c *RoIHeadsConfig)) RoIHeadsConfig {
		c := ok
		edit(&c)
		return c
	}
	good := func(cfg RoIHeadsConfig) func() error {
		return call(cfg, f64(5, 3), f64(5, 12), ls(f64(2, 4), f64(3, 4)), sizes)
	}
	ints := tensor.New(tensor.WithShape(5, 3), tensor.WithBacking(make([]int, 15)))
	checkErrorCases(t, []errorCase{
		{"no images", call(ok, f64(0, 3), f64(0, 12), nil, nil), "0 proposal lists for 0 image sizes"},
		{"proposal lists and sizes", call(ok, f64(5, 3), f64(5, 12), ls(f64(2, 4), f64(3, 4)), sizes[:1]), "2 proposal lists for 1 image sizes"},
		{"negative size", call(ok, f64(5, 3), f64(5, 12), ls(f64(2, 4), f64(3, 4)), [][2]int{{10, 12}, {-8, 8}}), "imageSizes[1] = [-8 8] has a negative side"},
		{"nil classLogits", call(ok, nil, f64(5, 12), ls(f64(2, 4), f64(3, 4)), sizes), "classLogits is nil"},
		{"nil boxRegression", call(ok, f64(5, 3), nil, ls(f64(2, 4), f64(3, 4)), sizes), "boxRegression is nil"},
		{"nil proposals", call(ok, f64(5, 3), f64(5, 12), ls(f64(2, 4), nil), sizes), "proposals[1] is nil"},
		{"proposals 5 columns", call(ok, f64(5, 3), f64(5, 12), ls(f64(2, 5), f64(3, 4)), sizes), "proposals[0] must be [P, 4]"},
		{"proposals rank 1", call(ok, f64(5, 3), f64(5, 12), ls(f64(8), f64(3, 4)), sizes), "proposals[0] must be [P, 4]"},
		{"classLogits rows", call(ok, f64(4, 3), f64(5, 12), ls(f64(2, 4), f64(3, 4)), sizes), "classLogits must be [R, K], got (4, 3)"},
		{"classLogits rank", call(ok, f64(5, 3, 1), f64(5, 12), ls(f64(2, 4), f64(3, 4)), sizes), "classLogits must be [R, K]"},
		{"boxRegression columns", call(ok, f64(5, 3), f64(5, 8), ls(f64(2, 4), f64(3, 4)), sizes), "boxRegression must be [R, 4·K]"},
		{"boxRegression rows", call(ok, f64(5, 3), f64(6, 12), ls(f64(2, 4), f64(3, 4)), sizes), "boxRegression must be [R, 4·K]"},
		{"int classLogits", call(ok, ints, f64(5, 12), ls(f64(2, 4), f64(3, 4)), sizes), "classLogits dtype int"},
		{"boxRegression float32", call(ok, f64(5, 3), f32(5, 12), ls(f64(2, 4), f64(3, 4)), sizes), "boxRegression"},
		{"proposals float32", call(ok, f64(5, 3), f64(5, 12), ls(f64(2, 4), f32(3, 4)), sizes), "proposals[1]"},
		{"NaN ScoreThresh", good(set(func(c *RoIHeadsConfig) { c.ScoreThresh = math.NaN() })), "ScoreThresh is NaN"},
		{"NaN NMSThresh", good(set(func(c *RoIHeadsConfig) { c.NMSThresh = math.NaN() })), "NMSThresh NaN"},
		{"negative DetectionsPerImg", good(set(func(c *RoIHeadsConfig) { c.DetectionsPerImg = -2 })), "DetectionsPerImg -2"},
		{"zero BoxWeights", good(set(func(c *RoIHeadsConfig) { c.BoxWeights = [4]float64{} })), "BoxWeights[0] = 0"},
		{"infinite BoxWeights", good(set(func(c *RoIHeadsConfig) { c.BoxWeights[3] = math.Inf(-1) })), "BoxWeights[3] = -Inf"},
	})
	// TopkCandidates is not a setting of RoIHeadsConfig: the error must
	// not send the caller looking for it.
	bad := ok
	bad.DetectionsPerImg = -2
	if _, err := FastRCNNPostprocessDetections(bad, f64(5, 3), f64(5, 12), ls(f64(2, 4), f64(3, 4)), sizes); err != nil && strings.Contains(err.Error(), "TopkCandidates") {
		t.Errorf("negative DetectionsPerImg: error %v names TopkCandidates, not a setting of RoIHeadsConfig", err)
	}
}

// TestFastRCNNPostprocessValues: NaN and infinite logits, regression and
// proposals give no NaN detection; detections are inside the image, of
// labels 1..K−1 with probabilities above ScoreThresh in decreasing order,
// at most DetectionsPerImg; one class (only the background) and no
// proposals give none.
func TestFastRCNNPostprocessValues(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	logits := []float64{
		0, 5, 1, // a confident class 1
		nan, 1, 2, // NaN logit
		0, inf, 1, // +Inf logit
		-inf, -inf, -inf,
		0, 1e30, -1e30,
		0, 2, 2,
	}
	props := []float64{
		1, 1, 9, 9,
		2, 2, 8, 8,
		0, 0, 5, 5,
		nan, 0, 4, 4,
		-3, -3, 30, 30,
		4, 4, 4, 4, // empty proposal
	}
	// Per proposal: class 0's deltas zero, class 1's finite, class 2's
	// wild.
	wild := [][]float64{{nan, 0, 0, 0}, {1e30, -1e30, 50, -50}, {0, 0, inf, inf}, {-inf, inf, 0, 0}, {0, 0, -1e30, 0}, {0.5, 0.5, 0.5, 0.5}}
	var reg []float64
	for r := 0; r < 6; r++ {
		reg = append(append(append(reg, 0, 0, 0, 0), 0.1, -0.1, 0.2, 0), wild[r]...)
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		cfg := DefaultRoIHeadsConfig()
		cfg.ScoreThresh = 0
		for _, perImg := range []int{0, 1, 100} {
			cfg.DetectionsPerImg = perImg
			var dets []Detections
			err := safeCall(func() (err error) {
				dets, err = FastRCNNPostprocessDetections(cfg, denseOf(dt, logits, 6, 3), denseOf(dt, reg, 6, 12),
					[]*tensor.Dense{denseOf(dt, props[:12], 3, 4), denseOf(dt, props[12:], 3, 4)}, [][2]int{{10, 12}, {6, 20}})
				return err
			})
			if err != nil {
				t.Errorf("%v DetectionsPerImg %d: %v", dt, perImg, firstLine(err))
				continue
			}
			if len(dets) != 2 {
				t.Fatalf("%v: %d images' detections, want 2", dt, len(dets))
			}
			total := 0
			for i, d := range dets {
				checkDetections(t, fmt.Sprintf("%v DetectionsPerImg %d image %d", dt, perImg, i), d, cfg, 3, [][2]int{{10, 12}, {6, 20}}[i], 0)
				total += len(d.Labels)
			}
			if perImg > 0 && total == 0 {
				t.Errorf("%v DetectionsPerImg %d: no detection, want the finite ones", dt, perImg)
			}
		}
		// No candidate: only the background class, no proposals at all,
		// every probability below ScoreThresh (the common case of an image
		// without objects).
		low := make([]float64, 9)
		for i := range low {
			low[i] = []float64{20, -20, -20}[i%3]
		}
		for name, c := range map[string]struct {
			k      int
			logits []float64
			props  []*tensor.Dense
		}{
			"one class":           {1, nil, []*tensor.Dense{denseOf(dt, props[:12], 3, 4)}},
			"no proposals":        {3, nil, []*tensor.Dense{denseOf(dt, nil, 0, 4)}},
			"scores below thresh": {3, low, []*tensor.Dense{denseOf(dt, props[:12], 3, 4)}},
		} {
			r := c.props[0].Shape()[0]
			var dets []Detections
			err := safeCall(func() (err error) {
				dets, err = FastRCNNPostprocessDetections(DefaultRoIHeadsConfig(), denseOf(dt, c.logits, r, c.k), denseOf(dt, nil, r, 4*c.k), c.props, [][2]int{{10, 12}})
				return err
			})
			if err != nil {
				t.Errorf("%v %s: %v", dt, name, firstLine(err))
				continue
			}
			if d := dets[0]; len(d.Labels) != 0 || !d.Boxes.Shape().Eq(tensor.Shape{0, 4}) || d.Scores.Shape()[0] != 0 {
				t.Errorf("%v %s: %v %v %v, want no detection", dt, name, d.Boxes.Shape(), d.Scores.Shape(), d.Labels)
			}
		}
	}
}

// checkDetections checks one image's detections: [D, 4] boxes inside the
// image (no NaN; slack: relative to its larger side, the rounding allowed
// outside), sides >= 0.01, D scores in (ScoreThresh, 1] in
// decreasing order, D labels in 1..k−1, D <= DetectionsPerImg, and no two
// boxes of one label overlapping by more than NMSThresh.
func checkDetections(t *testing.T, what string, d Detections, cfg RoIHeadsConfig, k int, size [2]int, slack float64) {
	t.Helper()
	bs, ss := d.Boxes.Shape(), d.Scores.Shape()
	if bs.Dims() != 2 || bs[1] != 4 || ss.Dims() != 1 || ss[0] != bs[0] || len(d.Labels) != bs[0] {
		t.Fatalf("%s: boxes %v, scores %v and %d labels, want [D, 4], [D], D", what, bs, ss, len(d.Labels))
	}
	n := bs[0]
	if n > cfg.DetectionsPerImg {
		t.Errorf("%s: %d detections, more than DetectionsPerImg %d", what, n, cfg.DetectionsPerImg)
	}
	boxes, scores := f64s(d.Boxes), f64s(d.Scores)
	h, w := float64(size[0]), float64(size[1])
	minSide := 0.01 - 1e-5*max(h, w, 1)
	out := slack * max(h, w)
	for j := 0; j < n; j++ {
		b := boxes[4*j : 4*j+4]
		if !(b[0] >= -out && b[2] <= w+out && b[1] >= -out && b[3] <= h+out) {
			t.Errorf("%s: detection %d %v outside the %v image", what, j, b, size)
		}
		if !(b[2]-b[0] >= minSide && b[3]-b[1] >= minSide) {
			t.Errorf("%s: detection %d %v has a side below 0.01", what, j, b)
		}
		if s := scores[j]; !(s >= 0 && s <= 1 && s >= float64(float32(cfg.ScoreThresh))-1e-7) {
			t.Errorf("%s: detection %d score %v outside (ScoreThresh %v, 1]", what, j, s, cfg.ScoreThresh)
		}
		if j > 0 && !(scores[j] <= scores[j-1]) {
			t.Errorf("%s: scores %v not in decreasing order at %d", what, scores, j)
		}
		if l := d.Labels[j]; l < 1 || l >= k {
			t.Errorf("%s: detection %d label %d outside [1, %d)", what, j, l, k)
		}
		for i := 0; i < j; i++ {
			if d.Labels[i] == d.Labels[j] {
				if iou := boxIoU1(boxes[4*i:4*i+4], b); iou > cfg.NMSThresh+1e-5 {
					t.Errorf("%s: detections %d and %d of label %d overlap by IoU %v > NMSThresh %v", what, i, j, d.Labels[j], iou, cfg.NMSThresh)
				}
			}
		}
	}
}

// boxIoU1 is the IoU of two boxes in float64 (0 for two empty boxes).
func boxIoU1(a, b []float64) float64 {
	iw := min(a[2], b[2]) - max(a[0], b[0])
	ih := min(a[3], b[3]) - max(a[1], b[1])
	if iw <= 0 || ih <= 0 {
		return 0
	}
	inter := iw * ih
	return inter / ((a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - inter)
}

// rcnnImage is a [3, h, w] image of uniform pixels in [0, 1) in dt.
func rcnnImage(seed uint64, h, w int, dt tensor.Dtype) *tensor.Dense {
	rng := rand.New(rand.NewPCG(seed, 3))
	data := make([]float64, 3*h*w)
	for i := range data {
		data[i] = rng.Float64()
	}
	return denseOf(dt, data, 3, h, w)
}

// TestFasterRCNNForwardErrors: Forward refuses nil and empty image lists,
// nil, misshapen, wrong-channel, zero-sided, NaN or infinite images, a
// dtype other than the model's, a nil model and a closed one.
func TestFasterRCNNForwardErrors(t *testing.T) {
	m := tinyRCNN(t, tensor.Float64, 50, 20, 16)
	img := rcnnImage(1, 40, 56, tensor.Float64)
	withPixel := func(v float64) *tensor.Dense {
		d := denseOf(tensor.Float64, f64s(img), 3, 40, 56)
		valueData[float64](d)[100] = v
		return d
	}
	fwd := func(images ...*tensor.Dense) func() error {
		return func() error { _, err := m.Forward(images); return err }
	}
	ints := tensor.New(tensor.WithShape(3, 4, 4), tensor.WithBacking(make([]int, 48)))
	cases := []errorCase{
		{"nil images", func() error { _, err := m.Forward(nil); return err }, "no images"},
		{"empty images", fwd(), "no images"},
		{"nil image", fwd(img, nil), "images[1] is nil"},
		{"one channel", fwd(denseOf(tensor.Float64, nil, 1, 40, 56)), "images[0] has 1 channels, want 3"},
		{"four channels", fwd(img, denseOf(tensor.Float64, nil, 4, 40, 56)), "images[1] has 4 channels, want 3"},
		{"rank 4", fwd(denseOf(tensor.Float64, nil, 1, 3, 40, 56)), "images[0] must be [C, H, W]"},
		{"rank 2", fwd(denseOf(tensor.Float64, nil, 40, 56)), "images[0] must be [C, H, W]"},
		{"zero height", fwd(denseOf(tensor.Float64, nil, 3, 0, 56)), "images[0] has a zero side"},
		{"float32 image", fwd(img, rcnnImage(2, 40, 56, tensor.Float32)), "images[1] is float32, the model float64"},
		{"int image", fwd(ints), "images[0] is int"},
		{"NaN pixel", fwd(withPixel(math.NaN())), "images[0] has NaN or infinite pixels"},
		{"infinite pixel", fwd(img, withPixel(math.Inf(-1))), "images[1] has NaN or infinite pixels"},
		{"nil model", func() error { _, err := (*FasterRCNN)(nil).Forward([]*tensor.Dense{img}); return err }, "the model is nil"},
		{"zero model", func() error { _, err := (&FasterRCNN{}).Forward([]*tensor.Dense{img}); return err }, "not made by its constructor"},
	}
	checkErrorCases(t, cases)
	// Still usable after the errors.
	if _, err := m.Forward([]*tensor.Dense{img}); err != nil {
		t.Fatalf("good image after the errors: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	checkErrorCases(t, []errorCase{{"after Close", fwd(img), "closed"}})
	if err := m.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if err := (*FasterRCNN)(nil).Close(); err != nil {
		t.Errorf("a nil model's Close: %v", err)
	}
	if (*FasterRCNN)(nil).Weights() != nil {
		t.Error("a nil model's Weights are not nil")
	}
}

// rcnnLossGraph is a Faster R-CNN loss graph on x [b, 3, h, w] (a random
// batch, set as x's value) with its machine.
type rcnnLossGraph struct {
	x      *gorgonia.Node
	in     *LossInputs
	losses *Losses
	vm     gorgonia.VM
}

func newRCNNLossGraph(t *testing.T, m *FasterRCNN, b, h, w int) *rcnnLossGraph {
	t.Helper()
	dt := m.Weights().Dtype()
	batch := randomBatch(11, b, h, w)
	if dt == tensor.Float32 {
		batch = graphtest.Float32([]*tensor.Dense{batch})[0]
	}
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(b, 3, h, w), gorgonia.WithValue(batch), gorgonia.WithName("x"))
	in, losses, err := m.Loss(x)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vm.Close() })
	return &rcnnLossGraph{x: x, in: in, losses: losses, vm: vm}
}

// run runs the machine and returns the four losses and the total
// (Classification, BboxRegression, Objectness, RPNBoxReg, Total).
func (lg *rcnnLossGraph) run() ([]float64, error) {
	lg.vm.Reset()
	if err := safeCall(func() error { return ad.RunAll(lg.vm) }); err != nil {
		return nil, err
	}
	var out []float64
	for _, n := range []*gorgonia.Node{lg.losses.Classification, lg.losses.BboxRegression, lg.losses.Objectness, lg.losses.RPNBoxReg, lg.losses.Total} {
		out = append(out, graphtest.Floats(n.Value())[0])
	}
	return out, nil
}

// rcnnTwoImages are two images' ground truth in 80×112 batches, classes
// of the tiny model (1..3).
func rcnnTwoImages() []Targets {
	return []Targets{
		{Boxes: newValue([]float64{2, 3, 40, 45, 10, 4, 60, 50}, 2, 4), Labels: []int{1, 2}},
		{Boxes: newValue([]float64{0, 0, 100, 70}, 1, 4), Labels: []int{3}},
	}
}

// rawBatch is a TargetBatch made by hand (no PadTargets checks): image b
// holds the given boxes (flat) and labels, padded to maxBoxes.
func rawBatch(maxBoxes int, images ...Targets) TargetBatch {
	n := len(images)
	boxes := make([]float64, n*maxBoxes*4)
	labels := make([]int, n*maxBoxes)
	for i := range labels {
		labels[i] = -1
	}
	counts := make([]int, n)
	for b, im := range images {
		var xs []float64
		if im.Boxes != nil {
			xs = f64s(im.Boxes)
		}
		copy(boxes[b*maxBoxes*4:], xs)
		copy(labels[b*maxBoxes:], im.Labels)
		counts[b] = len(im.Labels)
	}
	return TargetBatch{Boxes: newValue(boxes, n, maxBoxes, 4), Labels: labels, Counts: counts, MaxBoxes: maxBoxes}
}

// TestFasterRCNNLossErrors: Loss refuses a nil, misshapen or
// other-dtype x and bad training settings, naming them.
func TestFasterRCNNLossErrors(t *testing.T) {
	m := tinyRCNN(t, tensor.Float64, 50, 20, 16)
	defer m.Close()
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 3, 80, 112), gorgonia.WithName("x"))
	x32 := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(2, 3, 80, 112), gorgonia.WithName("x32"))
	x3 := gorgonia.NewTensor(g, tensor.Float64, 3, gorgonia.WithShape(3, 80, 112), gorgonia.WithName("x3"))
	x1 := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 1, 80, 112), gorgonia.WithName("x1"))
	loss := func(edit func(c *FasterRCNNConfig), x *gorgonia.Node) func() error {
		return func() error {
			saved := m.Config
			defer func() { m.Config = saved }()
			if edit != nil {
				edit(&m.Config)
			}
			_, _, err := m.Loss(x)
			return err
		}
	}
	nan := math.NaN()
	checkErrorCases(t, []errorCase{
		{"nil x", loss(nil, nil), "x must be a [B, 3, H, W] node"},
		{"float32 x", loss(nil, x32), "of the model's dtype float64"},
		{"rank 3 x", loss(nil, x3), "x must be a [B, 3, H, W] node"},
		{"one channel", loss(nil, x1), "must be [N ≥ 1, 3, H ≥ 1, W ≥ 1], got (2, 1, 80, 112)"},
		{"nil model", func() error { _, _, err := (*FasterRCNN)(nil).Loss(x); return err }, "the model is nil"},
		{"LossAt unknown weight", func() error {
			_, _, err := m.LossAt(x, map[string]*gorgonia.Node{"no.such.weight": x})
			return err
		}, "no.such.weight"},
		{"RPN BgIoUThresh above FgIoUThresh", loss(func(c *FasterRCNNConfig) { c.RPN.BgIoUThresh = 0.8 }, x),
			"RPNConfig's BgIoUThresh 0.8 above FgIoUThresh 0.7"},
		{"RoIHeads BgIoUThresh above FgIoUThresh", loss(func(c *FasterRCNNConfig) { c.RoIHeads.FgIoUThresh = 0.4 }, x),
			"RoIHeadsConfig's BgIoUThresh 0.5 above FgIoUThresh 0.4"},
		{"RPN FgIoUThresh NaN", loss(func(c *FasterRCNNConfig) { c.RPN.FgIoUThresh = nan }, x), "RPNConfig's BgIoUThresh 0.3 above FgIoUThresh NaN"},
		{"RoIHeads BgIoUThresh NaN", loss(func(c *FasterRCNNConfig) { c.RoIHeads.BgIoUThresh = nan }, x), "RoIHeadsConfig's BgIoUThresh NaN"},
		{"RPN PositiveFraction 1.5", loss(func(c *FasterRCNNConfig) { c.RPN.PositiveFraction = 1.5 }, x), "RPNConfig's BatchSizePerImage 256 and PositiveFraction 1.5"},
		{"RPN PositiveFraction negative", loss(func(c *FasterRCNNConfig) { c.RPN.PositiveFraction = -0.1 }, x), "PositiveFraction -0.1"},
		{"RoIHeads PositiveFraction NaN", loss(func(c *FasterRCNNConfig) { c.RoIHeads.PositiveFraction = nan }, x), "RoIHeadsConfig's BatchSizePerImage 16 and PositiveFraction NaN"},
		{"RoIHeads PositiveFraction 2", loss(func(c *FasterRCNNConfig) { c.RoIHeads.PositiveFraction = 2 }, x), "PositiveFraction 2"},
		{"RPN BatchSizePerImage negative", loss(func(c *FasterRCNNConfig) { c.RPN.BatchSizePerImage = -1 }, x), "RPNConfig's BatchSizePerImage -1"},
		{"RoIHeads BatchSizePerImage 0", loss(func(c *FasterRCNNConfig) { c.RoIHeads.BatchSizePerImage = 0 }, x), "RoIHeadsConfig.BatchSizePerImage 0, want at least 1"},
		{"x not padded to a multiple of 32", loss(nil, gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 3, 33, 47), gorgonia.WithName("x33"))),
			"MultiScaleRoIAlign: scales [0.25 0.125 0.125 0.0625]"},
		{"RoIHeads BatchSizePerImage negative", loss(func(c *FasterRCNNConfig) { c.RoIHeads.BatchSizePerImage = -4 }, x), "BatchSizePerImage -4"},
	})
	// The good settings build.
	if err := loss(nil, x)(); err != nil {
		t.Fatalf("good x: %v", err)
	}
}

// TestFasterRCNNLossInputsErrors: Set refuses the background label, labels
// at or above NumClasses, NaN boxes, x2 < x1 and other batch sizes;
// SetImageSizes other counts and sides outside [1, the padded batch]; a
// run before Set is the run's error. A later good batch still runs.
func TestFasterRCNNLossInputsErrors(t *testing.T) {
	m := tinyRCNN(t, tensor.Float64, 50, 20, 16)
	defer m.Close()
	lg := newRCNNLossGraph(t, m, 2, 80, 112)

	// Anchors, as for the one-stage models' graphs: those the RPN's
	// targets are matched to.
	if a := lg.in.Anchors(); a == nil || a.Shape().Dims() != 2 || a.Shape()[1] != 4 {
		t.Errorf("Anchors() = %v, want the graph's anchors [A, 4]", a)
	}

	// A run before any Set.
	if _, err := lg.run(); err == nil || !strings.Contains(err.Error(), "call LossInputs.Set before running the graph") {
		t.Errorf("run before Set: error %v, want one asking for LossInputs.Set", err)
	}

	box := func(v ...float64) *tensor.Dense { return newValue(v, len(v)/4, 4) }
	ok := Targets{Boxes: box(2, 3, 40, 45), Labels: []int{1}}
	nan := math.NaN()
	set := func(tb TargetBatch) func() error { return func() error { return lg.in.Set(tb) } }
	checkErrorCases(t, []errorCase{
		{"label 0", set(padded(t, 2, []Targets{ok, {Boxes: box(1, 2, 10, 12), Labels: []int{0}}})),
			"targets[1].Labels[0] = 0: Faster R-CNN's classes start at 1 (0 is the background)"},
		{"label NumClasses", set(padded(t, 2, []Targets{ok, {Boxes: box(1, 2, 10, 12, 3, 4, 20, 30), Labels: []int{2, 4}}})),
			"targets[1].Labels[1] = 4, the model has 4 classes"},
		{"huge label", set(padded(t, 2, []Targets{{Boxes: box(1, 2, 10, 12), Labels: []int{1 << 30}}, ok})), "targets[0].Labels[0] = 1073741824"},
		{"negative label", set(rawBatch(2, ok, Targets{Boxes: box(1, 2, 10, 12), Labels: []int{-3}})), "targets[1].Labels[0] = -3 is negative"},
		{"NaN box", set(rawBatch(2, ok, Targets{Boxes: box(1, nan, 10, 12), Labels: []int{1}})), "targets[1].Boxes[0] = [1 NaN 10 12] is not finite"},
		{"infinite box", set(rawBatch(2, Targets{Boxes: box(1, 2, math.Inf(1), 12), Labels: []int{1}}, ok)), "targets[0].Boxes[0] = [1 2 +Inf 12] is not finite"},
		{"x2 < x1", set(rawBatch(2, ok, Targets{Boxes: box(3, 4, 20, 30, 10, 2, 5, 12), Labels: []int{1, 2}})), "targets[1].Boxes[1] = [10 2 5 12] has x2 <= x1"},
		{"y2 = y1", set(rawBatch(2, Targets{Boxes: box(1, 5, 3, 5), Labels: []int{1}}, ok)), "targets[0].Boxes[0] = [1 5 3 5] has x2 <= x1 or y2 <= y1"},
		{"one image for two", set(padded(t, 2, []Targets{ok})), "targets for 1 images, want 2"},
		{"three images for two", set(padded(t, 2, []Targets{ok, ok, ok})), "targets for 3 images, want 2"},
		{"zero TargetBatch", set(TargetBatch{}), "targets for 0 images, want 2"},
		{"count above MaxBoxes", set(func() TargetBatch { tb := rawBatch(2, ok, ok); tb.Counts[1] = 3; return tb }()), "TargetBatch.Counts[1] = 3 outside [0, 2]"},
		{"negative count", set(func() TargetBatch { tb := rawBatch(2, ok, ok); tb.Counts[0] = -1; return tb }()), "TargetBatch.Counts[0] = -1"},
		{"float32 TargetBatch.Boxes", set(func() TargetBatch {
			tb := rawBatch(2, ok, ok)
			tb.Boxes = denseOf(tensor.Float32, f64s(tb.Boxes), 2, 2, 4)
			return tb
		}()), "TargetBatch.Boxes"},
		{"TargetBatch.Boxes of another shape", set(func() TargetBatch {
			tb := rawBatch(2, ok, ok)
			tb.Boxes = newValue(f64s(tb.Boxes), 4, 1, 4)
			return tb
		}()), "TargetBatch.Boxes"},
		{"nil LossInputs", func() error { return (*LossInputs)(nil).Set(padded(t, 2, []Targets{ok, ok})) }, "LossInputs.Set"},
		{"sizes for 1 image", func() error { return lg.in.SetImageSizes([][2]int{{80, 112}}) }, "1 sizes for a batch of 2"},
		{"no sizes", func() error { return lg.in.SetImageSizes(nil) }, "0 sizes for a batch of 2"},
		{"zero height", func() error { return lg.in.SetImageSizes([][2]int{{80, 112}, {0, 112}}) }, "sizes[1] = [0 112] outside [1, [80 112]]"},
		{"zero width", func() error { return lg.in.SetImageSizes([][2]int{{80, 0}, {80, 112}}) }, "sizes[0] = [80 0]"},
		{"negative side", func() error { return lg.in.SetImageSizes([][2]int{{-80, 112}, {80, 112}}) }, "sizes[0] = [-80 112]"},
		{"height above the batch", func() error { return lg.in.SetImageSizes([][2]int{{80, 112}, {81, 112}}) }, "sizes[1] = [81 112] outside"},
		{"width above the batch", func() error { return lg.in.SetImageSizes([][2]int{{80, 113}, {80, 112}}) }, "sizes[0] = [80 113] outside"},
		{"images far smaller than the batch", func() error { return lg.in.SetImageSizes([][2]int{{20, 30}, {16, 112}}) }, "RoI pooling scale"},
		{"nil LossInputs sizes", func() error { return (*LossInputs)(nil).SetImageSizes([][2]int{{80, 112}, {80, 112}}) }, "nil LossInputs"},
	})
	// SetRandperm on a nil LossInputs is a no-op, not a panic.
	if err := safeCall(func() error { (*LossInputs)(nil).SetRandperm(nil); return nil }); err != nil {
		t.Errorf("SetRandperm on nil: %v", err)
	}

	// The failures left the graph usable: a good batch runs to finite
	// losses.
	if err := lg.in.SetImageSizes([][2]int{{80, 112}, {64, 100}}); err != nil {
		t.Fatal(err)
	}
	if err := lg.in.Set(padded(t, 2, rcnnTwoImages())); err != nil {
		t.Fatal(err)
	}
	losses, err := lg.run()
	if err != nil {
		t.Fatal(err)
	}
	checkFiniteLosses(t, "good batch after the errors", losses)
}

// checkFiniteLosses checks that the losses are finite and >= 0 and the
// total is their sum.
func checkFiniteLosses(t *testing.T, what string, l []float64) {
	t.Helper()
	for i, v := range l {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Errorf("%s: loss %d = %v, want finite and >= 0 (losses %v)", what, i, v, l)
		}
	}
	if sum := l[0] + l[1] + l[2] + l[3]; math.Abs(sum-l[4]) > 1e-6*math.Abs(sum) {
		t.Errorf("%s: total %v, the losses sum to %v", what, l[4], sum)
	}
}

// TestFasterRCNNRandpermErrors: a Randperm that is not a permutation of
// 0..n−1 (wrong length, a repeated or out-of-range index, nil) is an
// error, from Set for the RPN's draws and from the run for the box
// head's, never a panic or an out-of-range read.
func TestFasterRCNNRandpermErrors(t *testing.T) {
	identity := identityPerm
	// guard keeps the bad draws well defined for small n: randperm(0) is
	// the empty permutation, and a case that needs two indices makes one
	// out-of-range index of n = 1.
	guard := func(need int, f func(p []int) []int) func(n int) []int {
		return func(n int) []int {
			if n == 0 {
				return []int{}
			}
			if n < need {
				return []int{n}
			}
			return f(identity(n))
		}
	}
	bad := map[string]struct {
		perm func(n int) []int
		want string
	}{
		"short":    {func(n int) []int { return identity(n)[:n/2] }, "returned"},
		"long":     {func(n int) []int { return append(identity(n), 0) }, "returned"},
		"nil":      {func(n int) []int { return nil }, "returned 0 indices"},
		"repeated": {guard(2, func(p []int) []int { p[1] = 0; return p }), "is not a permutation"},
		"negative": {guard(1, func(p []int) []int { p[0] = -1; return p }), "is not a permutation"},
		"n":        {guard(1, func(p []int) []int { p[0] = len(p); return p }), "is not a permutation"},
		"huge":     {guard(1, func(p []int) []int { p[0] = math.MaxInt; return p }), "is not a permutation"},
		// Torch's sampler reads only the first k indices; the rest of a
		// non-permutation goes unnoticed unless checked.
		"repeated at tail":     {guard(2, func(p []int) []int { p[len(p)-1] = 0; return p }), "is not a permutation"},
		"out of range at tail": {guard(1, func(p []int) []int { p[len(p)-1] = len(p) + 5; return p }), "is not a permutation"},
	}
	// The sampler alone: 4 positives and 6 negatives, at most 2
	// positives and 4 samples in all.
	labels := []int{1, 0, 0, 2, 0, 1, 0, 0, 3, 0}
	s := BalancedPositiveNegativeSampler{BatchSizePerImage: 4, PositiveFraction: 0.5}
	for name, c := range bad {
		if name == "short" || name == "long" || name == "nil" {
			c.want = "randperm("
		}
		err := safeCall(func() error { _, _, err := s.Sample(labels, c.perm); return err })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Sample, randperm %s: error %v, want one containing %q", name, err, c.want)
		}
	}
	pos, neg, err := s.Sample(labels, identity)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(pos, neg) != "[true false false true false false false false false false] [false true true false false false false false false false]" {
		t.Errorf("identity draws: positives %v negatives %v", pos, neg)
	}

	m := tinyRCNN(t, tensor.Float64, 50, 20, 16)
	defer m.Close()
	lg := newRCNNLossGraph(t, m, 2, 80, 112)
	tb := padded(t, 2, rcnnTwoImages())
	for _, name := range []string{"short", "nil", "repeated", "negative", "n", "huge"} {
		c := bad[name]
		// The RPN's draws, in Set.
		lg.in.SetRandperm(c.perm)
		if err := safeCall(func() error { return lg.in.Set(tb) }); err == nil || !strings.Contains(err.Error(), "randperm(") {
			t.Errorf("Set, randperm %s: error %v, want the sampler's", name, err)
		}
		// The box head's draws, in the run: good draws for Set (two per
		// image), bad ones after.
		calls := 0
		lg.in.SetRandperm(func(n int) []int {
			calls++
			if calls <= 4 {
				return identity(n)
			}
			return c.perm(n)
		})
		if err := lg.in.Set(tb); err != nil {
			t.Fatalf("randperm %s: Set with good draws: %v", name, err)
		}
		if _, err := lg.run(); err == nil || !strings.Contains(err.Error(), "randperm(") {
			t.Errorf("run, randperm %s: error %v, want the sampler's", name, err)
		}
	}
	// The model's Config.Randperm, used when the inputs have none.
	lg.in.SetRandperm(nil)
	m.Config.Randperm = bad["repeated"].perm
	if err := safeCall(func() error { return lg.in.Set(tb) }); err == nil || !strings.Contains(err.Error(), "is not a permutation") {
		t.Errorf("Set, Config.Randperm repeated: error %v", err)
	}
	m.Config.Randperm = nil
	// And the model's own source again.
	if err := lg.in.Set(tb); err != nil {
		t.Fatal(err)
	}
	losses, err := lg.run()
	if err != nil {
		t.Fatal(err)
	}
	checkFiniteLosses(t, "model's draws after bad ones", losses)
}

// tinyRCNNWith is tinyRCNN (training counts 50, 20, 16) with its
// configuration edited before the model is made: Forward's graphs take
// the RPN's settings when they are built, so a change of Config.RPN after
// a first Forward would not be seen.
func tinyRCNNWith(t *testing.T, dt tensor.Dtype, edit func(c *FasterRCNNConfig)) *FasterRCNN {
	t.Helper()
	g0 := loadRCNNGoldens(t)[0]
	cfg := g0.config()
	cfg.Transform = NewGeneralizedRCNNTransform(80, 112)
	cfg.RPN.PreNMSTopNTrain, cfg.RPN.PostNMSTopNTrain = 50, 20
	cfg.RoIHeads.BatchSizePerImage = 16
	if edit != nil {
		edit(&cfg)
	}
	m, _, err := LoadFasterRCNN(filepath.Join("..", "testdata", "detection", g0.Checkpoint), cfg, dt, LoadOptions{ConvertDtype: dt == tensor.Float64})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// identityPerm is randperm(n) = 0, 1, …, n−1.
func identityPerm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// TestFasterRCNNNoProposals: an RPN ScoreThresh above every probability
// leaves no proposal: Forward gives every image no detection, with [0, 4]
// boxes and [0] scores, run after run; the training losses stay finite
// (the box head samples the ground-truth boxes, which torchvision adds to
// the proposals) and the RPN's are those with proposals.
func TestFasterRCNNNoProposals(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			images := []*tensor.Dense{rcnnImage(1, 40, 56, dt), rcnnImage(2, 60, 36, dt), rcnnImage(3, 23, 70, dt)}
			some := tinyRCNNWith(t, dt, func(c *FasterRCNNConfig) { c.Randperm = identityPerm })
			defer some.Close()
			none := tinyRCNNWith(t, dt, func(c *FasterRCNNConfig) { c.Randperm = identityPerm; c.RPN.ScoreThresh = 1.5 })
			defer none.Close()
			before, err := some.Forward(images)
			if err != nil {
				t.Fatal(err)
			}
			for i, d := range before {
				// Forward maps the boxes back to the image with float32
				// ratios, as torchvision: they may pass its border by that
				// rounding.
				checkDetections(t, fmt.Sprintf("image %d", i), d, some.Config.RoIHeads, some.Config.NumClasses,
					[2]int{images[i].Shape()[1], images[i].Shape()[2]}, 1e-6)
			}
			for run := 0; run < 2; run++ {
				var dets []Detections
				err := safeCall(func() (err error) { dets, err = none.Forward(images); return err })
				if err != nil {
					t.Errorf("run %d: %v", run, firstLine(err))
					break
				}
				if len(dets) != len(images) {
					t.Fatalf("%d images' detections for %d", len(dets), len(images))
				}
				for i, d := range dets {
					if len(d.Labels) != 0 || !d.Boxes.Shape().Eq(tensor.Shape{0, 4}) || !d.Scores.Shape().Eq(tensor.Shape{0}) || d.Boxes.Dtype() != dt {
						t.Errorf("run %d image %d: boxes %v %v, scores %v, labels %v; want none", run, i, d.Boxes.Shape(), d.Boxes.Dtype(), d.Scores.Shape(), d.Labels)
					}
				}
			}
			// No proposals in training either.
			tb := padded(t, 2, rcnnTwoImages())
			losses := func(m *FasterRCNN) ([]float64, error) {
				lg := newRCNNLossGraph(t, m, 2, 80, 112)
				if err := lg.in.Set(tb); err != nil {
					t.Fatal(err)
				}
				return lg.run()
			}
			with, err := losses(some)
			if err != nil {
				t.Fatal(err)
			}
			checkFiniteLosses(t, "with proposals", with)
			without, err := losses(none)
			if err != nil {
				t.Fatalf("training without proposals: %v", firstLine(err))
			}
			checkFiniteLosses(t, "without proposals", without)
			if without[0] == 0 {
				t.Errorf("without proposals: loss_classifier 0, want the ground-truth boxes' loss")
			}
			// The RPN's losses do not depend on the proposals.
			for i := 2; i < 4; i++ {
				if with[i] != without[i] {
					t.Errorf("RPN loss %d: %v with proposals, %v without", i, with[i], without[i])
				}
			}
		})
	}
}

// TestFasterRCNNForwardNoDetections: an image on which nothing is
// detected gets no detections ([0, 4] boxes), not a failure: every class
// probability at or below RoIHeads.ScoreThresh (a fresh model's are
// about 1/NumClasses), and PostNMSTopNTest 0 (allowed: counts >= 0),
// which leaves the box head no RoI.
func TestFasterRCNNForwardNoDetections(t *testing.T) {
	for name, edit := range map[string]func(c *FasterRCNNConfig){
		"RoIHeads ScoreThresh 0.99": func(c *FasterRCNNConfig) { c.RoIHeads.ScoreThresh = 0.99 },
		"PostNMSTopNTest 0":         func(c *FasterRCNNConfig) { c.RPN.PostNMSTopNTest = 0 },
	} {
		cfg := rcnnErrorsConfig()
		edit(&cfg)
		m, err := NewFasterRCNN(cfg, tensor.Float64, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatal(err)
		}
		var dets []Detections
		err = safeCall(func() (err error) {
			dets, err = m.Forward([]*tensor.Dense{rcnnImage(1, 40, 56, tensor.Float64), rcnnImage(2, 48, 30, tensor.Float64)})
			return err
		})
		m.Close()
		if err != nil {
			t.Errorf("%s: %v", name, firstLine(err))
			continue
		}
		if len(dets) != 2 {
			t.Fatalf("%s: %d images' detections, want 2", name, len(dets))
		}
		for i, d := range dets {
			if len(d.Labels) != 0 || !d.Boxes.Shape().Eq(tensor.Shape{0, 4}) || !d.Scores.Shape().Eq(tensor.Shape{0}) {
				t.Errorf("%s: image %d: %v %v %v, want no detection", name, i, d.Boxes.Shape(), d.Scores.Shape(), d.Labels)
			}
		}
	}
}

// TestFasterRCNNNoGroundTruth: images without any box train: the RPN's
// anchors and the box head's proposals are all background, so the box
// regression losses are 0 and the classification losses finite and
// positive; a batch mixing such an image with boxes too; and Set with
// boxes after it.
func TestFasterRCNNNoGroundTruth(t *testing.T) {
	m := tinyRCNN(t, tensor.Float64, 50, 20, 16)
	defer m.Close()
	lg := newRCNNLossGraph(t, m, 2, 80, 112)
	for name, c := range map[string]struct {
		tb      TargetBatch
		noBoxes bool
	}{
		"no boxes, MaxBoxes 0": {padded(t, 0, []Targets{{}, {}}), true},
		"no boxes, MaxBoxes 3": {padded(t, 3, []Targets{{}, {Boxes: newValue([]float64{}, 0, 4)}}), true},
		"one image of boxes":   {padded(t, 2, []Targets{{}, rcnnTwoImages()[0]}), false},
		"boxes":                {padded(t, 2, rcnnTwoImages()), false},
	} {
		if err := lg.in.Set(c.tb); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		l, err := lg.run()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkFiniteLosses(t, name, l)
		if c.noBoxes && (l[1] != 0 || l[3] != 0 || !(l[0] > 0) || !(l[2] > 0)) {
			t.Errorf("%s: losses %v, want box regressions 0 and classifications > 0", name, l)
		}
		if !c.noBoxes && !(l[1] > 0 && l[3] > 0) {
			t.Errorf("%s: losses %v, want box regressions > 0", name, l)
		}
	}
}

// TestFasterRCNNFloat32: a float32 model made by NewFasterRCNN runs
// Forward and trains to finite losses; a ground-truth box that is
// degenerate once rounded to float32 is Set's error.
func TestFasterRCNNFloat32(t *testing.T) {
	m, err := NewFasterRCNN(rcnnErrorsConfig(), tensor.Float32, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	images := []*tensor.Dense{rcnnImage(1, 40, 56, tensor.Float32), rcnnImage(2, 30, 30, tensor.Float32)}
	dets, err := m.Forward(images)
	if err != nil {
		t.Fatal(err)
	}
	if len(dets) != 2 {
		t.Fatalf("%d images' detections, want 2", len(dets))
	}
	cfg := m.Config.RoIHeads
	for i, d := range dets {
		if d.Boxes.Dtype() != tensor.Float32 || d.Scores.Dtype() != tensor.Float32 {
			t.Errorf("image %d: detections of dtype %v and %v, want float32", i, d.Boxes.Dtype(), d.Scores.Dtype())
		}
		checkDetections(t, fmt.Sprintf("image %d", i), d, cfg, 3, [2]int{images[i].Shape()[1], images[i].Shape()[2]}, 1e-6)
	}
	if _, err := m.Forward([]*tensor.Dense{rcnnImage(1, 40, 56, tensor.Float64)}); err == nil || !strings.Contains(err.Error(), "images[0] is float64, the model float32") {
		t.Errorf("float64 image for a float32 model: error %v", err)
	}
	lg := newRCNNLossGraph(t, m, 2, 64, 96)
	tb := padded(t, 2, []Targets{
		{Boxes: newValue([]float64{2, 3, 40, 45}, 1, 4), Labels: []int{1}},
		{Boxes: newValue([]float64{10, 4, 60, 50, 0, 0, 90, 60}, 2, 4), Labels: []int{2, 1}},
	})
	if err := lg.in.Set(tb); err != nil {
		t.Fatal(err)
	}
	l, err := lg.run()
	if err != nil {
		t.Fatal(err)
	}
	checkFiniteLosses(t, "float32", l)
	narrow := padded(t, 2, []Targets{{Boxes: newValue([]float64{1, 2, 1 + 1e-9, 12}, 1, 4), Labels: []int{1}}, {}})
	if err := lg.in.Set(narrow); err == nil || !strings.Contains(err.Error(), "targets[0].Boxes[0] = [1 2 1 12] in float32 has x2 <= x1") {
		t.Errorf("a box degenerate in float32: error %v", err)
	}
}
