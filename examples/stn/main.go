// Command stn trains a small spatial transformer network (Jaderberg et al.,
// 2015) on randomly rotated, scaled and shifted MNIST digits, under a
// gradient penalty through the sampler.
//
// A localisation net predicts an affine transform θ per image (starting at
// the identity), nn.AffineGrid turns θ into a sampling grid and
// nn.GridSample resamples the digit with it; a small classifier reads the
// result. The loss L is the mean cross-entropy and the penalty is the
// squared norm of its input gradient, P = ||∂L/∂x||², as in R1 or WGAN-GP.
// ∂L/∂x flows through GridSample twice: into the sampled image and, via the
// grid, into the localisation net; descending on L + λ·P therefore needs
// GridSample's second derivatives w.r.t. the grid (∂P/∂θ-parameters), the
// terms that PyTorch's grid_sample cannot give (no double backward) and
// that the common workaround, a penalty with the grid detached, drops.
// ad.Grad differentiates the graph that holds ad.Grad's own result. The
// program first checks ∂P/∂(a few localisation parameters) against central
// differences, then trains and prints loss, penalty and accuracy.
//
//	go run ./examples/stn [-steps 300] [-lambda 1] [-lr 0.01] [-train 2048] [-test 1024] [-batch 32] [-data DIR]
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/datasets/mnist"
	"github.com/gops-dev/gops/examples/internal/gradnorm"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Sizes: the digits are S×S; the transformer samples an O×O view of them.
const (
	S = mnist.Size
	O = 16
)

// config is what the flags set.
type config struct {
	steps, train, test, batch int
	lambda, lr                float64
	seed                      int64
	data                      string
}

func main() {
	var c config
	flag.IntVar(&c.steps, "steps", 300, "training steps (Adam, one minibatch each)")
	flag.Float64Var(&c.lambda, "lambda", 1, "weight λ of the penalty P")
	flag.Float64Var(&c.lr, "lr", 0.01, "Adam's learning rate (the localisation net's is 0.1 times it)")
	flag.IntVar(&c.train, "train", 2048, "training digits")
	flag.IntVar(&c.test, "test", 1024, "held-out digits (from MNIST's test split)")
	flag.IntVar(&c.batch, "batch", 32, "minibatch size")
	flag.Int64Var(&c.seed, "seed", 1, "seed of the distortions and the initial weights")
	flag.StringVar(&c.data, "data", "", "folder holding the MNIST files (default: the GoMNIST module's)")
	flag.Parse()
	if _, err := run(c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "stn:", err)
		os.Exit(1)
	}
}

// param is one parameter tensor; every graph's node for it shares data, so
// an update in place is seen by all of them.
type param struct {
	name  string
	shape []int
	data  []float64
}

// The parameters: the localisation net (a 5×5 stride-3 convolution, tanh,
// a linear layer to the 6 entries of θ) and the classifier (a 3×3 stride-2
// convolution on the O×O view, tanh, a linear layer to 10 logits).
const (
	locConvW = iota
	locConvB
	locFCW
	locFCB
	clsConvW
	clsConvB
	clsFCW
	clsFCB
	numParams
)

const (
	locC, locK, locStride = 4, 5, 3
	locO                  = (S-locK)/locStride + 1 // 8
	clsC                  = 8
	clsO                  = O / 2
)

