package optim_test

import (
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/datasets/mnist"
	"github.com/gops-dev/gops/nn"
	"github.com/gops-dev/gops/optim"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// model is the network (an nn.Model): conv 1→8 3×3, ReLU, max-pool 2,
// linear 1568→10.
func model(p *nn.Params, x *gorgonia.Node, train bool) (*gorgonia.Node, error) {
	w, err := p.Nodes(x.Graph()) // conv.weight, conv.bias, fc.weight, fc.bias
	if err != nil {
		return nil, err
	}
	h, err := nn.Conv2d(x, w[0], w[1], nn.Conv2dOpts{Padding: [2]int{1, 1}})
	if err == nil {
		h, err = nn.ReLU(h)
	}
	if err == nil {
		h, err = nn.MaxPool2d(h, nn.MaxPool2dOpts{KernelSize: [2]int{2, 2}})
	}
	if err == nil {
		h, err = nn.Flatten(h, 1)
	}
	if err == nil {
		h, err = nn.Linear(h, w[2], w[3])
	}
	return h, err
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// Training a classifier on MNIST as in torch: parameters with torch's
// default initialisation, a training graph (loss and gradients), SGD with
// momentum and a step schedule, and an evaluation graph sharing the
// parameters. The README's "Training" section is this program (without
// the 200-batch limit, which keeps the example short).
func Example_training() {
	rng := rand.New(rand.NewPCG(1, 2))
	p := nn.NewParams() // named as torch's state_dict
	cw, cb, err := nn.Conv2dInit(1, 8, [2]int{3, 3}, 1, true, tensor.Float32, rng)
	check(err)
	fw, fb, err := nn.LinearInit(8*14*14, 10, true, tensor.Float32, rng)
	check(err)
	check(p.Add("conv.weight", cw))
	check(p.Add("conv.bias", cb))
	check(p.Add("fc.weight", fw))
	check(p.Add("fc.bias", fb))

	// The training graph: a batch in, the mean cross-entropy and its
	// gradients w.r.t. p out.
	const batch = 64
	g := gorgonia.NewGraph()
	ad.ReuseResults(g, true) // every run writes into the memory of two runs before
	x := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(batch, 1, 28, 28), gorgonia.WithName("x"))
	y := gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(batch), gorgonia.WithName("y"))
	logits, err := model(p, x, true)
	check(err)
	loss, err := nn.CrossEntropy(logits, y, nn.CrossEntropyOpts{})
	check(err)
	grads, err := p.Grad(loss) // grads.Values() after each run, in p's order
	check(err)
	m, err := ad.NewTapeMachine(g) // after Grad: a machine runs the graph it was made with
	check(err)
	defer m.Close()

	opt, err := optim.NewSGD(p.Values(), optim.SGDOpts{LR: 0.05, Momentum: 0.9})
	check(err)
	sched, err := optim.NewStepLR(opt, 1, 0.5) // lr halved after each epoch
	check(err)
	norm := mnist.Transform{Normalize: true, Mean: mnist.Mean, Std: mnist.Std}
	train, err := mnist.Load("", true) // from the Go module cache
	check(err)
	loader, err := mnist.NewLoader(train, mnist.LoaderOpts{BatchSize: batch, Shuffle: true, Seed: 1, DropLast: true, Transform: norm})
	check(err)
	for epoch := 0; epoch < 1; epoch++ {
		n := 0
		for xb, yb := range loader.Epoch() {
			if n++; n > 200 {
				break
			}
			check(gorgonia.Let(x, xb))
			check(gorgonia.Let(y, yb))
			m.Reset()
			check(ad.RunAll(m)) // the op's own error first
			check(opt.Step(grads.Values()))
		}
		check(sched.Step())
	}

	// Evaluation: the same model in a forward-only graph sharing p.
	ev, err := nn.NewEvaluator(p, model)
	check(err)
	defer ev.Close()
	test, err := mnist.Load("", false)
	check(err)
	tl, err := mnist.NewLoader(test, mnist.LoaderOpts{BatchSize: 1000, Transform: norm})
	check(err)
	right := 0
	for xb, yb := range tl.Epoch() {
		out, err := ev.Forward(xb)
		check(err)
		l := out.Data().([]float32)
		for i, label := range yb.Data().([]int) {
			best := 0
			for k := range 10 {
				if l[10*i+k] > l[10*i+best] {
					best = k
				}
			}
			if best == label {
				right++
			}
		}
	}
	fmt.Printf("test accuracy %.0f%%\n", 100*float64(right)/float64(test.Len())) // 95.2 here
	// p.SaveFile("mnist.safetensors") would keep the weights; torch reads
	// them with safetensors.torch.load_file.

	// Output: test accuracy 95%
}
