// Package par is the process-wide worker team, parallel loops and scratch
// memory the kernels share (internal/cpu, internal/gemm, openblas).
//
// For and ForGrains split a loop over [0, n) among the team's workers and
// the caller's goroutine; they are the only places the kernels start or
// wake goroutines, and a panic in a loop body is raised again on the
// caller's goroutine. GOPS_WAIT_POLICY=passive in the environment makes
// idle workers park at once instead of polling for the next loop.
// Outer tells them that several jobs run side by side (package replica),
// and Procs is then one loop's share of the processors.
//
// Scratch keeps the kernels' scratch buffers between calls, bounded by
// ScratchBytes and ScratchBuffers, under one policy for every kernel
// family (its doc comment says why); Pair and Of give a kernel generic
// over two element types the keeper of its type.
package par
