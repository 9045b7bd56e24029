//go:build nvrtc

package main

import "testing"

// TestCommittedPTX: the committed PTX is NVRTC's output for the committed
// sources, so the two never drift (scripts/cuda-check runs it).
func TestCommittedPTX(t *testing.T) {
	if err := Check(".."); err != nil {
		t.Fatal(err)
	}
}
