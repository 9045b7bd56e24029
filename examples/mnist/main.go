// Command mnist trains a small CNN on MNIST the way a torch user would:
// a parameter set with torch's default initialisation, one training graph
// and one evaluation graph sharing it, Adam, a learning-rate schedule, and,
// with -r1, an R1 gradient penalty (γ/2)·‖∂L/∂x‖² on the inputs whose
// gradient is a second derivative through every layer.
//
//	go run ./examples/mnist            # one epoch, ~98% test accuracy
//	go run ./examples/mnist -r1 0.1    # with the penalty, and a directional
//	                                   # finite-difference check of its gradient
//
// The network is conv 1→16 3×3 pad 1, ReLU, max-pool 2; conv 16→32 3×3
// pad 1, ReLU, max-pool 2; linear 1568→128, ReLU; linear 128→10
// (scripts/mnist_torch.py is the same model in torch, for timing).
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"time"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/datasets/mnist"
	"github.com/gops-dev/gops/nn"
	"github.com/gops-dev/gops/optim"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Config is one run's settings (the flags).
type Config struct {
	Epochs, Batch int
	LR, R1        float64 // R1 = γ; 0: no penalty
	Seed          uint64
	Limit         int // training batches per epoch; 0: all
}

func main() {
	var c Config
	flag.IntVar(&c.Epochs, "epochs", 1, "training epochs")
	flag.IntVar(&c.Batch, "batch", 64, "batch size")
	flag.Float64Var(&c.LR, "lr", 1e-3, "Adam's learning rate")
	flag.Float64Var(&c.R1, "r1", 0, "γ of the R1 penalty (γ/2)·‖∂L/∂x‖² (0: off)")
	flag.Uint64Var(&c.Seed, "seed", 1, "seed of the initialisation and the shuffling")
	flag.IntVar(&c.Limit, "limit", 0, "training batches per epoch (0: all)")
	flag.Parse()
	if c.R1 > 0 {
		report, err := CheckPenalty(c.R1, c.Seed)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(report)
	}
	acc, err := Train(c, func(s string) { fmt.Println(s) })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("test accuracy %.2f%%\n", 100*acc)
}

// NewParams is the network's parameter set in dtype dt with torch's
// default initialisation (nn.Conv2dInit, nn.LinearInit), named as the
// torch module's state_dict.
func NewParams(dt tensor.Dtype, seed uint64) (*nn.Params, error) {
	rng := rand.New(rand.NewPCG(seed, 0))
	p := nn.NewParams()
	add := func(name string, w, b tensor.Tensor, err error) error {
		if err == nil {
			err = p.Add(name+".weight", w)
		}
		if err == nil {
			err = p.Add(name+".bias", b)
		}
		return err
	}
	w, b, err := nn.Conv2dInit(1, 16, [2]int{3, 3}, 1, true, dt, rng)
	if err = add("conv1", w, b, err); err != nil {
		return nil, err
	}
	w, b, err = nn.Conv2dInit(16, 32, [2]int{3, 3}, 1, true, dt, rng)
	if err = add("conv2", w, b, err); err != nil {
		return nil, err
	}
	w, b, err = nn.LinearInit(32*7*7, 128, true, dt, rng)
	if err = add("fc1", w, b, err); err != nil {
		return nil, err
	}
	w, b, err = nn.LinearInit(128, 10, true, dt, rng)
	return p, add("fc2", w, b, err)
}

// Model is the network's forward (an nn.Model): logits [B, 10] of images
// x [B, 1, 28, 28].
func Model(p *nn.Params, x *gorgonia.Node, train bool) (*gorgonia.Node, error) {
	w, err := p.Nodes(x.Graph()) // conv1.weight, conv1.bias, conv2.weight, ...
	if err != nil {
		return nil, err
	}
	h := x
	for i := 0; i < 2 && err == nil; i++ {
		h, err = nn.Conv2d(h, w[2*i], w[2*i+1], nn.Conv2dOpts{Padding: [2]int{1, 1}})
		if err == nil {
			h, err = nn.ReLU(h)
		}
		if err == nil {
			h, err = nn.MaxPool2d(h, nn.MaxPool2dOpts{KernelSize: [2]int{2, 2}})
		}
	}
	if err == nil {
		h, err = nn.Flatten(h, 1)
	}
	if err == nil {
		h, err = nn.Linear(h, w[4], w[5])
	}
	if err == nil {
		h, err = nn.ReLU(h)
	}
	if err == nil {
		h, err = nn.Linear(h, w[6], w[7])
	}
	return h, err
}

// Step is the training graph: images x, labels y, the cost (cross-entropy,
// plus (γ/2)·Σ(∂ΣL/∂x)²/B with γ = r1 > 0) and its gradients w.r.t. p.
type Step struct {
	X, Y, Cost *gorgonia.Node
	Grads      *nn.Grads
}

