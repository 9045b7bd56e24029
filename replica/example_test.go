package replica_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/replica"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// sumOfSquares is one replica: a compiled graph of y = Σ x² and
// dy/dx = 2x for x of shape [3], with its machine and its input node.
type sumOfSquares struct {
	m     gorgonia.VM
	x     *gorgonia.Node
	y, dx gorgonia.Value
}

func newSumOfSquares(int) (*sumOfSquares, error) {
	g := gorgonia.NewGraph()
	r := &sumOfSquares{x: gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"))}
	sq, err := gorgonia.Square(r.x)
	if err != nil {
		return nil, err
	}
	y, err := gorgonia.Sum(sq)
	if err != nil {
		return nil, err
	}
	grads, err := ad.Grad(y, r.x)
	if err != nil {
		return nil, err
	}
	gorgonia.Read(y, &r.y)
	gorgonia.Read(grads[0], &r.dx)
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
	r.m = vm
	return r, nil
}

func (r *sumOfSquares) Close() error { return r.m.Close() }

// Four jobs on a pool of two replicas of one graph: each job binds its
// input, runs its replica and writes its results into its own slot; the
// slots are then summed in job order, bitwise what a sequential loop over
// one graph gives for any GOMAXPROCS.
func Example() {
	pool, err := replica.NewPool(2, newSumOfSquares)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	inputs := [][]float64{{1, 2, 3}, {0, 1, 0}, {-1, 0.5, 2}, {3, 0, -4}}
	ys := make([]float64, len(inputs))
	grads := make([][]float64, len(inputs))
	err = pool.Run(len(inputs), func(r *sumOfSquares, j int) error {
		x := tensor.New(tensor.WithShape(3), tensor.WithBacking(append([]float64(nil), inputs[j]...)))
		if err := gorgonia.Let(r.x, x); err != nil {
			return err
		}
		r.m.Reset()
		if err := r.m.RunAll(); err != nil {
			return fmt.Errorf("input %d: %w", j, err)
		}
		ys[j] = r.y.Data().(float64)
		grads[j] = append([]float64(nil), r.dx.Data().([]float64)...)
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var total float64
	for j := range inputs {
		total += ys[j]
		fmt.Println(j, ys[j], grads[j])
	}
	fmt.Println("total", total)
	// Output:
	// 0 14 [2 4 6]
	// 1 1 [0 2 0]
	// 2 5.25 [-2 1 4]
	// 3 25 [6 0 -8]
	// total 45.25
}
