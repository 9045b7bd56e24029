// Package glue is the plumbing shared by the CUDA twins of packages gops
// and nn, built under the cuda tag (glue.go): a package's PTX modules
// registered with Gorgonia and its kernels looked up by name (Module),
// WithCUDA, which gives an ad.OpSpec the CUDA function that allocates the
// result and has the op's launch code run its kernels, and the helpers that
// launch code uses (Call: device buffers, copies, the kernel launch).
//
// Without the cuda tag the package is empty, so the CPU build never links
// gorgonia.org/cu.
package glue
