package nn_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// actGoldenCase is one torch evaluation written by
// testdata/gen_golden_act.py.
type actGoldenCase struct {
	Name       string    `json:"name"`
	Op         string    `json:"op"`
	Dtype      string    `json:"dtype"`
	Param      any       `json:"param"`
	InputShape []int     `json:"input_shape"`
	Input      []float64 `json:"input"`
	GradOutput []float64 `json:"grad_output"`
	Output     []float64 `json:"output"`
	GradInput  []float64 `json:"grad_input"`
	VInput     []float64 `json:"v_input"`
	HVPInput   []float64 `json:"hvp_input"`
}

// activation applies the case's activation.
func (c *actGoldenCase) activation(x *gorgonia.Node) (*gorgonia.Node, error) {
	switch c.Op {
	case "relu":
		return nn.ReLU(x)
	case "leaky_relu":
		return nn.LeakyReLU(x, c.Param.(float64))
	case "sigmoid":
		return nn.Sigmoid(x)
	case "tanh":
		return nn.Tanh(x)
	case "silu":
		return nn.SiLU(x)
	case "gelu":
		return nn.GELU(x, c.Param.(string))
	}
	return nil, fmt.Errorf("unknown op %s", c.Op)
}

// TestActivationGolden: the activations' values, gradients of Σ G·act(x)²
// and Hessian-vector products equal torch's, float32 and float64, with
// exact zeros in the input (ReLU's and LeakyReLU's kink: torch's
// derivative there is 0 and the slope).
func TestActivationGolden(t *testing.T) {
	for _, c := range golden.Load[actGoldenCase](t, filepath.Join("..", "testdata", "act_golden.json.gz")) {
		t.Run(c.Name, func(t *testing.T) {
			dt := tensor.Float64
			rtol, atol := 1e-11, 1e-12
			if c.Dtype == "float32" {
				dt, rtol, atol = tensor.Float32, 2e-5, 2e-6
			}
			g := gorgonia.NewGraph()
			node := func(name string, data []float64) *gorgonia.Node {
				return gorgonia.NewTensor(g, dt, len(c.InputShape), gorgonia.WithShape(c.InputShape...), gorgonia.WithName(name),
					gorgonia.WithValue(golden.Tensor(c.Dtype, c.InputShape, data)))
			}
			x := node("x", c.Input)
			y, err := c.activation(x)
			if err != nil {
				t.Fatal(err)
			}
			gy := node("G", c.GradOutput)
			gx, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(gorgonia.Must(gorgonia.HadamardProd(y, gy)), y)))), x)
			if err != nil {
				t.Fatal(err)
			}
			v := node("v", c.VInput)
			hx, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(gx[0], v)))), x)
			if err != nil {
				t.Fatal(err)
			}
			got, err := graphtest.Eval(g, y, gx[0], hx[0])
			if err != nil {
				t.Fatal(err)
			}
			golden.AssertClose(t, "output", got[0], c.Output, rtol, atol)
			golden.AssertClose(t, "grad_input", got[1], c.GradInput, rtol, atol)
			golden.AssertClose(t, "hvp_input", got[2], c.HVPInput, rtol, atol)
		})
	}
}

// TestActivationBadInput: nil, an integer dtype, an unknown GELU
// approximation.
func TestActivationBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	i := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(3))
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3))
	for _, c := range []struct {
		name string
		f    func() (*gorgonia.Node, error)
		want string
	}{
		{"nil", func() (*gorgonia.Node, error) { return nn.ReLU(nil) }, "LeakyReLU: input is nil"},
		{"int", func() (*gorgonia.Node, error) { return nn.SiLU(i) }, "SiLU: input dtype int"},
		{"int tanh", func() (*gorgonia.Node, error) { return nn.Tanh(i) }, "Tanh: input dtype int"},
		{"gelu", func() (*gorgonia.Node, error) { return nn.GELU(x, "erf") }, `GELU: approximate "erf"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.f()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}
