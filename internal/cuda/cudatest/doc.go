// Package cudatest holds the helpers shared by the GPU tests of packages
// gops and nn, built under the cuda tag: Gorgonia's elementwise PTX
// registered from GOPS_GORGONIA_PTX, host copies of device values, random
// inputs and the GPU-against-CPU tolerance.
//
// Without the cuda tag the package is empty.
package cudatest
