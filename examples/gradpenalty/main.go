// Command gradpenalty trains a layer under a gradient penalty through
// RoIAlign: a second derivative that torchvision refuses ("double backwards
// on roi_align not supported").
//
// The model mixes the colours of a photograph per pixel, z = W·x + b, and
// pools five hand-placed boxes with RoIAlign: y = RoIAlign(tanh(z), boxes).
// Its loss is L = (1/K) Σ_k ||y_k − 0.25||², and the penalty is the squared
// norm of the loss's input gradient, P = ||∂L/∂x||², as in WGAN-GP or R1.
// Gradient descent on L + λ·P needs ∂P/∂W, the gradient of a gradient:
// ad.Grad applied to a graph that contains ad.Grad's result. The program
// first checks ∂P/∂W against central differences, then trains W and b.
//
//	go run ./examples/gradpenalty [-steps 30] [-lambda 0.5] [-lr 3e-4]
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/examples/internal/gradnorm"
	"github.com/gops-dev/gops/examples/internal/photo"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// boxes are (batch_index, x1, y1, x2, y2) in pixels: gopher, goggles,
// snout, left hand, right hand.
var boxes = []float64{
	0, 58, 6, 131, 97,
	0, 60, 8, 113, 31,
	0, 66, 26, 89, 44,
	0, 0, 32, 54, 92,
	0, 117, 34, 150, 100,
}

// crops are the RoIAlign crops the loss compares with 0.25.
var crops = gops.RoIAlignOpts{OutputSize: [2]int{32, 32}, SamplingRatio: 2, Aligned: true}

func main() {
	steps := flag.Int("steps", 30, "gradient steps")
	lambda := flag.Float64("lambda", 0.5, "weight λ of the penalty P")
	lr := flag.Float64("lr", 3e-4, "learning rate")
	flag.Parse()
	if _, err := run(*steps, *lambda, *lr, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gradpenalty:", err)
		os.Exit(1)
	}
}

// loss builds L = (1/K) Σ_k ||RoIAlign(tanh(W·x + b), boxes)_k − 0.25||²
// for the image x [1, 3, H, W], the mixing W [3, 3], the bias b [3] and the
// boxes [K, 5].
func loss(x, w, b, bx *gorgonia.Node, opts gops.RoIAlignOpts) (*gorgonia.Node, error) {
	h, wd := x.Shape()[2], x.Shape()[3]
	xr, err := ad.Reshape(x, 3, h*wd)
	if err != nil {
		return nil, err
	}
	br, err := ad.Reshape(b, 3, 1)
	if err != nil {
		return nil, err
	}
	wx, err := gorgonia.Mul(w, xr)
	if err != nil {
		return nil, err
	}
	z, err := gorgonia.BroadcastAdd(wx, br, nil, []byte{1})
	if err != nil {
		return nil, err
	}
	zr, err := ad.Reshape(z, 1, 3, h, wd)
	if err != nil {
		return nil, err
	}
	t, err := gorgonia.Tanh(zr)
	if err != nil {
		return nil, err
	}
	y, err := gops.RoIAlign(t, bx, opts)
	if err != nil {
		return nil, err
	}
	f := ad.NewBuilder(y)
	d := f.Sub(y, f.Const(0.25))
	return f.Node(f.Scale(f.Sum(f.Square(d)), 1/float64(bx.Shape()[0])))
}

// model is the compiled graph of L, P = ||∂L/∂x||², L + λP and the
// gradients ∂P/∂W, ∂(L + λP)/∂W, ∂(L + λP)/∂b on a TapeMachine. W and b
// hold the parameters; Eval runs the graph at their current values.
type model struct {
	m                     gorgonia.VM
	w, b                  []float64 // the values of the W and b nodes
	l, p, obj, dP, dW, db gorgonia.Value
}

