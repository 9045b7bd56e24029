// Package emu runs gops' and nn's CUDA kernels (package kernels' .cu
// sources) on the CPU, unmodified, to test them where there is no GPU:
// the kernels' arithmetic, index math, bounds and independence of the
// order in which the threads run.
//
// Launch runs a kernel, by its PTX entry name, with the host code's
// arguments over the host code's grid (package grid), every (block,
// thread) pair once in the order a Config picks (forwards, backwards,
// shuffled, a smaller grid cap, chosen threads); CheckExclusive runs the
// threads one at a time over Poison-filled outputs and reports an element
// written twice. Device memory is C memory: Buffer, Alloc, Upload, Ptr,
// Download, Slice. Kernels is the table of compiled kernels that gen
// writes from the committed PTX (go generate). The package needs cgo and
// a C++17 compiler, on linux/amd64 only (the tests compare with Go
// kernels bitwise, and only there does Go never fuse a*b+c); elsewhere it
// is empty. How the .cu files compile as C++, and what emulation does not
// prove: docs/ARCHITECTURE.md ("The kernels on the CPU").
package emu

//go:generate go run ./gen
