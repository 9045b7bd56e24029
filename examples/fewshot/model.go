package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"github.com/gops-dev/gops/detection"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NumClasses is the number of digit classes: a class per digit, the
// label of a box being its digit (0–5 the base classes, 6–9 the novel).
// FCOS has these classes; Faster R-CNN has one more, its background class
// 0, and labels a digit d as class d+1 (Model.Offset).
const NumClasses = 10

// The -model values.
const (
	ModelFCOS       = "fcos"
	ModelFasterRCNN = "fasterrcnn"
)

// Detector is what the example needs of a detection model: its training
// losses and weights (detection.Trainable, which detection.NewMAMLTask
// takes), its detections, and Close. *detection.FCOS and
// *detection.FasterRCNN are Detectors.
type Detector interface {
	detection.Trainable
	Forward(images []*tensor.Dense) ([]detection.Detections, error)
	Close() error
}

// Model is the example's detector with what differs between the models:
// its name, its transform, and the class of a digit.
type Model struct {
	Detector
	Name      string
	Transform detection.GeneralizedRCNNTransform
	// Offset is the model's class of the digit 0, that of digit d being
	// d + Offset: 0 for FCOS, 1 for Faster R-CNN (its class 0 is the
	// background).
	Offset int
}

// classes turns a box labelling by digit into one by the model's class.
func (m *Model) classes(digit func(int) int) func(int) int {
	if m.Offset == 0 {
		return digit
	}
	return func(i int) int { return digit(i) + m.Offset }
}

// Forward is the Detector's detections with their labels as digits.
func (m *Model) Forward(images []*tensor.Dense) ([]detection.Detections, error) {
	dets, err := m.Detector.Forward(images)
	if err != nil || m.Offset == 0 {
		return dets, err
	}
	for i, d := range dets {
		labels := make([]int, len(d.Labels))
		for j, l := range d.Labels {
			labels[j] = l - m.Offset
		}
		dets[i].Labels = labels
	}
	return dets, nil
}

// NewDetector is the example's detector in dtype dt, c.Model's: FCOS
// (detectorConfig) or Faster R-CNN (fasterRCNNConfig), its weights drawn from
// rng.
func NewDetector(c Config, dt tensor.Dtype, rng *rand.Rand) (*Model, error) {
	switch c.Model {
	case ModelFCOS, "":
		cfg := detectorConfig(c)
		m, err := detection.NewFCOS(cfg, dt, rng)
		if err != nil {
			return nil, err
		}
		return &Model{Detector: m, Name: "FCOS", Transform: cfg.Transform}, nil
	case ModelFasterRCNN:
		cfg := fasterRCNNConfig(c)
		m, err := detection.NewFasterRCNN(cfg, dt, rng)
		if err != nil {
			return nil, err
		}
		return &Model{Detector: m, Name: "Faster R-CNN", Transform: cfg.Transform, Offset: 1}, nil
	}
	return nil, fmt.Errorf("unknown model %q (want %s or %s)", c.Model, ModelFCOS, ModelFasterRCNN)
}

// smallResNet is both detectors' ResNet: BasicBlock, one block a stage, widths
// w, w, 2w, 2w after a stem of w; FrozenBatchNorm2d.
func smallResNet(w int) detection.ResNet {
	return detection.ResNet{Block: detection.BasicBlock, Layers: []int{1, 1, 1, 1},
		StemWidth: w, Planes: []int{w, w, 2 * w, 2 * w}, NormLayer: detection.FrozenBatchNorm2d}
}

// detectorConfig is the example's FCOS: torchvision's FCOS on a small
// ResNet (smallResNet; every stage trainable) with a 32-channel FPN (P3–P5 and
// P6, P7), head towers of one convolution, no resizing of the
// canvas-sized images, and a score threshold of 0.05 (COCO-style
// evaluation wants the low-scoring detections too).
func detectorConfig(c Config) detection.FCOSConfig {
	cfg := detection.FCOSResNet50FPN(NumClasses)
	cfg.Backbone.Body = smallResNet(c.Width)
	cfg.Backbone.TrainableLayers = 5
	cfg.Backbone.OutChannels = 32
	cfg.Backbone.ExtraBlocks = detection.LastLevelP6P7{InChannels: 32, OutChannels: 32}
	cfg.NumConvs = 1
	s := float64(c.Scene.Canvas)
	cfg.Transform = detection.NewGeneralizedRCNNTransform(s, s)
	cfg.Postprocess.ScoreThresh = 0.05
	return cfg
}

