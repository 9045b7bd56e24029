package detection_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/detection"
	"github.com/gops-dev/gops/meta"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ExampleNewMAMLTask runs one second-order MAML step of a small random
// FCOS: an inner SGD step on a support picture with one box, the loss of
// a query picture with another box at the adapted parameters, and its
// meta-gradient w.r.t. every trainable parameter; a meta-training loop
// would hand the meta-gradients to an optimizer (package optim) and set
// the next task's pictures and boxes before the next run.
func ExampleNewMAMLTask() {
	cfg := detection.FCOSResNet50FPN(3)
	cfg.Backbone.Body = detection.ResNet{Block: detection.BasicBlock, Layers: []int{1, 1, 1, 1},
		StemWidth: 8, Planes: []int{8, 8, 16, 16}, NormLayer: detection.FrozenBatchNorm2d}
	cfg.Backbone.OutChannels = 32
	cfg.Backbone.ExtraBlocks = detection.LastLevelP6P7{InChannels: 32, OutChannels: 32}
	cfg.NumConvs = 1
	cfg.Transform = detection.NewGeneralizedRCNNTransform(64, 64)
	m, err := detection.NewFCOS(cfg, tensor.Float64, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	defer m.Close()

	// picture is a transformed 64×64 picture, bright inside box, and its
	// ground truth.
	picture := func(box []float64, label int) (*tensor.Dense, detection.TargetBatch) {
		pixels := make([]float64, 3*64*64)
		for i := range pixels {
			y, x := float64(i/64%64), float64(i%64)
			if x >= box[0] && x < box[2] && y >= box[1] && y < box[3] {
				pixels[i] = 0.9
			}
		}
		il, err := cfg.Transform.Transform([]*tensor.Dense{tensor.New(tensor.WithShape(3, 64, 64), tensor.WithBacking(pixels))})
		if err != nil {
			panic(err)
		}
		tb, err := detection.PadTargets([]detection.Targets{{
			Boxes: tensor.New(tensor.WithShape(1, 4), tensor.WithBacking(box)), Labels: []int{label},
		}}, 2)
		if err != nil {
			panic(err)
		}
		return il.Tensors, tb
	}
	supportX, supportT := picture([]float64{8, 8, 40, 36}, 1)
	queryX, queryT := picture([]float64{24, 20, 60, 56}, 1)

	g := gorgonia.NewGraph()
	input := func(x *tensor.Dense, name string) *gorgonia.Node {
		return gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(x.Shape()...), gorgonia.WithValue(x), gorgonia.WithName(name))
	}
	task, err := detection.NewMAMLTask(m, input(supportX, "support"), input(queryX, "query"), meta.MAMLOpts{InnerLR: 0.01})
	if err != nil {
		panic(err)
	}
	if err := task.SetTargets(supportT, queryT); err != nil {
		panic(err)
	}
	var before, after, grad gorgonia.Value
	gorgonia.Read(task.Step.SupportLosses[0], &before)
	gorgonia.Read(task.Step.QueryLoss, &after)
	gorgonia.Read(task.Step.MetaGrads[len(task.Names)-1], &grad)
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		panic(err)
	}
	fmt.Printf("%d trainable parameters\n", len(task.Names))
	fmt.Printf("support loss %.4f, query loss after the inner step %.4f\n", before.Data(), after.Data())
	fmt.Printf("meta-gradient of %s: %.6f\n", task.Names[len(task.Names)-1], grad.Data().([]float64)[0])
	// Output:
	// 39 trainable parameters
	// support loss 2.8313, query loss after the inner step 2.7409
	// meta-gradient of head.regression_head.bbox_ctrness.bias: 0.000826
}