// newParams draws the initial weights: the usual 1/√fan-in scale, and a
// small localisation head whose bias is the identity transform.
func newParams(rng *rand.Rand) []*param {
	ps := []*param{
		{name: "loc.conv.W", shape: []int{locC, 1, locK, locK}},
		{name: "loc.conv.b", shape: []int{locC}},
		{name: "loc.fc.W", shape: []int{locC * locO * locO, 6}},
		{name: "loc.fc.b", shape: []int{6}},
		{name: "cls.conv.W", shape: []int{clsC, 1, 3, 3}},
		{name: "cls.conv.b", shape: []int{clsC}},
		{name: "cls.fc.W", shape: []int{clsC * clsO * clsO, 10}},
		{name: "cls.fc.b", shape: []int{10}},
	}
	std := map[int]float64{locConvW: 1 / float64(locK), locFCW: 0.02, clsConvW: 1 / 3.0, clsFCW: 1 / math.Sqrt(clsC*clsO*clsO)}
	for i, p := range ps {
		n := 1
		for _, d := range p.shape {
			n *= d
		}
		p.data = make([]float64, n)
		for j := range p.data {
			p.data[j] = std[i] * rng.NormFloat64()
		}
	}
	copy(ps[locFCB].data, []float64{1, 0, 0, 0, 1, 0})
	return ps
}

// forward builds the network on x [B, 1, S, S] with the parameter nodes w
// and returns the logits [B, 10] and θ [B, 2, 3].
func forward(x *gorgonia.Node, w gorgonia.Nodes) (logits, theta *gorgonia.Node, err error) {
	b := x.Shape()[0]
	// the localisation net → θ
	t, err := head(x, w[locConvW:locFCB+1], nn.Conv2dOpts{Stride: [2]int{locStride, locStride}})
	if err != nil {
		return nil, nil, err
	}
	if theta, err = nn.Reshape(t, b, 2, 3); err != nil {
		return nil, nil, err
	}
	// the sampler: an O×O view of the digit
	grid, err := nn.AffineGrid(theta, [4]int{b, 1, O, O}, false)
	if err != nil {
		return nil, nil, err
	}
	v, err := nn.GridSample(x, grid, nn.GridSampleOpts{})
	if err != nil {
		return nil, nil, err
	}
	// the classifier
	logits, err = head(v, w[clsConvW:clsFCB+1], nn.Conv2dOpts{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}})
	return logits, theta, err
}

// head is the shape of both sub-networks: conv (w[0], w[1]) → tanh →
// flatten → linear (w[2], w[3]).
func head(x *gorgonia.Node, w gorgonia.Nodes, opts nn.Conv2dOpts) (*gorgonia.Node, error) {
	h, err := nn.Conv2d(x, w[0], w[1], opts)
	if err != nil {
		return nil, err
	}
	if h, err = nn.Tanh(h); err != nil {
		return nil, err
	}
	if h, err = nn.Flatten(h, 1); err != nil {
		return nil, err
	}
	if h, err = nn.MatMul(h, w[2], false, false); err != nil {
		return nil, err
	}
	return gorgonia.BroadcastAdd(h, w[3], nil, []byte{0})
}

// graph is one compiled graph for a batch of b digits: the images and
// labels are copied into x and y before Eval.
type graph struct {
	m     gorgonia.VM
	x     []float64 // the values of the input node [b, 1, S, S]
	y     []int     // the labels [b]
	vals  map[string]*gorgonia.Value
	grads []gorgonia.Value // of the objective or of P, one per parameter asked for
}