// fasterRCNNConfig is the example's Faster R-CNN: torchvision's Faster
// R-CNN on FCOS's ResNet (smallResNet; every stage trainable), stages 1–4 into a
// 32-channel FPN with LastLevelMaxPool (P2–P6, strides 4–64), anchors of
// sizes 8, 16, 32, 64, 128 (one a level) and aspect ratios 0.5, 1, 2 for
// digits of 16–24 pixels, the RPN's top 300 a level before NMS and 100
// after (training and test), a 64-wide TwoMLPHead, 64 box-head samples
// an image, no resizing, and torchvision's box score threshold 0.05. The
// samplers draw from a source seeded by c.Seed.
func fasterRCNNConfig(c Config) detection.FasterRCNNConfig {
	cfg := detection.FasterRCNNResNet50FPN(NumClasses + 1)
	cfg.Backbone.Body = smallResNet(c.Width)
	cfg.Backbone.TrainableLayers = 5
	cfg.Backbone.ReturnedLayers = []int{1, 2, 3, 4}
	cfg.Backbone.OutChannels = 32
	cfg.Backbone.ExtraBlocks = detection.LastLevelMaxPool{}
	s := float64(c.Scene.Canvas)
	cfg.Transform = detection.NewGeneralizedRCNNTransform(s, s)
	cfg.AnchorGenerator = detection.AnchorGenerator{}
	for _, size := range []float64{8, 16, 32, 64, 128} {
		cfg.AnchorGenerator.Sizes = append(cfg.AnchorGenerator.Sizes, []float64{size})
		cfg.AnchorGenerator.AspectRatios = append(cfg.AnchorGenerator.AspectRatios, []float64{0.5, 1, 2})
	}
	cfg.RPN.PreNMSTopNTrain, cfg.RPN.PreNMSTopNTest = 300, 300
	cfg.RPN.PostNMSTopNTrain, cfg.RPN.PostNMSTopNTest = 100, 100
	cfg.Representation = 64
	cfg.RoIHeads.BatchSizePerImage = 64
	cfg.RoIHeads.ScoreThresh = 0.05
	cfg.Randperm = rand.New(rand.NewPCG(c.Seed, 4)).Perm
	return cfg
}

// images is a scene's canvases as the detector's images: [3, S, S] each
// in dtype dt, the grey plane in all three channels.
func images(sc *scenes.Scene, dt tensor.Dtype) []*tensor.Dense {
	s := sc.Canvas.Shape()
	side := s[2] * s[3]
	grey := sc.Canvas.Data().([]float64)
	out := make([]*tensor.Dense, s[0])
	for b := range out {
		plane := grey[b*side : (b+1)*side]
		if dt == tensor.Float32 {
			data := make([]float32, 3*side)
			for i, v := range plane {
				data[i], data[side+i], data[2*side+i] = float32(v), float32(v), float32(v)
			}
			out[b] = tensor.New(tensor.WithShape(3, s[2], s[3]), tensor.WithBacking(data))
			continue
		}
		data := make([]float64, 3*side)
		for c := 0; c < 3; c++ {
			copy(data[c*side:], plane)
		}
		out[b] = tensor.New(tensor.WithShape(3, s[2], s[3]), tensor.WithBacking(data))
	}
	return out
}

// targets is a scene's ground truth per canvas: its boxes, labelled by
// label(i) for box i.
func targets(sc *scenes.Scene, label func(i int) int) []detection.Targets {
	n := sc.Canvas.Shape()[0]
	rows := sc.Boxes.Data().([]float64)
	boxes := make([][]float64, n)
	out := make([]detection.Targets, n)
	for i := range sc.Labels {
		r := rows[5*i : 5*i+5]
		b := int(r[0])
		boxes[b] = append(boxes[b], r[1:]...)
		out[b].Labels = append(out[b].Labels, label(i))
	}
	for b := range out {
		out[b].Boxes = tensor.New(tensor.WithShape(len(boxes[b])/4, 4), tensor.WithBacking(append([]float64(nil), boxes[b]...)))
		if len(boxes[b]) == 0 {
			out[b].Boxes = nil
		}
	}
	return out
}

