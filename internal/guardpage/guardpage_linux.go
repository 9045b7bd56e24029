//go:build linux

// Package guardpage places slices against pages that fault when touched,
// for tests that catch a kernel reading or writing one element past
// (or before) a slice: a plain Go slice's neighbours are other live
// memory, and such a read goes unnoticed.
package guardpage

import (
	"fmt"
	"syscall"
	"unsafe"
)

// Slice returns a []T of n elements in fresh anonymous memory with a
// PROT_NONE page on each side: with tail, its last element ends where the
// following guard page begins; otherwise its first element starts right
// after the preceding one (between them, the rest of the data pages is
// readable and writable). free unmaps it; the slice must not be used
// after. It returns an error when the mapping or the protection fails,
// or for a negative n.
func Slice[T any](n int, tail bool) (s []T, free func(), err error) {
	if n < 0 {
		return nil, nil, fmt.Errorf("guardpage: %d elements", n)
	}
	var z T
	size, pg := int(unsafe.Sizeof(z)), syscall.Getpagesize()
	data := max(pg, (n*size+pg-1)/pg*pg)
	mem, err := syscall.Mmap(-1, 0, data+2*pg, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("guardpage: mmap: %w", err)
	}
	free = func() { syscall.Munmap(mem) }
	if err := syscall.Mprotect(mem[:pg], syscall.PROT_NONE); err != nil {
		free()
		return nil, nil, fmt.Errorf("guardpage: mprotect: %w", err)
	}
	if err := syscall.Mprotect(mem[pg+data:], syscall.PROT_NONE); err != nil {
		free()
		return nil, nil, fmt.Errorf("guardpage: mprotect: %w", err)
	}
	off := pg
	if tail {
		off = pg + data - n*size
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&mem[off])), n), free, nil
}
