//go:build !amd64 || purego

package vmath

// vectorModes runs f once: there are no assembly loops.
func vectorModes(f func(name string)) { f("go") }