// byDigit labels each box with its digit.
func byDigit(sc *scenes.Scene) func(int) int { return func(i int) int { return sc.Digits[i] } }

// groundTruth is targets as detection.Evaluate takes them.
func groundTruth(ts []detection.Targets) []detection.GroundTruth {
	out := make([]detection.GroundTruth, len(ts))
	for i, t := range ts {
		out[i] = detection.GroundTruth{Boxes: t.Boxes, Labels: t.Labels}
	}
	return out
}

// LossGraph is a training graph of the detector for batches of a fixed
// number of canvases: the model's losses, their gradients w.r.t. the
// trainable weights, and a machine.
type LossGraph struct {
	m      *Model
	batch  int
	max    int // ground-truth boxes per canvas at most (PerCanvas)
	x      *gorgonia.Node
	inputs *detection.LossInputs
	grads  *nn.Grads
	total  gorgonia.Value
	vm     gorgonia.VM
}

// NewLossGraph builds m's training graph for batch canvases of side s
// holding at most maxBoxes digits each.
func NewLossGraph(m *Model, batch, s, maxBoxes int) (*LossGraph, error) {
	dt := m.Weights().Dtype()
	g := gorgonia.NewGraph()
	ad.ReuseResults(g, true)
	lg := &LossGraph{m: m, batch: batch, max: maxBoxes,
		x: gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(batch, 3, s, s), gorgonia.WithName("x"))}
	var losses *detection.Losses
	var err error
	if lg.inputs, losses, err = m.Loss(lg.x); err != nil {
		return nil, err
	}
	if lg.grads, err = m.Weights().Params.Grad(losses.Total); err != nil {
		return nil, err
	}
	gorgonia.Read(losses.Total, &lg.total)
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		return nil, err
	}
	lg.vm = vm
	return lg, nil
}

// Run computes the loss of the scene (boxes labelled by the digit
// label(i), the model's class of it in the loss) and its gradients
// (LossGraph.Grads) at the detector's current weights.
func (lg *LossGraph) Run(sc *scenes.Scene, label func(int) int) (float64, error) {
	if n := sc.Canvas.Shape()[0]; n != lg.batch {
		return 0, fmt.Errorf("a scene of %d canvases for a graph of %d", n, lg.batch)
	}
	il, err := lg.m.Transform.Transform(images(sc, lg.x.Dtype()))
	if err != nil {
		return 0, err
	}
	tb, err := detection.PadTargets(targets(sc, lg.m.classes(label)), lg.max)
	if err != nil {
		return 0, err
	}
	if err := lg.inputs.Set(tb); err != nil {
		return 0, err
	}
	if err := gorgonia.Let(lg.x, il.Tensors); err != nil {
		return 0, err
	}
	lg.vm.Reset()
	if err := ad.RunAll(lg.vm); err != nil {
		return 0, err
	}
	return scalar(lg.total)
}

// replay gives the graph's samplers (Faster R-CNN's; FCOS draws nothing)
// a fresh source seeded by seed, as MetaGraph.replay.
func (lg *LossGraph) replay(seed uint64) {
	lg.inputs.SetRandperm(rand.New(rand.NewPCG(seed, 8)).Perm)
}

// Grads are the gradients of the last Run, in Weights().Params' order.
func (lg *LossGraph) Grads() []tensor.Tensor { return lg.grads.Values() }

// Close releases the machine.
func (lg *LossGraph) Close() error { return lg.vm.Close() }

// scalar is a scalar value as float64.
func scalar(v gorgonia.Value) (float64, error) {
	switch x := v.Data().(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	}
	return 0, fmt.Errorf("the loss is %T, not a float scalar", v.Data())
}
