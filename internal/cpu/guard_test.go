//go:build linux

package cpu

import (
	"testing"

	"github.com/gops-dev/gops/internal/guardpage"
)

// guarded returns a []T of n elements placed against a PROT_NONE page: if
// tail, its last element ends where the guard page begins; otherwise its
// first element starts right after a guard page (guardpage.Slice). free
// unmaps it.
func guarded[T any](t testing.TB, n int, tail bool) (s []T, free func()) {
	s, free, err := guardpage.Slice[T](n, tail)
	if err != nil {
		t.Fatal(err)
	}
	return s, free
}

// guardedCopies returns guard, which copies a slice into a new one placed
// against a guard page (tail: at its end, else at its start), and free,
// which unmaps every copy it made.
func guardedCopies[T any](t testing.TB, tail bool) (guard func(src []T) []T, free func()) {
	var frees []func()
	guard = func(src []T) []T {
		s, free := guarded[T](t, len(src), tail)
		frees = append(frees, free)
		copy(s, src)
		return s
	}
	return guard, func() {
		for _, f := range frees {
			f()
		}
	}
}
