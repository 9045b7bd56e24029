//go:build nvrtc

package main

import (
	"path/filepath"
	"testing"
)

// TestCommittedPTX: the committed PTX is NVRTC's output for the committed
// sources, in gops and nn, so the two never drift (scripts/cuda-check runs it).
func TestCommittedPTX(t *testing.T) {
	// The test runs in internal/cuda/kernels/gen: the folders of Dirs from there.
	for _, d := range Dirs {
		if err := Check(filepath.Join("..", "..", "..", "..", d)); err != nil {
			t.Error(err)
		}
	}
}
