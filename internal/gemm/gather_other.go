//go:build !amd64 || purego

package gemm

import "unsafe"

// gatherAVX2 is false here: no assembly.
var gatherAVX2 = false

// gatherAsm does nothing here: GatherPanelRows' loop copies every row.
func gatherAsm[T Float](dst []T, ld int, src []T, offs []int, w int) bool { return false }

// spreadAsm does nothing here: packBPanels' loop copies every run.
func spreadAsm(dst, src unsafe.Pointer, n, stride, bytes int) bool { return false }
