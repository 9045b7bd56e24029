//go:build amd64 && !purego

package vmath

import "golang.org/x/sys/cpu"

// hasAVX512DQ: sigSoftS512 uses AVX512DQ instructions besides AVX512F.
var hasAVX512DQ = cpu.X86.HasAVX512DQ

// sigSoftS is SigmoidSoftplus32's AVX2 loop (sigsoft_amd64.s), n a
// positive multiple of 8.
//
//go:noescape
func sigSoftS(x *float32, s, sc, l *float64, n int)

// sigSoftS512 is sigSoftS with AVX-512, n a positive multiple of 16.
//
//go:noescape
func sigSoftS512(x *float32, s, sc, l *float64, n int)

// sigmoidSoftplus32 runs the AVX-512 loop on the longest prefix of a
// multiple of 16 logits it takes, the AVX2 one on the rest, the last
// len mod 8 on a padded copy: the three give the same bits.
func sigmoidSoftplus32(x []float32, s, sc, l []float64) {
	if !hasAVX2 {
		sigmoidSoftplusGo(x, s, sc, l)
		return
	}
	var n int
	if hasAVX512 && hasAVX512DQ { // VPMOVQ2M, VORPD on ZMM are AVX512DQ
		if n = len(x) &^ 15; n > 0 {
			sigSoftS512(&x[0], &s[0], &sc[0], &l[0], n)
		}
	}
	if m := len(x) &^ 7; m > n {
		sigSoftS(&x[n], &s[n], &sc[n], &l[n], m-n)
		n = m
	}
	if n < len(x) {
		var px [8]float32
		var ps, psc, pl [8]float64
		copy(px[:], x[n:])
		sigSoftS(&px[0], &ps[0], &psc[0], &pl[0], 8)
		copy(s[n:], ps[:])
		copy(sc[n:], psc[:])
		copy(l[n:], pl[:])
	}
}
