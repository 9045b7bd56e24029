package meta_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/meta"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ExampleMAML is one MAML step on a parameter θ = 0 with the support
// loss L_s(θ) = (θ − 2)² and the query loss L_q(θ) = (θ − 3)²: the inner
// step of α = 0.25 goes to θ' = θ − α·2(θ − 2) = 1, where L_q = 4. The
// second-order meta-gradient is (1 − α·∂²L_s)·∂L_q(θ') = 0.5·(−4) = −2,
// the first-order one ∂L_q(θ') = −4.
func ExampleMAML() {
	for _, firstOrder := range []bool{false, true} {
		g := gorgonia.NewGraph()
		theta := gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithName("theta"), gorgonia.WithValue(0.0))
		// distance is the loss (θ − target)² at the parameters at.
		distance := func(target float64) meta.LossAt {
			return func(at gorgonia.Nodes) (*gorgonia.Node, error) {
				b := ad.NewBuilder(at[0])
				return b.Node(b.Square(b.AddConst(at[0], -target)))
			}
		}
		step, err := meta.MAML(gorgonia.Nodes{theta}, distance(2), distance(3),
			meta.MAMLOpts{InnerLR: 0.25, FirstOrder: firstOrder})
		if err != nil {
			panic(err)
		}
		// Read the values while the graph runs: after the run, a node's
		// Value may hold memory that a later op reused.
		var adapted, loss, grad gorgonia.Value
		gorgonia.Read(step.Adapted[0], &adapted)
		gorgonia.Read(step.QueryLoss, &loss)
		gorgonia.Read(step.MetaGrads[0], &grad)
		vm, err := ad.NewTapeMachine(g)
		if err != nil {
			panic(err)
		}
		if err := vm.RunAll(); err != nil {
			panic(err)
		}
		fmt.Printf("first order %v: θ' = %v, L_q(θ') = %v, meta-gradient %v\n",
			firstOrder, adapted, loss, grad)
		vm.Close()
	}
	// Output:
	// first order false: θ' = 1, L_q(θ') = 4, meta-gradient -2
	// first order true: θ' = 1, L_q(θ') = 4, meta-gradient -4
}
