package detection

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// stageOf is the oneStage of a test's detector.
func stageOf(t *testing.T, m detector) *oneStage {
	t.Helper()
	switch d := m.(type) {
	case *FCOS:
		return d.stage()
	case *RetinaNet:
		return d.stage()
	}
	t.Fatalf("%T is not a one-stage detector", m)
	return nil
}

// fusedMatchesBuild runs the runner's fused inference graph on images
// (at GOMAXPROCS 1, then 2 on the same graph) and Build's differentiable
// graph of separate ops on the same batch, and fails unless every head
// output of every level has the same bits.
func fusedMatchesBuild(t *testing.T, m detector, images []*tensor.Dense) {
	t.Helper()
	s := stageOf(t, m)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var fused [][][]uint64 // [procs][output][element]
	var il ImageList
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		var kinds [][]*tensor.Dense
		var err error
		if il, kinds, _, err = s.rawOutputs(images); err != nil {
			t.Fatal(err)
		}
		var outs [][]uint64
		for _, levels := range kinds {
			for _, d := range levels {
				outs = append(outs, bitsOfDense(d))
			}
		}
		fused = append(fused, outs)
	}
	fusedOps := 0
	for _, rg := range s.run.graphs {
		for _, n := range rg.x.Graph().AllNodes() {
			if n.Op() != nil && strings.Contains(n.Op().String(), "Fused") {
				fusedOps++
			}
		}
	}
	if fusedOps == 0 {
		t.Fatal("the runner's graph has no fused op")
	}
	gr := gorgonia.NewGraph()
	x := gorgonia.NewTensor(gr, il.Tensors.Dtype(), 4, gorgonia.WithShape(il.Tensors.Shape()...), gorgonia.WithValue(il.Tensors), gorgonia.WithName("x"))
	_, heads, err := m.Build(x, false)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*gorgonia.Node
	for _, levels := range [][]*gorgonia.Node{heads.ClsLogits, heads.BboxRegression, heads.BboxCtrness} {
		nodes = append(nodes, levels...)
	}
	vals := make([]gorgonia.Value, len(nodes))
	for i, n := range nodes {
		gorgonia.Read(n, &vals[i])
	}
	vm, err := ad.NewTapeMachine(gr)
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	if err := ad.RunAll(vm); err != nil {
		t.Fatal(err)
	}
	for p, outs := range fused {
		if len(outs) != len(vals) {
			t.Fatalf("%d fused outputs, Build's graph %d", len(outs), len(vals))
		}
		for i, v := range vals {
			want := bitsOfDense(v.(*tensor.Dense))
			for j := range want {
				if outs[i][j] != want[j] {
					t.Fatalf("GOMAXPROCS %d: head output %d element %d: fused bits %x, Build's %x", p+1, i, j, outs[i][j], want[j])
				}
			}
		}
	}
}

// bitsOfDense is d's elements' IEEE bits.
func bitsOfDense(d *tensor.Dense) []uint64 {
	var out []uint64
	switch v := d.Data().(type) {
	case []float32:
		for _, x := range v {
			out = append(out, uint64(math.Float32bits(x)))
		}
	case []float64:
		for _, x := range v {
			out = append(out, math.Float64bits(x))
		}
	}
	return out
}

// TestFusedGoldenModels: on the golden models (FCOS, RetinaNet v1 and v2
// with their tiny ResNet-FPN backbones), float32 and float64, the
// runner's fused graph gives Build's head outputs bitwise.
func TestFusedGoldenModels(t *testing.T) {
	for _, g := range loadModelGoldens(t) {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", g.Model, dt), func(t *testing.T) {
				m := g.load(t, dt)
				defer m.Close()
				fusedMatchesBuild(t, m, g.images(dt))
			})
		}
	}
}

