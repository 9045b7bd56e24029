package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGenerated: the committed k_*.cc and k_table.h are what gen writes
// from the committed .cu, .cuh and .ptx files.
func TestGenerated(t *testing.T) {
	files, err := Files("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("..", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("internal/cudaemu/%s is out of date: run go generate ./internal/cudaemu", name)
		}
	}
	old, _ := filepath.Glob("../k_*")
	for _, f := range old {
		if _, ok := files[filepath.Base(f)]; !ok {
			t.Errorf("internal/cudaemu/%s is no generated file: run go generate ./internal/cudaemu", filepath.Base(f))
		}
	}
}
