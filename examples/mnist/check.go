package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/tensor"
)

// CheckPenalty checks the gradient of the penalised cost along a random
// direction against central differences (graphtest.Directional, orders 1
// and 2: the penalty's gradient w.r.t. the parameters is a third
// derivative of the network), on a float64 copy of the network at its
// initialisation and a fixed batch of 4 random images (distinct values:
// no max-pool ties). It returns the report, and an error beyond the
// check's tolerance.
func CheckPenalty(gamma float64, seed uint64) (string, error) {
	p, err := NewParams(tensor.Float64, seed)
	if err != nil {
		return "", err
	}
	const b = 4
	step, err := NewStep(p, b, gamma)
	if err != nil {
		return "", err
	}
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float64, b*28*28)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	y := []int{3, 1, 4, 1}
	if err := letAll(step.X, tensor.New(tensor.WithShape(b, 1, 28, 28), tensor.WithBacking(x)),
		step.Y, tensor.New(tensor.WithShape(b), tensor.WithBacking(y))); err != nil {
		return "", err
	}
	wrt, err := p.Nodes(step.Cost.Graph())
	if err != nil {
		return "", err
	}
	rep, err := graphtest.Directional(step.Cost, wrt, graphtest.DirectionalOpts{Order: 2, Seed: seed})
	if rep == nil {
		return "", err
	}
	return fmt.Sprintf("R1 penalty γ = %g, %v", gamma, rep), err
}
