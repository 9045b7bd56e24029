package detection

import (
	"fmt"
	"math/rand/v2"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// oneStage is what FCOS and RetinaNet share: the weights, the backbone,
// the transform, the anchors, and the forward-only graphs of the backbone
// and head (one per padded batch shape); the model's head and its
// postprocessing on values are the two functions.
type oneStage struct {
	name      string
	weights   *Weights
	backbone  BackboneWithFPN
	transform GeneralizedRCNNTransform
	anchors   AnchorGenerator
	// head builds the head on the FPN's levels; fused: the inference
	// graph (train false).
	head func(w *Weights, features []*gorgonia.Node, train, fused bool) (*HeadOutputs, error)
	// postprocess selects the detections of the per-level head outputs
	// (outs[k][l]: output k of HeadOutputs' order, level l).
	postprocess func(outs [][]*tensor.Dense, anchors []*tensor.Dense, imageSizes [][2]int) ([]Detections, error)
	// upgrades are the prefixes of RetinaNet heads whose version-1 keys
	// a checkpoint load upgrades.
	upgrades []string
	run      *runner
}

// init makes the weights of dtype dt and the runner; the parts' Init
// methods add the tensors, drawn from rng.
func (m *oneStage) init(dt tensor.Dtype, rng *rand.Rand, headInit func(*Weights, *rand.Rand) error) error {
	if rng == nil {
		return fmt.Errorf("detection: New%s: rng is nil", m.name)
	}
	w, err := NewWeights(dt)
	if err != nil {
		return fmt.Errorf("detection: New%s: %w", m.name, err)
	}
	if err := m.backbone.Init(w, "backbone", rng); err != nil {
		return fmt.Errorf("detection: New%s: %w", m.name, err)
	}
	if err := headInit(w, rng); err != nil {
		return fmt.Errorf("detection: New%s: %w", m.name, err)
	}
	m.weights = w
	m.run = newRunner(func(x *gorgonia.Node) ([]*gorgonia.Node, any, error) {
		features, heads, err := m.build(x, false, true)
		if err != nil {
			return nil, nil, err
		}
		grids := make([][2]int, len(features))
		for l, f := range features {
			s := f.Shape()
			grids[l] = [2]int{s[2], s[3]}
		}
		var outs []*gorgonia.Node
		for _, level := range [][]*gorgonia.Node{heads.ClsLogits, heads.BboxRegression, heads.BboxCtrness} {
			outs = append(outs, level...)
		}
		return outs, grids, nil
	})
	return nil
}

// weightSet returns the weights, nil for a nil model.
func (m *oneStage) weightSet() *Weights {
	if m == nil {
		return nil
	}
	return m.weights
}

// close releases the runner's machines.
func (m *oneStage) close() error {
	if m == nil {
		return nil
	}
	return m.run.close()
}

// load reads the checkpoint at path into the weights.
func (m *oneStage) load(path string, opts LoadOptions) (IncompatibleKeys, error) {
	ck, err := LoadCheckpoint(path)
	if err != nil {
		return IncompatibleKeys{}, fmt.Errorf("detection: Load%s: %w", m.name, err)
	}
	opts.RetinaNetHeads = append(opts.RetinaNetHeads, m.upgrades...)
	keys, err := m.weights.LoadStateDict(ck, opts)
	if err != nil {
		return keys, fmt.Errorf("detection: Load%s: %w", m.name, err)
	}
	return keys, nil
}

// build adds the backbone and head to x's graph: the differentiable graph
// of separate ops (Build's), or with fused (the runner's, train false)
// the inference graph, whose convolutions take the elementwise ops after
// them into one op each (fused.go): the same outputs, bitwise, without a
// gradient.
func (m *oneStage) build(x *gorgonia.Node, train, fused bool) ([]*gorgonia.Node, *HeadOutputs, error) {
	if m == nil || m.weights == nil {
		return nil, nil, fmt.Errorf("detection: Build: the model is nil or not made by its constructor")
	}
	return m.buildWith(m.weights, x, train, fused)
}

// buildWith is build with the tensors of w (the model's weights or a view
// of them at other parameter nodes, paramsAt).
func (m *oneStage) buildWith(w *Weights, x *gorgonia.Node, train, fused bool) ([]*gorgonia.Node, *HeadOutputs, error) {
	if x == nil {
		return nil, nil, fmt.Errorf("detection: %s.Build: the input node is nil", m.name)
	}
	if x.Dtype() != w.Dtype() {
		return nil, nil, fmt.Errorf("detection: %s.Build: the input is %v, the weights %v", m.name, x.Dtype(), w.Dtype())
	}
	var features []*gorgonia.Node
	var err error
	if fused {
		features, _, err = m.backbone.forwardFused(w, "backbone", x)
	} else {
		features, _, err = m.backbone.Forward(w, "backbone", x, train)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("detection: %s.Build: %w", m.name, err)
	}
	heads, err := m.head(w, features, train, fused)
	if err != nil {
		return nil, nil, fmt.Errorf("detection: %s.Build: %w", m.name, err)
	}
	return features, heads, nil
}

// rawOutputs transforms images and runs the graph: the batch, the head
// outputs per kind and level, and the levels' anchors.
func (m *oneStage) rawOutputs(images []*tensor.Dense) (ImageList, [][]*tensor.Dense, []*tensor.Dense, error) {
	if m == nil || m.weights == nil {
		return ImageList{}, nil, nil, fmt.Errorf("detection: Forward: the model is nil or not made by its constructor")
	}
	for i, im := range images {
		if im != nil && im.Dtype() != m.weights.Dtype() {
			return ImageList{}, nil, nil, fmt.Errorf("detection: %s.Forward: images[%d] is %v, the model %v", m.name, i, im.Dtype(), m.weights.Dtype())
		}
	}
	il, err := m.transform.Transform(images)
	if err != nil {
		return ImageList{}, nil, nil, err
	}
	outs, meta, err := m.run.run(il.Tensors)
	if err != nil {
		return ImageList{}, nil, nil, fmt.Errorf("detection: %s.Forward: %w", m.name, err)
	}
	grids := meta.([][2]int)
	levels := len(grids)
	if len(outs)%levels != 0 {
		return ImageList{}, nil, nil, fmt.Errorf("detection: %s.Forward: %d head outputs for %d levels", m.name, len(outs), levels)
	}
	kinds := make([][]*tensor.Dense, len(outs)/levels)
	for k := range kinds {
		kinds[k] = outs[k*levels : (k+1)*levels]
	}
	s := il.Tensors.Shape()
	anchors, _, err := m.anchors.Anchors(m.weights.Dtype(), [2]int{s[2], s[3]}, grids)
	if err != nil {
		return ImageList{}, nil, nil, fmt.Errorf("detection: %s.Forward: %w", m.name, err)
	}
	return il, kinds, anchors, nil
}

// forward is the models' Forward.
func (m *oneStage) forward(images []*tensor.Dense) ([]Detections, error) {
	if m == nil || m.weights == nil {
		return nil, fmt.Errorf("detection: Forward: the model is nil or not made by its constructor")
	}
	il, outs, anchors, err := m.rawOutputs(images)
	if err != nil {
		return nil, err
	}
	dets, err := m.postprocess(outs, anchors, il.ImageSizes)
	if err != nil {
		return nil, fmt.Errorf("detection: %s.Forward: %w", m.name, err)
	}
	orig := make([][2]int, len(images))
	for i, im := range images {
		s := im.Shape()
		orig[i] = [2]int{s[1], s[2]}
	}
	return m.transform.Postprocess(dets, il.ImageSizes, orig)
}

// transformOf is the one-stage models' Trainable.transform.
func (m *oneStage) transformOf() (GeneralizedRCNNTransform, bool) {
	if m == nil || m.weights == nil {
		return GeneralizedRCNNTransform{}, false
	}
	return m.transform, true
}