// newGraph builds the network for b digits with the parameters ps: the
// loss L and the logits, and, when penalty is set, P = ||∂L/∂x||²,
// L + λP and the gradients of gradOf ("obj" for L + λP, "P" for P) w.r.t.
// the parameters wrt.
func newGraph(ps []*param, b int, penalty bool, lambda float64, gradOf string, wrt []int) (*graph, error) {
	g := gorgonia.NewGraph()
	gr := &graph{x: make([]float64, b*S*S), y: make([]int, b), vals: map[string]*gorgonia.Value{}}
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(b, 1, S, S), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(b, 1, S, S), tensor.WithBacking(gr.x))))
	y := gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(b), gorgonia.WithName("y"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(b), tensor.WithBacking(gr.y))))
	w := make(gorgonia.Nodes, len(ps))
	for i, p := range ps {
		w[i] = gorgonia.NewTensor(g, tensor.Float64, len(p.shape), gorgonia.WithShape(p.shape...), gorgonia.WithName(p.name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(p.shape...), tensor.WithBacking(p.data))))
	}
	logits, theta, err := forward(x, w)
	if err != nil {
		return nil, err
	}
	l, err := nn.CrossEntropy(logits, y, nn.CrossEntropyOpts{})
	if err != nil {
		return nil, err
	}
	nodes := map[string]*gorgonia.Node{"L": l, "logits": logits, "theta": theta}
	if penalty {
		// P and L + λP; their gradients differentiate ∂L/∂x again, through
		// GridSample's input and its grid.
		p, obj, err := gradnorm.Penalty(l, x, lambda)
		if err != nil {
			return nil, err
		}
		nodes["P"], nodes["obj"] = p, obj
		ws := make(gorgonia.Nodes, len(wrt))
		for i, k := range wrt {
			ws[i] = w[k]
		}
		d, err := ad.Grad(nodes[gradOf], ws...)
		if err != nil {
			return nil, err
		}
		gr.grads = make([]gorgonia.Value, len(d))
		for i, n := range d {
			gorgonia.Read(n, &gr.grads[i])
		}
	}
	for name, n := range nodes {
		gr.vals[name] = new(gorgonia.Value)
		gorgonia.Read(n, gr.vals[name]) // read while running: values may be reused after
	}
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		return nil, err
	}
	gr.m = vm
	return gr, nil
}

// load copies digits idx of set into the graph's inputs.
func (gr *graph) load(set *dataset, idx []int) {
	for i, k := range idx {
		copy(gr.x[i*S*S:(i+1)*S*S], set.images[k])
		gr.y[i] = set.labels[k]
	}
}

// Eval runs the graph at the current parameters.
func (gr *graph) Eval() error { gr.m.Reset(); return gr.m.RunAll() }

// scalar is the value of the scalar node name after Eval.
func (gr *graph) scalar(name string) float64 { return (*gr.vals[name]).Data().(float64) }

// dataset holds distorted digits.
type dataset struct {
	images [][]float64
	labels []int
}

// distort draws n digits of set and rotates (±45°), scales (0.75 to 1.1)
// and shifts (±4 pixels) each at random, bilinearly, zeros outside.
func distort(set *mnist.Dataset, n int, rng *rand.Rand) *dataset {
	d := &dataset{}
	const c = (S - 1) / 2.0
	for _, k := range rng.Perm(set.Len())[:n] {
		a := (rng.Float64()*2 - 1) * math.Pi / 4
		s := 0.75 + 0.35*rng.Float64()
		tx, ty := (rng.Float64()*2-1)*4, (rng.Float64()*2-1)*4
		cos, sin := math.Cos(a)/s, math.Sin(a)/s
		src, out := make([]float64, S*S), make([]float64, S*S)
		for j, p := range set.Pixels[k*S*S : (k+1)*S*S] {
			src[j] = float64(p) / 255
		}
		for i := 0; i < S; i++ {
			for j := 0; j < S; j++ {
				// the inverse map: output pixel (i, j) reads the source at (u, v)
				x, y := float64(j)-c-tx, float64(i)-c-ty
				u, v := cos*x+sin*y+c, -sin*x+cos*y+c
				out[i*S+j] = bilinear(src, v, u)
			}
		}
		d.images = append(d.images, out)
		d.labels = append(d.labels, set.Labels[k])
	}
	return d
}

// bilinear reads the S×S image at row y, column x, zero outside.
func bilinear(im []float64, y, x float64) float64 {
	y0, x0 := math.Floor(y), math.Floor(x)
	fy, fx := y-y0, x-x0
	at := func(i, j int) float64 {
		if i < 0 || i >= S || j < 0 || j >= S {
			return 0
		}
		return im[i*S+j]
	}
	i, j := int(y0), int(x0)
	return (1-fy)*((1-fx)*at(i, j)+fx*at(i, j+1)) + fy*((1-fx)*at(i+1, j)+fx*at(i+1, j+1))
}

