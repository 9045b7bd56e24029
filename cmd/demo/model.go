package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Arch fixes the sizes of the few-shot digit classifier.
//
// The model, for a batch of B canvases [B, 1, S, S] and K boxes [K, 5]:
//
//	f      = tanh(conv3x3(canvas; Wf, bf))            [B, F, S, S]   DeformConv2d, zero offsets
//	crops  = RoIAlign(f, boxes)                       [K, F, P, P]   P = Crop
//	offset = conv3x3/2(crops; Wo, bo)                 [K, 18, Q, Q]  Q = (P+1)/2
//	mask   = sigmoid(conv3x3/2(crops; Wm, bm))        [K, 9, Q, Q]
//	h      = tanh(DeformConv2d v2(crops, offset, mask; Wd, bd))  [K, D, Q, Q]
//	logits = flatten(h) · Wc + bc                     [K, N]
//
// Every convolution is gops.DeformConv2d (Gorgonia's Conv2d cannot be
// differentiated twice); the loss is a log-softmax cross-entropy built from
// Exp, Sum, Log, HadamardProd and Sub, which are right at every order.
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
// ([B, 1, S, S]), boxes ([K, 5]) and onehot ([K, N] targets).
func (a Arch) BuildModel(theta gorgonia.Nodes, canvas, boxes, onehot *gorgonia.Node) (*Forward, error) {
	if len(theta) != numParams {
		return nil, fmt.Errorf("model: %d parameters, want %d", len(theta), numParams)
	}
	g := canvas.Graph()
	b := canvas.Shape()[0]
	k := boxes.Shape()[0]
	q := a.Q()
	same := gops.DeformConv2dOpts{Padding: [2]int{1, 1}}
	half := gops.DeformConv2dOpts{Padding: [2]int{1, 1}, Stride: [2]int{2, 2}}
	zeros := func(shape ...int) *gorgonia.Node {
		return gorgonia.Must(ad.Constant(g, tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float64))))
	}
	// A plain 3x3 convolution is DeformConv2d with zero offsets.
	f, err := gops.DeformConv2d(canvas, zeros(b, 18, a.Canvas, a.Canvas), theta[pFeatW], theta[pFeatB], nil, same)
	if err != nil {
		return nil, fmt.Errorf("feature conv: %w", err)
	}
	if f, err = gorgonia.Tanh(f); err != nil {
		return nil, err
	}
	crops, err := gops.RoIAlign(f, boxes, gops.RoIAlignOpts{OutputSize: [2]int{a.Crop, a.Crop}, SamplingRatio: 2, Aligned: true})
	if err != nil {
		return nil, fmt.Errorf("roi align: %w", err)
	}
	zq := zeros(k, 18, q, q)
	offset, err := gops.DeformConv2d(crops, zq, theta[pOffW], theta[pOffB], nil, half)
	if err != nil {
		return nil, fmt.Errorf("offset conv: %w", err)
	}
	mlog, err := gops.DeformConv2d(crops, zq, theta[pMaskW], theta[pMaskB], nil, half)
	if err != nil {
		return nil, fmt.Errorf("mask conv: %w", err)
	}
	mask, err := gorgonia.Sigmoid(mlog)
	if err != nil {
		return nil, err
	}
	h, err := gops.DeformConv2d(crops, offset, theta[pDefW], theta[pDefB], mask, half)
	if err != nil {
		return nil, fmt.Errorf("deformable conv: %w", err)
	}
	if h, err = gorgonia.Tanh(h); err != nil {
		return nil, err
	}
	flat, err := Reshape(h, k, a.Deform*q*q)
	if err != nil {
		return nil, err
	}
	logits, err := gops.MatMul(flat, theta[pClsW], false, false)
	if err != nil {
		return nil, err
	}
	if logits, err = gorgonia.BroadcastAdd(logits, theta[pClsB], nil, []byte{0}); err != nil {
		return nil, err
	}
	loss, err := CrossEntropy(logits, onehot)
	if err != nil {
		return nil, err
	}
	return &Forward{Loss: loss, Logits: logits, Crops: crops, Offset: offset, Mask: mask}, nil
}

// CrossEntropy is the mean over rows of -log softmax(logits)[target] for
// logits [K, N] and one-hot targets [K, N]:
//
//	(1/K) Σ_k ( log Σ_n exp(z_kn) - Σ_n y_kn z_kn )
//
// built from Exp, Sum along an axis, Log, HadamardProd, Sub, Sum and Mul by
// a constant, which are right at every derivative order (Gorgonia's SoftMax
// and LogSoftMax have no second derivative). The logits of this model stay
// small (tanh features, a fan-in scaled classifier), so the exponentials
// need no shift.
func CrossEntropy(logits, onehot *gorgonia.Node) (*gorgonia.Node, error) {
	k := logits.Shape()[0]
	e, err := gorgonia.Exp(logits)
	if err != nil {
		return nil, err
	}
	s, err := gorgonia.Sum(e, 1)
	if err != nil {
		return nil, err
	}
	lse, err := gorgonia.Log(s)
	if err != nil {
		return nil, err
	}
	yz, err := gorgonia.HadamardProd(onehot, logits)
	if err != nil {
		return nil, err
	}
	picked, err := gorgonia.Sum(yz, 1)
	if err != nil {
		return nil, err
	}
	d, err := gorgonia.Sub(lse, picked)
	if err != nil {
		return nil, err
	}
	total, err := gorgonia.Sum(d)
	if err != nil {
		return nil, err
	}
	return gorgonia.Mul(total, gorgonia.Must(ad.Constant(logits.Graph(), gorgonia.NewF64(1/float64(k)))))
}

// Reshape is ad.Reshape, a reshape that copies its input: Gorgonia's
// Reshape returns a view that the TapeMachine may overwrite in place
// (docs/GORGONIA.md, TapeMachine aliasing).
func Reshape(x *gorgonia.Node, to ...int) (*gorgonia.Node, error) { return ad.Reshape(x, to...) }
