package nn_test

import (
	"strings"
	"testing"

	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// affine is a Model: x·wᵀ + b (nn.Linear), and in training mode twice
// that, so a test sees which mode the evaluator builds.
func affine(p *nn.Params, x *gorgonia.Node, train bool) (*gorgonia.Node, error) {
	w, err := p.Nodes(x.Graph())
	if err != nil {
		return nil, err
	}
	y, err := nn.Linear(x, w[0], w[1])
	if err == nil && train {
		y, err = gorgonia.Add(y, y)
	}
	return y, err
}

// The evaluator runs the model in eval mode on the parameter set's current
// values (an in-place update is seen by the next Forward, with no copy),
// builds one graph per input shape and reuses it.
func TestEvaluatorSharesParams(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			p := nn.NewParams()
			if err := p.Add("fc.weight", denseOf(dt, []float64{1, 2, 3, 4, 5, 6}, 2, 3)); err != nil {
				t.Fatal(err)
			}
			if err := p.Add("fc.bias", denseOf(dt, []float64{0.5, -1}, 2)); err != nil {
				t.Fatal(err)
			}
			ev, err := nn.NewEvaluator(p, affine)
			if err != nil {
				t.Fatal(err)
			}
			defer ev.Close()
			x := denseOf(dt, []float64{1, 0, -1, 2, 1, 0}, 2, 3)
			check := func(in tensor.Tensor, want []float64) {
				t.Helper()
				out, err := ev.Forward(in)
				if err != nil {
					t.Fatal(err)
				}
				got := valueFloats(out)
				if len(got) != len(want) {
					t.Fatalf("got %v, want %v", got, want)
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("got %v, want %v", got, want)
					}
				}
			}
			check(x, []float64{-1.5, -3, 4.5, 12})
			// An optimizer's in-place step on the owned tensor.
			w, _ := p.Value("fc.weight")
			switch d := w.Data().(type) {
			case []float64:
				d[0] = 10
			case []float32:
				d[0] = 10
			}
			check(x, []float64{7.5, -3, 22.5, 12})
			// Another batch size: a second graph; the first still works.
			check(denseOf(dt, []float64{0, 0, 1}, 1, 3), []float64{3.5, 5})
			check(x, []float64{7.5, -3, 22.5, 12})
		})
	}
}

func TestEvaluatorErrors(t *testing.T) {
	p := nn.NewParams()
	if err := p.Add("fc.weight", denseOf(tensor.Float64, []float64{1, 2, 3, 4, 5, 6}, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if err := p.Add("fc.bias", denseOf(tensor.Float64, []float64{0, 0}, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := nn.NewEvaluator(nil, affine); err == nil || !strings.Contains(err.Error(), "parameter set is nil") {
		t.Errorf("nil params: %v", err)
	}
	if _, err := nn.NewEvaluator(p, nil); err == nil || !strings.Contains(err.Error(), "model is nil") {
		t.Errorf("nil model: %v", err)
	}
	ev, err := nn.NewEvaluator(p, affine)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		x    tensor.Tensor
		want string
	}{
		{"nil", nil, "input is nil"},
		{"int", tensor.New(tensor.WithShape(1, 3), tensor.WithBacking([]int{1, 2, 3})), "want float32 or float64"},
		{"wrong width", denseOf(tensor.Float64, []float64{1, 2}, 1, 2), "building the model for input float64 (1, 2)"},
	} {
		if _, err := ev.Forward(c.x); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
	if err := ev.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ev.Forward(denseOf(tensor.Float64, []float64{1, 2, 3}, 1, 3)); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("after Close: %v", err)
	}
	wrongGraph := func(p *nn.Params, x *gorgonia.Node, train bool) (*gorgonia.Node, error) {
		return gorgonia.NewScalar(gorgonia.NewGraph(), tensor.Float64, gorgonia.WithName("elsewhere")), nil
	}
	ev2, _ := nn.NewEvaluator(p, wrongGraph)
	if _, err := ev2.Forward(denseOf(tensor.Float64, []float64{1, 2, 3}, 1, 3)); err == nil || !strings.Contains(err.Error(), "not in the input's graph") {
		t.Errorf("output in another graph: %v", err)
	}
}
