package detection_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/gops-dev/gops/detection"
	"gorgonia.org/tensor"
)

// ExampleTrainer trains a small random FCOS (smallFCOSConfig) with torchvision's detection
// recipe (SGD with momentum and weight decay, a linear warm-up, a
// multi-step decay) on one 96×96 picture whose box is given in its own
// pixels: StepImages resizes the picture to the model's 64-pixel side
// and the box with it. A training loop calls it once per batch; the
// model's Forward sees the trained weights and returns boxes in the
// picture's own pixels, which Evaluate scores against the same box.
func ExampleTrainer() {
	cfg := smallFCOSConfig() // 64×64 images
	m, err := detection.NewFCOS(cfg, tensor.Float32, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	defer m.Close()

	// A 96×96 picture, bright inside the box (24, 18)–(66, 60).
	pixels := make([]float32, 3*96*96)
	for i := range pixels {
		y, x := i/96%96, i%96
		if x >= 24 && x < 66 && y >= 18 && y < 60 {
			pixels[i] = 0.9
		}
	}
	images := []*tensor.Dense{tensor.New(tensor.WithShape(3, 96, 96), tensor.WithBacking(pixels))}
	targets := []detection.Targets{{
		Boxes:  tensor.New(tensor.WithShape(1, 4), tensor.WithBacking([]float32{24, 18, 66, 60})),
		Labels: []int{1},
	}}

	opts := detection.DefaultTrainerOpts(8) // lr 0.01, momentum 0.9, weight decay 1e-4
	opts.WarmupIters = 5                    // from lr 0.01·0.001, linearly
	opts.Milestones = []int{80}             // lr ×0.1 after step 80
	tr, err := detection.NewTrainer(m, opts)
	if err != nil {
		panic(err)
	}
	defer tr.Close()
	for step := 0; step < 120; step++ {
		lr := tr.LR()
		losses, err := tr.StepImages(images, targets)
		if err != nil {
			panic(err)
		}
		// The loss to one decimal: after many steps its last digits
		// differ between CPUs with and without AVX-512 (their vector
		// exp sums round differently; each CPU is deterministic).
		switch step {
		case 0, 5, 40, 119:
			fmt.Printf("step %3d: lr %.5f, loss %.1f\n", step, lr, losses.Total)
		case 80:
			fmt.Printf("step %3d: lr %.5f\n", step, lr)
		}
	}

	// Detect with the trained weights and score the detections: Forward's
	// boxes are in the picture's own pixels, like targets here.
	dets, err := m.Forward(images)
	if err != nil {
		panic(err)
	}
	gt := []detection.GroundTruth{{Boxes: targets[0].Boxes, Labels: targets[0].Labels}}
	eval, err := detection.Evaluate(dets, gt)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d detections, AP50 %.2f\n", len(dets[0].Labels), eval.Stats[1])
	// Output:
	// step   0: lr 0.00001, loss 2.8
	// step   5: lr 0.01000, loss 1.8
	// step  40: lr 0.01000, loss 0.8
	// step  80: lr 0.00100
	// step 119: lr 0.00100, loss 0.6
	// 1 detections, AP50 1.00
}
