// Package glue is the plumbing shared by the CUDA twins of packages gops
// and nn, built under the cuda tag: a package's PTX modules
// (package kernels) registered with Gorgonia and its kernels looked up by
// name (Module), Module.Twin, which makes an op's CUDA function (the type
// of ad.OpSpec.CUDA) that allocates the result and has the op's launch
// code run its kernels, and the helpers that launch code uses (Call:
// device buffers, copies, the kernel launch, every integer argument a
// long long). It imports no public package of the module.
//
// Without the cuda tag the package is empty, so the CPU build never links
// gorgonia.org/cu.
package glue