// TestFusedResNet18: FCOS, RetinaNet v1 and v2 (BatchNorm2d in eval
// mode, GroupNorm heads) on a random ResNet-18-FPN
// (every norm's buffers and every bias drawn at random, so that the
// affine steps are not the identity) on two images of different sizes
// (padded into one batch), float32 and float64: the fused graph gives
// Build's head outputs bitwise.
func TestFusedResNet18(t *testing.T) {
	if testing.Short() {
		t.Skip("a ResNet-18 model: -short skips it")
	}
	for _, kind := range []string{"fcos", "retinanet", "retinanet_v2"} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			t.Run(fmt.Sprintf("%s/%v", kind, dt), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(5, 6))
				var m detector
				var err error
				tr := NewGeneralizedRCNNTransform(96, 128)
				if kind == "fcos" {
					cfg := FCOSResNet50FPN(5)
					cfg.Backbone.Body, cfg.Transform = ResNet18(), tr
					m, err = NewFCOS(cfg, dt, rng)
				} else {
					cfg, body := RetinaNetResNet50FPN(5), ResNet18()
					if kind == "retinanet_v2" {
						cfg = RetinaNetResNet50FPNV2(5)
						body.NormLayer = BatchNorm2d
						cfg.Backbone.ExtraBlocks = LastLevelP6P7{InChannels: 512, OutChannels: 256}
					}
					cfg.Backbone.Body, cfg.Transform = body, tr
					m, err = NewRetinaNet(cfg, dt, rng)
				}
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				randomizeVectors(t, m.Weights(), rng)
				images := []*tensor.Dense{randomImage(dt, 3, 90, 120, rng), randomImage(dt, 3, 100, 77, rng)}
				fusedMatchesBuild(t, m, images)
			})
		}
	}
}