// evaluate returns the mean loss and the accuracy of the parameters on set,
// in batches of the graph's size (a remainder is left out).
func evaluate(gr *graph, set *dataset) (loss, acc float64, err error) {
	b := len(gr.y)
	n := len(set.labels) / b * b
	right := 0
	for s := 0; s < n; s += b {
		idx := make([]int, b)
		for i := range idx {
			idx[i] = s + i
		}
		gr.load(set, idx)
		if err := gr.Eval(); err != nil {
			return 0, 0, err
		}
		loss += gr.scalar("L") * float64(b)
		lg := (*gr.vals["logits"]).Data().([]float64)
		for i := 0; i < b; i++ {
			best := 0
			for k := 1; k < 10; k++ {
				if lg[i*10+k] > lg[i*10+best] {
					best = k
				}
			}
			if best == gr.y[i] {
				right++
			}
		}
	}
	return loss / float64(n), float64(right) / float64(n), nil
}

// checked are the localisation parameters whose ∂P is compared with
// central differences: entries of the convolution's weight, of the linear
// head's weight and of θ's bias (a scale and a shift).
var checked = []struct{ param, index int }{
	{locConvW, 12}, {locConvW, 60}, {locFCW, 7}, {locFCW, 6*100 + 2}, {locFCW, 6*201 + 4}, {locFCB, 0}, {locFCB, 5},
}

// result is what run measured: ∂P against central differences (the
// largest relative error; the ad.Grad values), the loss on the training
// digits and the held-out accuracy before and after training, and P at the
// first and last step.
type result struct {
	maxRelErr             float64
	dP                    []float64
	lossBefore, lossAfter float64
	accBefore, accAfter   float64
	pFirst, pLast         float64
}

