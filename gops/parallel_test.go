package gops

import (
	"runtime"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestParallelForPanic checks that a panic in one chunk of parallelFor
// reaches the caller's goroutine, where recover sees it, instead of killing
// the process from a worker goroutine.
func TestParallelForPanic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	got := func() (r any) {
		defer func() { r = recover() }()
		ParallelFor(8, func(lo, hi int) {
			if lo <= 5 && 5 < hi {
				panic("chunk with 5")
			}
		})
		return nil
	}()
	if got != "chunk with 5" {
		t.Fatalf("recovered %v, want the chunk's panic", got)
	}
}

// TestOpDoPanicIsError checks that a panic in a kernel goroutine reaches
// the op's caller as an error naming the op.
func TestOpDoPanicIsError(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	op, err := NewOp(OpSpec{
		Name:       "Broken",
		InputDims:  []int{1},
		OutputDims: 1,
		Shape:      func(s []tensor.Shape) (tensor.Shape, error) { return s[0], nil },
		Forward: func([]gorgonia.Value) (gorgonia.Value, error) {
			ParallelFor(8, func(lo, hi int) {
				var s []int
				_ = s[lo+hi] // index out of range in a worker
			})
			return nil, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = op.Do(tensor.New(tensor.WithBacking([]float64{1, 2})))
	if err == nil || !strings.Contains(err.Error(), "gops: Broken: internal error") || !strings.Contains(err.Error(), "index out of range") {
		t.Fatalf("error %v", err)
	}
}
