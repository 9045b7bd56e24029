package ad

import "gorgonia.org/tensor"

// The tensor package keeps a pool of *tensor.Dense: tensor.ReturnTensor
// puts one back and the next tensor.New hands it out again. Gorgonia's
// LispMachine returns the temporaries of its derivatives of Sqrt, Inverse
// and Square there (sqrtDiff, inverseDiff, squareDiff; in detection's tests
// the only callers, 34 times a run) while its dual values can still hold
// them, and a *Dense handed out a second time is one struct for two values.
// In a later graph of the same process a TapeMachine value then changed
// shape within a run: TestMAMLDirectional failed in CI with a (64) sum read
// as a (2, 4, 1, 1) tensor, after the LispMachine tests before it. Loading
// package ad switches that pool off (tensor.DontUsePool), for every user of
// the process: tensor.New then always makes a new *Dense (a few dozen
// bytes; the elements were never pooled), and ReturnTensor does nothing.
func init() {
	tensor.DontUsePool()
}
