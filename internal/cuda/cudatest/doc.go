// Package cudatest holds the helpers shared by the GPU tests of packages
// gops and nn, built under the cuda tag: Gorgonia's elementwise PTX
// registered from GOPS_GORGONIA_PTX, host copies of device values, random
// inputs, the GPU-against-CPU tolerance, and the check itself: a graph's
// weighted gradients of order 1 and 2 (Checker.Grads) run on the GPU and
// compared with a CPU evaluation (Checker.Compare).
//
// Without the cuda tag the package is empty.
package cudatest
