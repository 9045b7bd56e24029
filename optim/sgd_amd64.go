//go:build amd64 && !purego

package optim

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// sgdAVX2 says whether sgdMomS may run (AVX2 and FMA3).
var sgdAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// sgdMomS is sgdUpdate's loop for float32 with momentum (no Nesterov, no
// maximize) over 8·blocks elements, in AVX2 registers: d = fma(wd, p, g)
// (d = g without decay: flags bit 0), b = fma(damp1, d, b·mom) (b = d on
// the first step, a new buffer: flags bit 1), p = fma(negLR, b, p), each
// fma rounded once as fma32.
//
//go:noescape
func sgdMomS(param, grad, buf *float32, blocks int, wd, mom, damp1, negLR float32, flags int)

// sgdMomVec runs sgdMomS on the leading whole registers of ps, gs and bs
// (of one length) when T is float32 and the CPU has AVX2 and FMA3, and
// returns how many elements it updated (0: all left to the caller); first
// is the step that fills a new buffer.
func sgdMomVec[T float](ps, gs, bs []T, wd, mom, damp1, negLR T, decay, first bool) int {
	if !sgdAVX2 || unsafe.Sizeof(ps[0]) != 4 {
		return 0
	}
	blocks := len(ps) / 8
	if blocks == 0 {
		return 0
	}
	f := func(s []T) *float32 { return (*float32)(unsafe.Pointer(&s[0])) }
	flags := 0
	if decay {
		flags |= 1
	}
	if first {
		flags |= 2
	}
	sgdMomS(f(ps), f(gs), f(bs), blocks, float32(wd), float32(mom), float32(damp1), float32(negLR), flags)
	return 8 * blocks
}
