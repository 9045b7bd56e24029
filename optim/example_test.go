package optim_test

import (
	"fmt"

	"github.com/gops-dev/gops/optim"
	"gorgonia.org/tensor"
)

// SGD with momentum on the quadratic f(x) = ½‖x − c‖², whose gradient is
// x − c. The printed values are torch.optim.SGD(lr=0.1, momentum=0.9)'s
// on the same problem.
func ExampleSGD() {
	x := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{0, 0}))
	c := []float64{1, -2}
	opt, err := optim.NewSGD([]tensor.Tensor{x}, optim.SGDOpts{LR: 0.1, Momentum: 0.9})
	if err != nil {
		panic(err)
	}
	grad := tensor.New(tensor.WithShape(2), tensor.Of(tensor.Float64))
	for step := 1; step <= 5; step++ {
		g, xs := grad.Float64s(), x.Float64s()
		for i := range g {
			g[i] = xs[i] - c[i]
		}
		if err := opt.Step([]tensor.Tensor{grad}); err != nil {
			panic(err)
		}
		fmt.Printf("step %d: x = [%.6f %.6f]\n", step, xs[0], xs[1])
	}
	buf := opt.State().Params[0].Buffers[optim.MomentumBuffer]
	fmt.Printf("momentum_buffer = %.4f\n", buf.Data())
	// Output:
	// step 1: x = [0.100000 -0.200000]
	// step 2: x = [0.280000 -0.560000]
	// step 3: x = [0.514000 -1.028000]
	// step 4: x = [0.773200 -1.546400]
	// step 5: x = [1.029160 -2.058320]
	// momentum_buffer = [-2.5596 5.1192]
}

// The detection models' schedule: a linear warm-up over 5 epochs, then
// a step decay by 10 at the MultiStepLR's epochs 8 and 16, which
// SequentialLR counts from its milestone (epochs 13 and 21 here), as
// torch.optim.lr_scheduler.SequentialLR does. The printed values are
// torch's.
func ExampleNewSequentialLR() {
	w := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{1, 2, 3}))
	opt, err := optim.NewSGD([]tensor.Tensor{w}, optim.SGDOpts{LR: 0.1, Momentum: 0.9})
	if err != nil {
		panic(err)
	}
	warmup, err := optim.NewLinearLR(opt, 0.001, 1, 5)
	if err != nil {
		panic(err)
	}
	decay, err := optim.NewMultiStepLR(opt, []int{8, 16}, 0.1)
	if err != nil {
		panic(err)
	}
	sched, err := optim.NewSequentialLR(opt, []*optim.LRScheduler{warmup, decay}, []int{5})
	if err != nil {
		panic(err)
	}
	last := -1.0
	for epoch := 0; epoch < 24; epoch++ {
		if epoch > 0 {
			// ... a training epoch with opt.Step(grads) ...
			if err := sched.Step(); err != nil {
				panic(err)
			}
		}
		if lr := opt.LR(); lr != last {
			fmt.Printf("epoch %2d: lr %.6g\n", sched.LastEpoch(), lr)
			last = lr
		}
	}
	// Output:
	// epoch  0: lr 0.0001
	// epoch  1: lr 0.02008
	// epoch  2: lr 0.04006
	// epoch  3: lr 0.06004
	// epoch  4: lr 0.08002
	// epoch  5: lr 0.1
	// epoch 13: lr 0.01
	// epoch 21: lr 0.001
}