func newModel(img *tensor.Dense, lambda float64) (*model, error) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(img.Shape()...), gorgonia.WithName("x"), gorgonia.WithValue(img))
	w := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 3), gorgonia.WithName("W"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(3, 3), tensor.WithBacking([]float64{0.9, 0.3, -0.2, -0.1, 1.1, 0.2, 0.25, -0.3, 0.8}))))
	b := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("b"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking([]float64{-0.3, 0.1, -0.2}))))
	bx := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(len(boxes)/5, 5), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(len(boxes)/5, 5), tensor.WithBacking(boxes))))
	l, err := loss(x, w, b, bx, crops)
	if err != nil {
		return nil, err
	}
	// P and L + λP; their gradients w.r.t. W and b differentiate ∂L/∂x again.
	p, obj, err := gradnorm.Penalty(l, x, lambda)
	if err != nil {
		return nil, err
	}
	dP, err := ad.Grad(p, w)
	if err != nil {
		return nil, err
	}
	dObj, err := ad.Grad(obj, w, b)
	if err != nil {
		return nil, err
	}
	md := &model{w: w.Value().Data().([]float64), b: b.Value().Data().([]float64)}
	for n, v := range map[*gorgonia.Node]*gorgonia.Value{l: &md.l, p: &md.p, obj: &md.obj, dP[0]: &md.dP, dObj[0]: &md.dW, dObj[1]: &md.db} {
		gorgonia.Read(n, v) // read while running: values may be reused after
	}
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		return nil, err
	}
	md.m = vm
	return md, nil
}

// Eval runs the graph at the current W and b.
func (md *model) Eval() error { md.m.Reset(); return md.m.RunAll() }

// result is what run measured: the first ∂P/∂W and its largest relative
// error against central differences, and the objective L + λP before and
// after training.
type result struct {
	dPdW                     []float64
	maxRelErr, before, after float64
}

func run(steps int, lambda, lr float64, out io.Writer) (result, error) {
	var res result
	img, err := photo.Gopher()
	if err != nil {
		return res, err
	}
	md, err := newModel(img, lambda)
	if err != nil {
		return res, err
	}
	defer md.m.Close()

	// ∂P/∂W against central differences of P through the same graph.
	if err := md.Eval(); err != nil {
		return res, err
	}
	res.dPdW = append([]float64(nil), md.dP.Data().([]float64)...)
	const step = 1e-5
	fmt.Fprintf(out, "∂P/∂W entry   ad.Grad            central difference  rel.err\n")
	for i, a := range res.dPdW {
		orig, p := md.w[i], [2]float64{}
		for j, s := range []float64{step, -step} {
			md.w[i] = orig + s
			if err := md.Eval(); err != nil {
				return res, err
			}
			p[j] = md.p.Data().(float64)
		}
		md.w[i] = orig
		num := (p[0] - p[1]) / (2 * step)
		rel := math.Abs(a-num) / math.Max(math.Abs(a), math.Abs(num))
		res.maxRelErr = math.Max(res.maxRelErr, rel)
		fmt.Fprintf(out, "W[%d,%d]      %+.10e  %+.10e   %.1e\n", i/3, i%3, a, num, rel)
	}
	fmt.Fprintf(out, "max relative error %.1e\n\nstep   L             P             L + λP (λ = %g)\n", res.maxRelErr, lambda)

	// Gradient descent on L + λP.
	for s := 0; s <= steps; s++ {
		if err := md.Eval(); err != nil {
			return res, err
		}
		if s == 0 {
			res.before = md.obj.Data().(float64)
		}
		res.after = md.obj.Data().(float64)
		if s%10 == 0 || s == steps {
			fmt.Fprintf(out, "%4d   %.6e  %.6e  %.6e\n", s, md.l.Data(), md.p.Data(), md.obj.Data())
		}
		for i, v := range md.dW.Data().([]float64) {
			md.w[i] -= lr * v
		}
		for i, v := range md.db.Data().([]float64) {
			md.b[i] -= lr * v
		}
	}
	return res, nil
}
