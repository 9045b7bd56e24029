package nn_test

import (
	"fmt"
	"testing"

	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// actGoldenCase is one torch evaluation written by
// testdata/gen_golden_act.py.
type actGoldenCase struct {
	inputGolden
	Op    string `json:"op"`
	Param any    `json:"param"`
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
	runGolden(t, "act_golden.json.gz", func(t *testing.T, gg *goldenGraph, c *actGoldenCase) {
		x := gg.node("x", c.InputShape, c.Input)
		y, err := c.activation(x)
		if err != nil {
			t.Fatal(err)
		}
		gg.checkInput(y, x, &c.inputGolden)
	})
}

// TestActivationBadInput: nil, an integer dtype, an unknown GELU
// approximation.
func TestActivationBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	i := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(3))
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3))
	runErrCases(t, []errCase{
		{"nil", func() (*gorgonia.Node, error) { return nn.ReLU(nil) }, "LeakyReLU: input is nil"},
		{"int", func() (*gorgonia.Node, error) { return nn.SiLU(i) }, "SiLU: input dtype int"},
		{"int tanh", func() (*gorgonia.Node, error) { return nn.Tanh(i) }, "Tanh: input dtype int"},
		{"gelu", func() (*gorgonia.Node, error) { return nn.GELU(x, "erf") }, `GELU: approximate "erf"`},
	})
}
