package main

import (
	"io"
	"testing"
)

// The second derivative ∂P/∂W agrees with central differences, and training
// on L + λP lowers it.
func TestRun(t *testing.T) {
	res, err := run(5, 0.5, 3e-4, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !(res.maxRelErr < 1e-6) {
		t.Errorf("∂P/∂W vs central differences: max relative error %g, want < 1e-6", res.maxRelErr)
	}
	if !(res.after < res.before) {
		t.Errorf("L + λP went from %g to %g, want lower", res.before, res.after)
	}
}
