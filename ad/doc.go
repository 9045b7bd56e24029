// Package ad differentiates Gorgonia expression graphs to any order and
// builds new differentiable ops.
//
// Grad and VJP are a reverse-mode pass that keeps its own table of
// gradients, so a gradient can be differentiated again, as often as needed:
// gradient penalties, MAML, Hessian-vector products. Use them instead of
// gorgonia.Grad (v0.9.18), which caches derivatives on the nodes and
// returns wrong numbers when called a second time on a graph. They also
// work around the known defects of Gorgonia's own derivative rules
// (docs/GORGONIA.md), and report an op without a usable derivative as an
// error naming it.
//
// Apply puts an op described by an OpSpec into a graph: a shape rule, a
// forward computation on values (Forward, or a Kernel written once for
// float32 and float64, see Floats) and a backward that returns graph nodes.
// Both of Gorgonia's VMs use that one backward, and an op whose backward is
// built from differentiable ops is itself differentiable to every order.
// LinearPair declares an op and its transpose, each the other's backward, in
// one call. Constant makes constant nodes that Gorgonia does not confuse
// (Scalar: a float32 or float64 scalar one), and Reshape a copy that
// Gorgonia's VMs cannot overwrite. RunAll runs a machine and Unwrap takes
// its error apart: the failing op's own message (a *RunError naming the
// node) instead of Gorgonia's "PC 3. Failed to execute instruction …"
// prefix. ReuseResults
// lets a graph that runs many times write each op's results into memory
// of earlier runs.
//
// The base that packages gops and nn build their ops on: Builder writes a
// formula on nodes (Gorgonia's arithmetic, constants of the nodes' dtype,
// Apply) as one expression that keeps the first error, so library code
// needs no gorgonia.Must; EmptyResult (with NoElements) is the result of
// an op on an input without elements; Reduction is a loss's typed
// reduction ("none", "mean", "sum"), whose zero value is each function's
// own default.
//
// NewTapeMachine is gorgonia.NewTapeMachine for large graphs: Gorgonia's
// TapeMachine computes two nodes whose 32-bit hashes collide once, and
// hands the first one's value to the second one's readers, a chance of
// 1 − exp(−n²/2³³) for a graph of n nodes. NewTapeMachine first gives such
// nodes hashes of their own (DistinctHashes); Grad does the same for the
// graph it returns, and Apply, Builder and Grad's rules for their inputs
// before building on them (Gorgonia would merge the same op on two
// colliding nodes as it is built).
//
// Loading the package switches the tensor package's pool of *tensor.Dense
// off (tensor.DontUsePool), for the whole process: Gorgonia's LispMachine
// returns tensors there that can still be in use, so a later tensor.New
// could hand out one that another value still holds (docs/GORGONIA.md,
// "Pooled types and node merging").
package ad
