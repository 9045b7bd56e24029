// Package emutest is the harness of the kernel emulation tests (package
// gops' tests of its kernels, package nn's of its own): Run launches a
// Case's kernel in every thread order and grid size of Configs, compares
// its outputs with the CPU kernel's each time (Equal, EqualInts, within
// Tol where a kernel is not bitwise) and checks its writes for races;
// Ran.Kernel runs an entry's subtest and Ran.Check requires every PTX
// entry of a kernel folder to have had one. Up, Out and Region set up device memory. It
// needs package emu, so it is empty without cgo and off linux/amd64.
package emutest
