// Package emutest is the harness of the kernel emulation tests (package
// gops' tests of its kernels, package nn's of its own): a kernel launched
// in several thread orders and grid sizes, its outputs compared with the
// CPU kernel's each time, its writes checked for races, and every PTX
// entry of a kernel folder checked to have run. It needs package emu, so
// it is empty without cgo and off linux/amd64.
package emutest