func run(c config, out io.Writer) (result, error) {
	var res result
	trainSet, err := mnist.Load(c.data, true) // c.data "": the GoMNIST module's files
	if err != nil {
		return res, err
	}
	testSet, err := mnist.Load(c.data, false)
	if err != nil {
		return res, err
	}
	rng := rand.New(rand.NewSource(c.seed))
	train, test := distort(trainSet, c.train, rng), distort(testSet, c.test, rng)
	ps := newParams(rng)
	all := make([]int, numParams)
	for i := range all {
		all[i] = i
	}

	// ∂P/∂(localisation parameters) against central differences of P, on
	// the first 4 training digits. P is smooth only piecewise: ∂L/∂x holds
	// GridSample's derivative w.r.t. the grid, which jumps where a sample
	// point crosses a pixel boundary. The step is small enough (sample
	// points move by about 1e-6 pixels) that no point crosses one, and
	// large enough that float64 rounding stays near 1e-9 relative.
	const checkBatch, step = 4, 1e-7
	chk, err := newGraph(ps, checkBatch, true, c.lambda, "P", []int{locConvW, locFCW, locFCB})
	if err != nil {
		return res, err
	}
	defer chk.m.Close()
	chk.load(train, []int{0, 1, 2, 3})
	if err := chk.Eval(); err != nil {
		return res, err
	}
	slot := map[int]int{locConvW: 0, locFCW: 1, locFCB: 2}
	grads := make([][]float64, len(chk.grads))
	for i, v := range chk.grads {
		grads[i] = append([]float64(nil), v.Data().([]float64)...)
	}
	fmt.Fprintf(out, "∂P/∂ parameter     ad.Grad            central difference  rel.err\n")
	for _, ck := range checked {
		a := grads[slot[ck.param]][ck.index]
		w := ps[ck.param].data
		orig, p := w[ck.index], [2]float64{}
		for j, s := range []float64{step, -step} {
			w[ck.index] = orig + s
			if err := chk.Eval(); err != nil {
				return res, err
			}
			p[j] = chk.scalar("P")
		}
		w[ck.index] = orig
		num := (p[0] - p[1]) / (2 * step)
		rel := math.Abs(a-num) / math.Max(math.Abs(a), math.Abs(num))
		res.maxRelErr = math.Max(res.maxRelErr, rel)
		res.dP = append(res.dP, a)
		fmt.Fprintf(out, "%-10s[%4d]  %+.10e  %+.10e   %.1e\n", ps[ck.param].name, ck.index, a, num, rel)
	}
	fmt.Fprintf(out, "max relative error %.1e\n\n", res.maxRelErr)

	// Adam on L + λP over minibatches.
	tr, err := newGraph(ps, c.batch, true, c.lambda, "obj", all)
	if err != nil {
		return res, err
	}
	defer tr.m.Close()
	ev, err := newGraph(ps, c.batch, false, 0, "", nil)
	if err != nil {
		return res, err
	}
	defer ev.m.Close()
	if res.lossBefore, _, err = evaluate(ev, train); err != nil {
		return res, err
	}
	if _, res.accBefore, err = evaluate(ev, test); err != nil {
		return res, err
	}
	fmt.Fprintf(out, "before: training loss %.4f, held-out accuracy %.1f%%\n", res.lossBefore, 100*res.accBefore)
	fmt.Fprintf(out, "step   L        P          L + λP (λ = %g)\n", c.lambda)
	adam := newAdam(ps, c.lr)
	order := rng.Perm(len(train.labels))
	for s, at := 0, 0; s < c.steps; s++ {
		if at+c.batch > len(order) {
			order, at = rng.Perm(len(train.labels)), 0
		}
		tr.load(train, order[at:at+c.batch])
		at += c.batch
		if err := tr.Eval(); err != nil {
			return res, err
		}
		l, p := tr.scalar("L"), tr.scalar("P")
		if s == 0 {
			res.pFirst = p
		}
		res.pLast = p
		if s%max(c.steps/10, 1) == 0 || s == c.steps-1 {
			fmt.Fprintf(out, "%4d   %.4f   %.3e  %.4f\n", s, l, p, tr.scalar("obj"))
		}
		adam.step(tr.grads)
	}
	if res.lossAfter, _, err = evaluate(ev, train); err != nil {
		return res, err
	}
	if _, res.accAfter, err = evaluate(ev, test); err != nil {
		return res, err
	}
	fmt.Fprintf(out, "after:  training loss %.4f, held-out accuracy %.1f%%\n", res.lossAfter, 100*res.accAfter)
	theta := (*ev.vals["theta"]).Data().([]float64)
	fmt.Fprintf(out, "θ of the last held-out digit: [%.3f %.3f %.3f; %.3f %.3f %.3f]\n",
		theta[len(theta)-6], theta[len(theta)-5], theta[len(theta)-4], theta[len(theta)-3], theta[len(theta)-2], theta[len(theta)-1])
	return res, nil
}

// locLRScale scales the learning rate of the localisation net, as STNs
// usually do: θ should follow the classifier, not jump.
const locLRScale = 0.1

// adam is Adam (Kingma & Ba) with β = (0.9, 0.999), ε = 1e-8, updating the
// parameters in place (the localisation net's at locLRScale times the rate).
type adam struct {
	ps   []*param
	lr   float64
	t    int
	m, v [][]float64
}

func newAdam(ps []*param, lr float64) *adam {
	a := &adam{ps: ps, lr: lr}
	for _, p := range ps {
		a.m = append(a.m, make([]float64, len(p.data)))
		a.v = append(a.v, make([]float64, len(p.data)))
	}
	return a
}

func (a *adam) step(grads []gorgonia.Value) {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	a.t++
	c1, c2 := 1-math.Pow(b1, float64(a.t)), 1-math.Pow(b2, float64(a.t))
	for i, p := range a.ps {
		lr := a.lr
		if i <= locFCB {
			lr *= locLRScale
		}
		for j, g := range grads[i].Data().([]float64) {
			a.m[i][j] = b1*a.m[i][j] + (1-b1)*g
			a.v[i][j] = b2*a.v[i][j] + (1-b2)*g*g
			p.data[j] -= lr * (a.m[i][j] / c1) / (math.Sqrt(a.v[i][j]/c2) + eps)
		}
	}
}
