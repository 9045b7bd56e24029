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
	"bytes"
	_ "embed" // the photograph
	"flag"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"math"
	"os"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// photo is a 150×103 photograph of a plush Go gopher held by two hands
// (golang.org/x/exp, shiny/iconvg/testdata/video-005.jpeg; © The Go Authors,
// BSD-3-Clause, https://go.dev/LICENSE).
//
//go:embed video-005.jpeg
var photo []byte

// boxes are (batch_index, x1, y1, x2, y2) in pixels: gopher, goggles,
// snout, left hand, right hand.
var boxes = []float64{
	0, 58, 6, 131, 97,
	0, 60, 8, 113, 31,
	0, 66, 26, 89, 44,
	0, 0, 32, 54, 92,
	0, 117, 34, 150, 100,
}

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

// result is what run measured: the largest relative error of ∂P/∂W
// against central differences, and the objective L + λP before and after.
type result struct {
	maxRelErr, before, after float64
}

func run(steps int, lambda, lr float64, out io.Writer) (result, error) {
	var res result
	img, err := jpeg.Decode(bytes.NewReader(photo))
	if err != nil {
		return res, err
	}
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 3, img.Bounds().Dy(), img.Bounds().Dx()),
		gorgonia.WithName("x"), gorgonia.WithValue(imageTensor(img)))
	w := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 3), gorgonia.WithName("W"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(3, 3), tensor.WithBacking([]float64{0.9, 0.3, -0.2, -0.1, 1.1, 0.2, 0.25, -0.3, 0.8}))))
	b := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("b"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking([]float64{-0.3, 0.1, -0.2}))))
	bx := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(len(boxes)/5, 5), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(len(boxes)/5, 5), tensor.WithBacking(boxes))))

	// L: z = W·x + b per pixel, y = RoIAlign(tanh(z)), L = mean_k ||y_k − 0.25||².
	h, wd := x.Shape()[2], x.Shape()[3]
	z := gorgonia.Must(gorgonia.Mul(w, gorgonia.Must(gorgonia.Reshape(x, tensor.Shape{3, h * wd}))))
	z = gorgonia.Must(gorgonia.BroadcastAdd(z, gorgonia.Must(gorgonia.Reshape(b, tensor.Shape{3, 1})), nil, []byte{1}))
	a := gorgonia.Must(gorgonia.Tanh(gorgonia.Must(gorgonia.Reshape(z, tensor.Shape{1, 3, h, wd}))))
	y, err := gops.RoIAlign(a, bx, gops.RoIAlignOpts{OutputSize: [2]int{32, 32}, SamplingRatio: 2, Aligned: true})
	if err != nil {
		return res, err
	}
	d := gorgonia.Must(gorgonia.Sub(y, gorgonia.Must(ad.Constant(g, gorgonia.NewF64(0.25)))))
	loss := gorgonia.Must(gorgonia.Mul(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(d)))), gorgonia.Must(ad.Constant(g, gorgonia.NewF64(1/float64(len(boxes)/5))))))

	// P = ||∂L/∂x||² and the objective L + λP; their gradients w.r.t. W and b
	// differentiate ∂L/∂x once more.
	gx, err := ad.Grad(loss, x)
	if err != nil {
		return res, err
	}
	penalty := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(gx[0]))))
	objective := gorgonia.Must(gorgonia.Add(loss, gorgonia.Must(gorgonia.Mul(penalty, gorgonia.Must(ad.Constant(g, gorgonia.NewF64(lambda)))))))
	dP, err := ad.Grad(penalty, w)
	if err != nil {
		return res, err
	}
	dObj, err := ad.Grad(objective, w, b)
	if err != nil {
		return res, err
	}
	var lv, pv, ov, dPv, dWv, dbv gorgonia.Value
	for _, r := range []struct {
		n *gorgonia.Node
		v *gorgonia.Value
	}{{loss, &lv}, {penalty, &pv}, {objective, &ov}, {dP[0], &dPv}, {dObj[0], &dWv}, {dObj[1], &dbv}} {
		gorgonia.Read(r.n, r.v) // read while running: values may be reused after
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	eval := func() error { m.Reset(); return m.RunAll() }
	wData, bData := w.Value().Data().([]float64), b.Value().Data().([]float64)

	// ∂P/∂W against central differences of P through the same graph.
	if err := eval(); err != nil {
		return res, err
	}
	analytic := append([]float64(nil), dPv.Data().([]float64)...)
	const step = 1e-5
	fmt.Fprintf(out, "∂P/∂W entry   ad.Grad            central difference  rel.err\n")
	for i := range wData {
		orig, p := wData[i], [2]float64{}
		for j, s := range []float64{step, -step} {
			wData[i] = orig + s
			if err := eval(); err != nil {
				return res, err
			}
			p[j] = pv.Data().(float64)
		}
		wData[i] = orig
		num := (p[0] - p[1]) / (2 * step)
		rel := math.Abs(analytic[i]-num) / math.Max(math.Abs(analytic[i]), math.Abs(num))
		res.maxRelErr = math.Max(res.maxRelErr, rel)
		fmt.Fprintf(out, "W[%d,%d]      %+.10e  %+.10e   %.1e\n", i/3, i%3, analytic[i], num, rel)
	}
	fmt.Fprintf(out, "max relative error %.1e\n\nstep   L             P             L + λP (λ = %g)\n", res.maxRelErr, lambda)

	// Gradient descent on L + λP.
	for s := 0; s <= steps; s++ {
		if err := eval(); err != nil {
			return res, err
		}
		if s == 0 {
			res.before = ov.Data().(float64)
		}
		res.after = ov.Data().(float64)
		if s%10 == 0 || s == steps {
			fmt.Fprintf(out, "%4d   %.6e  %.6e  %.6e\n", s, lv.Data(), pv.Data(), ov.Data())
		}
		for i, v := range dWv.Data().([]float64) {
			wData[i] -= lr * v
		}
		for i, v := range dbv.Data().([]float64) {
			bData[i] -= lr * v
		}
	}
	return res, nil
}

// imageTensor converts img to [1, 3, H, W] RGB planes in [0, 1].
func imageTensor(img image.Image) *tensor.Dense {
	r := img.Bounds()
	h, w := r.Dy(), r.Dx()
	data := make([]float64, 3*h*w)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			cr, cg, cb, _ := img.At(r.Min.X+x, r.Min.Y+y).RGBA()
			data[y*w+x], data[h*w+y*w+x], data[2*h*w+y*w+x] = float64(cr)/0xffff, float64(cg)/0xffff, float64(cb)/0xffff
		}
	}
	return tensor.New(tensor.WithShape(1, 3, h, w), tensor.WithBacking(data))
}
