//go:build openblas

package gops

import (
	"gonum.org/v1/netlib/blas/netlib"
	"gorgonia.org/gorgonia"
)

// #cgo LDFLAGS: -lopenblas
import "C"

// With the openblas build tag, Gorgonia's matrix products (DeformConv2d's
// grouped product among them) run on OpenBLAS through cgo instead of gonum's
// pure-Go BLAS. It needs the OpenBLAS headers and library
// (Debian: apt-get install libopenblas-dev).
func init() { gorgonia.Use(netlib.Implementation{}) }
