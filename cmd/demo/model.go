package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Arch fixes the sizes of the few-shot digit classifier.
//
// The model, for a batch of B canvases [B, 1, S, S] and K boxes [K, 5]:
//
//	f      = tanh(conv3x3(canvas; Wf, bf))            [B, F, S, S]
//	crops  = RoIAlign(f, boxes)                       [K, F, P, P]   P = Crop
//	offset = conv3x3/2(crops; Wo, bo)                 [K, 18, Q, Q]  Q = (P+1)/2
//	mask   = sigmoid(conv3x3/2(crops; Wm, bm))        [K, 9, Q, Q]
//	h      = tanh(DeformConv2d v2(crops, offset, mask; Wd, bd))  [K, D, Q, Q]
//	logits = flatten(h) · Wc + bc                     [K, N]
//	loss   = cross_entropy(logits, labels)            scalar
//
// The plain convolutions are nn.Conv2d, the activations nn.Tanh and
// nn.Sigmoid, flatten is nn.Flatten and the loss is nn.CrossEntropy (the
// mean over the K boxes of −log softmax(logits)[label]); with
// gops.RoIAlign, gops.DeformConv2d and nn.MatMul, every op is
// differentiable to every order, so ad.Grad can differentiate the loss's
// gradient again (MAML's meta-gradient).
type Arch struct {
	Ways   int // N: classes per task, the classifier's outputs
	Canvas int // S: canvas side in pixels
	Feat   int // F: feature channels
	Crop   int // P: RoIAlign output side
	Deform int // D: channels of the deformable convolution
}

// Q is the side of the deformable convolution's output.
func (a Arch) Q() int { return (a.Crop-1)/2 + 1 }

// Parameter indices in a parameter list.
const (
	pFeatW = iota
	pFeatB
	pOffW
	pOffB
	pMaskW
	pMaskB
	pDefW
	pDefB
	pClsW
	pClsB
	numParams
)

// paramNames name the parameters for printing.
var paramNames = [numParams]string{
	"feature conv W", "feature conv b", "offset conv W", "offset conv b", "mask conv W", "mask conv b",
	"deform conv W", "deform conv b", "classifier W", "classifier b",
}

// ParamShapes lists the shape of each parameter.
func (a Arch) ParamShapes() [numParams]tensor.Shape {
	const k = 9 // 3x3 kernel positions
	return [numParams]tensor.Shape{
		{a.Feat, 1, 3, 3}, {a.Feat},
		{2 * k, a.Feat, 3, 3}, {2 * k},
		{k, a.Feat, 3, 3}, {k},
		{a.Deform, a.Feat, 3, 3}, {a.Deform},
		{a.Deform * a.Q() * a.Q(), a.Ways}, {1, a.Ways},
	}
}

// Params are the model's parameters, each flat in row-major order.
type Params [numParams][]float64

// Clone returns a deep copy.
func (p Params) Clone() Params {
	var q Params
	for i := range p {
		q[i] = append([]float64(nil), p[i]...)
	}
	return q
}

// AddScaled returns p + s·d.
func (p Params) AddScaled(s float64, d Params) Params {
	q := p.Clone()
	for i := range q {
		for j := range q[i] {
			q[i][j] += s * d[i][j]
		}
	}
	return q
}

// Dot is Σ p·d over every parameter.
func (p Params) Dot(d Params) float64 {
	var s float64
	for i := range p {
		for j := range p[i] {
			s += p[i][j] * d[i][j]
		}
	}
	return s
}

// Norm is the Euclidean norm over every parameter.
func (p Params) Norm() float64 { return math.Sqrt(p.Dot(p)) }

