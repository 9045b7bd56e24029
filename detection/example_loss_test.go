package detection_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/detection"
	"github.com/gops-dev/gops/optim"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// smallFCOSConfig is a small FCOS of 4 classes for 64×64 images (the
// transform resizes nothing of that size): a ResNet of one BasicBlock a
// stage, 8 to 16 channels, a 32-channel FPN, towers of 2 convolutions.
func smallFCOSConfig() detection.FCOSConfig {
	cfg := detection.FCOSResNet50FPN(4)
	cfg.Backbone.Body = detection.ResNet{Block: detection.BasicBlock, Layers: []int{1, 1, 1, 1},
		StemWidth: 8, Planes: []int{8, 8, 16, 16}, NormLayer: detection.FrozenBatchNorm2d}
	cfg.Backbone.OutChannels = 32
	cfg.Backbone.ExtraBlocks = detection.LastLevelP6P7{InChannels: 32, OutChannels: 32}
	cfg.NumConvs = 2
	cfg.Transform = detection.NewGeneralizedRCNNTransform(64, 64)
	return cfg
}

// ExampleFCOS_Loss trains a small random FCOS for a few SGD steps on one
// picture with one ground-truth box: one graph of the model, its
// torchvision losses and their gradients, run once per step; the
// LossInputs are set once here (a training loop sets them per batch).
func ExampleFCOS_Loss() {
	cfg := smallFCOSConfig()
	m, err := detection.NewFCOS(cfg, tensor.Float64, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	defer m.Close()

	// A 64×64 picture, bright inside the box (16, 12)–(44, 40).
	box := []float64{16, 12, 44, 40}
	pixels := make([]float64, 3*64*64)
	for i := range pixels {
		y, x := i/64%64, i%64
		if x >= 16 && x < 44 && y >= 12 && y < 40 {
			pixels[i] = 0.9
		}
	}
	img := tensor.New(tensor.WithShape(3, 64, 64), tensor.WithBacking(pixels))
	batch, err := cfg.Transform.Transform([]*tensor.Dense{img})
	if err != nil {
		panic(err)
	}

	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(batch.Tensors.Shape()...),
		gorgonia.WithValue(batch.Tensors), gorgonia.WithName("x"))
	inputs, losses, err := m.Loss(x)
	if err != nil {
		panic(err)
	}
	params := m.Weights().Params
	grads, err := params.Grad(losses.Total)
	if err != nil {
		panic(err)
	}
	var total gorgonia.Value
	gorgonia.Read(losses.Total, &total)
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
	defer vm.Close()
	sgd, err := optim.NewSGD(params.Values(), optim.SGDOpts{LR: 0.01, Momentum: 0.9})
	if err != nil {
		panic(err)
	}

	targets, err := detection.PadTargets([]detection.Targets{{
		Boxes: tensor.New(tensor.WithShape(1, 4), tensor.WithBacking(box)), Labels: []int{1},
	}}, 4)
	if err != nil {
		panic(err)
	}
	if err := inputs.Set(targets); err != nil {
		panic(err)
	}
	for step := 0; step < 6; step++ {
		if err := vm.RunAll(); err != nil {
			panic(err)
		}
		if step%5 == 0 {
			fmt.Printf("step %d: loss %.3f\n", step, total.Data())
		}
		if err := sgd.Step(grads.Values()); err != nil {
			panic(err)
		}
		vm.Reset()
	}
	// Output:
	// step 0: loss 2.809
	// step 5: loss 1.632
}
