//go:build linux

package cpu

import (
	"syscall"
	"testing"
	"unsafe"
)

// guarded returns a []T of n elements placed against a PROT_NONE page: if
// tail, its last element ends where the guard page begins; otherwise its
// first element starts right after a guard page. free unmaps it.
func guarded[T any](t testing.TB, n int, tail bool) (s []T, free func()) {
	var z T
	size := int(unsafe.Sizeof(z))
	pg := syscall.Getpagesize()
	data := (n*size + pg - 1) / pg * pg
	if data == 0 {
		data = pg
	}
	mem, err := syscall.Mmap(-1, 0, data+2*pg, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[:pg], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[pg+data:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	off := pg
	if tail {
		off = pg + data - n*size
	}
	base := unsafe.Pointer(&mem[off])
	s = unsafe.Slice((*T)(base), n)
	return s, func() { syscall.Munmap(mem) }
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
