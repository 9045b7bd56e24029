package main

import (
	"os"
	"testing"

	"github.com/gops-dev/gops/openblas"
)

// TestMain runs the tests on the BLAS the demo runs on: main calls
// openblas.UseFromEnv before anything else, so they do too (OpenBLAS where it is
// installed; GOPS_BLAS=gonum keeps gonum's pure-Go BLAS).
func TestMain(m *testing.M) {
	openblas.UseFromEnv()
	os.Exit(m.Run())
}
