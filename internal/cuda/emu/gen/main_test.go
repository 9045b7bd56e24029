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
	files, err := Files("../..")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("..", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("internal/cuda/emu/%s is out of date: run go generate ./internal/cuda/emu", name)
		}
	}
	old, _ := filepath.Glob("../k_*")
	for _, f := range old {
		if _, ok := files[filepath.Base(f)]; !ok {
			t.Errorf("internal/cuda/emu/%s is no generated file: run go generate ./internal/cuda/emu", filepath.Base(f))
		}
	}
}

// TestDuplicateEntry: gen refuses two PTX entries of one name (the
// emulator's table is by name; one would shadow the other).
func TestDuplicateEntry(t *testing.T) {
	root := t.TempDir()
	for _, f := range []struct{ dir, base string }{{"kernels/gops", "a"}, {"kernels/nn", "b"}} {
		dir := filepath.Join(root, f.dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range map[string]string{f.base + ".cu": "", f.base + ".ptx": ".visible .entry same_name(\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := Files(root); err == nil {
		t.Fatal("gen accepted the entry same_name in two folders")
	} else {
		t.Log(err)
	}
}