// InitParams draws the starting point: fan-in scaled normal weights for the
// feature, deformable and classifier layers, zero biases, and small
// weights for the offset and mask predictors, so that the model starts
// close to a plain convolution with mask 1/2 (as torchvision's DCNv2
// recipe) but off the integer sample positions, where the offset
// derivative is one-sided.
func (a Arch) InitParams(rng *rand.Rand) Params {
	shapes := a.ParamShapes()
	var p Params
	for i, s := range shapes {
		p[i] = make([]float64, s.TotalSize())
		var std float64
		switch i {
		case pFeatW, pDefW:
			std = 1 / math.Sqrt(float64(s[1]*s[2]*s[3]))
		case pClsW:
			std = 1 / math.Sqrt(float64(s[0]))
		case pOffW, pMaskW:
			std = 0.02
		case pOffB:
			std = 0.05
		}
		for j := range p[i] {
			p[i][j] = std * rng.NormFloat64()
		}
	}
	return p
}

// Forward is the model's graph on one set of boxes.
type Forward struct {
	Loss   *gorgonia.Node // mean cross-entropy over the K boxes
	Logits *gorgonia.Node // [K, N]
	Crops  *gorgonia.Node // [K, F, P, P], RoIAlign of the feature map
	Offset *gorgonia.Node // [K, 18, Q, Q] predicted offsets, (dy, dx) per kernel position
	Mask   *gorgonia.Node // [K, 9, Q, Q] predicted modulation in (0, 1)
}

// BuildModel adds the model with parameters theta to the graph of canvas
// ([B, 1, S, S]), boxes ([K, 5]) and target (tensor.Int [K], the task
// label of each box).
func (a Arch) BuildModel(theta gorgonia.Nodes, canvas, boxes, target *gorgonia.Node) (*Forward, error) {
	if len(theta) != numParams {
		return nil, fmt.Errorf("model: %d parameters, want %d", len(theta), numParams)
	}
	same := nn.Conv2dOpts{Padding: [2]int{1, 1}}
	half := nn.Conv2dOpts{Padding: [2]int{1, 1}, Stride: [2]int{2, 2}}
	f, err := nn.Conv2d(canvas, theta[pFeatW], theta[pFeatB], same)
	if err != nil {
		return nil, fmt.Errorf("feature conv: %w", err)
	}
	if f, err = nn.Tanh(f); err != nil {
		return nil, err
	}
	crops, err := gops.RoIAlign(f, boxes, gops.RoIAlignOpts{OutputSize: [2]int{a.Crop, a.Crop}, SamplingRatio: 2, Aligned: true})
	if err != nil {
		return nil, fmt.Errorf("roi align: %w", err)
	}
	offset, err := nn.Conv2d(crops, theta[pOffW], theta[pOffB], half)
	if err != nil {
		return nil, fmt.Errorf("offset conv: %w", err)
	}
	mlog, err := nn.Conv2d(crops, theta[pMaskW], theta[pMaskB], half)
	if err != nil {
		return nil, fmt.Errorf("mask conv: %w", err)
	}
	mask, err := nn.Sigmoid(mlog)
	if err != nil {
		return nil, err
	}
	h, err := gops.DeformConv2d(crops, offset, theta[pDefW], theta[pDefB], mask, gops.DeformConv2dOpts{Padding: half.Padding, Stride: half.Stride})
	if err != nil {
		return nil, fmt.Errorf("deformable conv: %w", err)
	}
	if h, err = nn.Tanh(h); err != nil {
		return nil, err
	}
	flat, err := nn.Flatten(h, 1) // [K, D·Q·Q]
	if err != nil {
		return nil, err
	}
	logits, err := nn.MatMul(flat, theta[pClsW], false, false)
	if err != nil {
		return nil, err
	}
	if logits, err = gorgonia.BroadcastAdd(logits, theta[pClsB], nil, []byte{0}); err != nil {
		return nil, err
	}
	loss, err := nn.CrossEntropy(logits, target, nn.CrossEntropyOpts{})
	if err != nil {
		return nil, err
	}
	return &Forward{Loss: loss, Logits: logits, Crops: crops, Offset: offset, Mask: mask}, nil
}