// randomizeVectors draws every 1-D tensor of w (biases, norms' weights,
// biases and running means N(0, 0.5²), running variances U(0.2, 2)).
func randomizeVectors(t *testing.T, w *Weights, rng *rand.Rand) {
	for _, p := range []interface {
		Names() []string
	}{w.Params, w.Frozen} {
		for _, name := range p.Names() {
			v, err := w.Value(name)
			if err != nil {
				t.Fatal(err)
			}
			if v.Dims() != 1 {
				continue
			}
			for i := 0; i < v.Shape()[0]; i++ {
				x := 0.5 * rng.NormFloat64()
				if strings.HasSuffix(name, "running_var") {
					x = 0.2 + 1.8*rng.Float64()
				}
				if err := v.SetAt(castTo(v.Dtype(), x), i); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// castTo is x as a value of dtype dt.
func castTo(dt tensor.Dtype, x float64) any {
	if dt == tensor.Float32 {
		return float32(x)
	}
	return x
}

// randomImage is a [c, h, w] image of U(0, 1) values.
func randomImage(dt tensor.Dtype, c, h, w int, rng *rand.Rand) *tensor.Dense {
	data := make([]float64, c*h*w)
	for i := range data {
		data[i] = rng.Float64()
	}
	if dt == tensor.Float32 {
		f := make([]float32, len(data))
		for i, v := range data {
			f[i] = float32(v)
		}
		return tensor.New(tensor.WithShape(c, h, w), tensor.WithBacking(f))
	}
	return tensor.New(tensor.WithShape(c, h, w), tensor.WithBacking(data))
}

// TestFusedOpsHaveNoGradient: asking the fused ops for a gradient is an
// error naming Build.
func TestFusedOpsHaveNoGradient(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 32, 4, 4), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	wt := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(32, 32, 3, 3), gorgonia.WithName("w"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	b := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(32), gorgonia.WithName("b"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	y, err := fusedConv(x, wt, b, nn.Conv2dOpts{Padding: [2]int{1, 1}}, nil, nil, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	z, err := groupNormReLU(y, b, b, 32, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []*gorgonia.Node{y, z} {
		cost, err := gorgonia.Sum(out)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ad.Grad(cost, x); err == nil || !strings.Contains(err.Error(), "Build") {
			t.Errorf("Grad through %v: error %v, want one naming Build", out.Op(), err)
		}
	}
}

// TestFusedFPNBatchNorm: a BackboneWithFPN with FPNBatchNorm (Faster
// R-CNN v2's) on a small BatchNorm2d ResNet, its norms' buffers drawn at
// random: the fused inference graph (each lateral convolution, its norm's
// affine step and the top-down sum one fusedConv) gives Forward's eval
// maps bitwise, float32 and float64.
func TestFusedFPNBatchNorm(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		rng := rand.New(rand.NewPCG(5, 6))
		b := BackboneWithFPN{Body: ResNet{Block: BasicBlock, Layers: []int{1, 1, 1, 1}, StemWidth: 8,
			Planes: []int{8, 8, 16, 16}, NormLayer: BatchNorm2d, Eps: 1e-5},
			TrainableLayers: 3, ReturnedLayers: []int{1, 2, 3, 4}, OutChannels: 16, FPNBatchNorm: true}
		w, err := NewWeights(dt)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Init(w, "backbone", rng); err != nil {
			t.Fatal(err)
		}
		randomizeVectors(t, w, rng)
		img := tensor.New(tensor.Of(dt), tensor.WithShape(2, 3, 60, 44))
		for i := range img.Shape().TotalSize() {
			if err := img.SetAt(castTo(dt, rng.Float64()), i/(3*60*44), i/(60*44)%3, i/44%60, i%44); err != nil {
				t.Fatal(err)
			}
		}
		run := func(fused bool) [][]uint64 {
			g := gorgonia.NewGraph()
			x := gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(img.Shape()...), gorgonia.WithValue(img), gorgonia.WithName("x"))
			var maps []*gorgonia.Node
			var err error
			if fused {
				maps, _, err = b.forwardFused(w, "backbone", x)
			} else {
				maps, _, err = b.Forward(w, "backbone", x, false)
			}
			if err != nil {
				t.Fatal(err)
			}
			vals := make([]gorgonia.Value, len(maps))
			for i, n := range maps {
				gorgonia.Read(n, &vals[i])
			}
			vm, err := ad.NewTapeMachine(g)
			if err != nil {
				t.Fatal(err)
			}
			defer vm.Close()
			if err := ad.RunAll(vm); err != nil {
				t.Fatal(err)
			}
			out := make([][]uint64, len(vals))
			for i, v := range vals {
				out[i] = bitsOfDense(v.(*tensor.Dense))
			}
			return out
		}
		fused, plain := run(true), run(false)
		for i := range plain {
			for j := range plain[i] {
				if fused[i][j] != plain[i][j] {
					t.Fatalf("%v: map %d element %d: fused bits %x, Forward's %x", dt, i, j, fused[i][j], plain[i][j])
				}
			}
		}
	}
}

// TestFusedConvFCHead: FastRCNNConvFCHead's inference graph (each
// convolution with its norm's affine step, or its bias, and its ReLU one
// fusedConv) gives Forward's eval result bitwise, with and without
// norms, float32 and float64, its norms' buffers drawn at random.
func TestFusedConvFCHead(t *testing.T) {
	for _, bn := range []bool{true, false} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			rng := rand.New(rand.NewPCG(7, 8))
			h := FastRCNNConvFCHead{InputSize: [3]int{6, 5, 5}, ConvLayers: []int{8, 4}, FCLayers: []int{7}, BatchNorm: bn}
			w, err := NewWeights(dt)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Init(w, "head", rng); err != nil {
				t.Fatal(err)
			}
			randomizeVectors(t, w, rng)
			img := tensor.New(tensor.Of(dt), tensor.WithShape(3, 6, 5, 5))
			for i := range img.Shape().TotalSize() {
				if err := img.SetAt(castTo(dt, rng.Float64()-0.5), i/150, i/25%6, i/5%5, i%5); err != nil {
					t.Fatal(err)
				}
			}
			run := func(fused bool) []float64 {
				g := gorgonia.NewGraph()
				x := gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(img.Shape()...), gorgonia.WithValue(img), gorgonia.WithName("x"))
				var y *gorgonia.Node
				var err error
				if fused {
					y, err = h.forwardFused(w, "head", x)
				} else {
					y, err = h.Forward(w, "head", x, false)
				}
				if err != nil {
					t.Fatal(err)
				}
				vals, err := graphtest.Eval(g, y)
				if err != nil {
					t.Fatal(err)
				}
				return vals[0] // (float32 widened exactly, zeros' signs kept)
			}
			fused, plain := run(true), run(false)
			nonzero := 0
			for j := range plain {
				if math.Float64bits(fused[j]) != math.Float64bits(plain[j]) {
					t.Fatalf("norms %v %v: element %d: fused %v, Forward's %v", bn, dt, j, fused[j], plain[j])
				}
				if plain[j] != 0 {
					nonzero++
				}
			}
			if nonzero == 0 {
				t.Fatalf("norms %v %v: every output is 0", bn, dt)
			}
		}
	}
}