// NewStep builds the training graph of p for batches of b images.
func NewStep(p *nn.Params, b int, r1 float64) (*Step, error) {
	dt := p.Values()[0].Dtype()
	g := gorgonia.NewGraph()
	ad.ReuseResults(g, true)
	s := &Step{
		X: gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(b, 1, 28, 28), gorgonia.WithName("x")),
		Y: gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(b), gorgonia.WithName("y")),
	}
	logits, err := Model(p, s.X, true)
	if err == nil {
		s.Cost, err = nn.CrossEntropy(logits, s.Y, nn.CrossEntropyOpts{})
	}
	if err == nil && r1 > 0 {
		s.Cost, err = addPenalty(s.Cost, s.X, r1, b)
	}
	if err == nil {
		s.Grads, err = p.Grad(s.Cost)
	}
	return s, err
}

// addPenalty returns loss + (γ/2)·Σ(∂(b·loss)/∂x)²/b: R1 on each image's
// own loss.
func addPenalty(loss, x *gorgonia.Node, gamma float64, b int) (*gorgonia.Node, error) {
	dt := x.Dtype()
	gx, err := ad.Grad(loss, x)
	if err != nil {
		return nil, err
	}
	k, err := ad.Scalar(x.Graph(), dt, gamma/2*float64(b)) // (∂(b·loss)/∂x)²/b = b·(∂loss/∂x)²
	sq, err2 := gorgonia.Square(gx[0])
	if err == nil {
		err = err2
	}
	if err == nil {
		sq, err = gorgonia.Sum(sq)
	}
	if err == nil {
		sq, err = gorgonia.Mul(sq, k)
	}
	if err != nil {
		return nil, err
	}
	return gorgonia.Add(loss, sq)
}

// Train trains a new network for c.Epochs epochs (Adam, the learning rate
// halved after each epoch), printing progress through logf, and returns
// its accuracy on the test split.
func Train(c Config, logf func(string)) (float64, error) {
	p, err := NewParams(tensor.Float32, c.Seed)
	if err != nil {
		return 0, err
	}
	step, err := NewStep(p, c.Batch, c.R1)
	if err != nil {
		return 0, err
	}
	var cost gorgonia.Value
	gorgonia.Read(step.Cost, &cost) // before the machine: it runs the graph it was made with
	m, err := ad.NewTapeMachine(step.Cost.Graph())
	if err != nil {
		return 0, err
	}
	defer m.Close()
	opts := optim.DefaultAdamOpts()
	opts.LR = c.LR
	opt, err := optim.NewAdam(p.Values(), opts)
	if err != nil {
		return 0, err
	}
	sched, err := optim.NewStepLR(opt, 1, 0.5)
	if err != nil {
		return 0, err
	}
	train, err := mnist.Load("", true)
	if err != nil {
		return 0, err
	}
	loader, err := mnist.NewLoader(train, mnist.LoaderOpts{BatchSize: c.Batch, Shuffle: true, Seed: c.Seed, DropLast: true,
		Transform: mnist.Transform{Normalize: true, Mean: mnist.Mean, Std: mnist.Std}})
	if err != nil {
		return 0, err
	}
	for epoch := 1; epoch <= c.Epochs; epoch++ {
		t0, n, sum := time.Now(), 0, 0.0
		for x, y := range loader.Epoch() {
			if c.Limit > 0 && n == c.Limit {
				break
			}
			if err := letAll(step.X, x, step.Y, y); err != nil {
				return 0, err
			}
			m.Reset()
			if err := ad.RunAll(m); err != nil {
				return 0, err
			}
			if err := opt.Step(step.Grads.Values()); err != nil {
				return 0, err
			}
			n++
			sum += float64(cost.Data().(float32))
			if n%200 == 0 {
				logf(fmt.Sprintf("epoch %d, batch %d: mean cost %.4f, %.1f ms/step", epoch, n, sum/float64(n), time.Since(t0).Seconds()*1e3/float64(n)))
			}
		}
		if err := sched.Step(); err != nil {
			return 0, err
		}
	}
	return Accuracy(p)
}

// letAll binds x to the node X and y to Y.
func letAll(X *gorgonia.Node, x tensor.Tensor, Y *gorgonia.Node, y tensor.Tensor) error {
	if err := gorgonia.Let(X, x); err != nil {
		return err
	}
	return gorgonia.Let(Y, y)
}

// Accuracy is the share of the test split that the network of p classifies
// right, through an nn.Evaluator sharing p (batches of 1000).
func Accuracy(p *nn.Params) (float64, error) {
	test, err := mnist.Load("", false)
	if err != nil {
		return 0, err
	}
	loader, err := mnist.NewLoader(test, mnist.LoaderOpts{BatchSize: 1000,
		Transform: mnist.Transform{Normalize: true, Mean: mnist.Mean, Std: mnist.Std}})
	if err != nil {
		return 0, err
	}
	ev, err := nn.NewEvaluator(p, Model)
	if err != nil {
		return 0, err
	}
	defer ev.Close()
	right, total := 0, 0
	for x, y := range loader.Epoch() {
		logits, err := ev.Forward(x)
		if err != nil {
			return 0, err
		}
		l, labels := logits.Data().([]float32), y.Data().([]int)
		for i, want := range labels {
			best := 0
			for k := range 10 {
				if l[i*10+k] > l[i*10+best] {
					best = k
				}
			}
			if best == want {
				right++
			}
			total++
		}
	}
	return float64(right) / float64(total), nil
}
