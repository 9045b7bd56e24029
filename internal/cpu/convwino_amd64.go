//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// winoAVX512 enables the AVX-512 loops of Winograd's input, output and
// weight transforms (float32; tests switch it off to compare with the Go
// loops). The input transform's blocks of 8 tiles store Y24 and up (and
// with a mask): AVX512VL.
var winoAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL

// winoAVX2 enables the AVX2 loops of Winograd's input and output
// transforms (convwino2_amd64.s), float32, where winoAVX512 is off (tests
// switch both off to compare with the Go loops).
var winoAVX2 = cpu.X86.HasAVX2

// winoOut8 is winoOutS in AVX2 on n tiles (a multiple of 8).
//
//go:noescape
func winoOut8(m *float32, stride int, top, bottom *float32, n int)

// winoOut8Tail is winoOut8 on one block of 0 < r < 8 tiles: the first r
// lanes of M read, the first lo + hi = 2r output columns of each row
// written (lo = min(2r, 8), hi = 2r − lo).
//
//go:noescape
func winoOut8Tail(m *float32, stride int, top, bottom *float32, r, lo, hi int)

// winoIn8 is winoInS in AVX2 on n tiles (a multiple of 8).
//
//go:noescape
func winoIn8(rows *float32, width int, v *float32, stride int, n int)

// winoIn8Tail is winoIn8 on one block of r < 8 tiles: of each row the
// first lo columns from 0 and from 2 and the first hi from 8 and from 10
// read (lo = min(2r, 8), hi = 2r − lo: columns 0 to 2r + 1), the first r
// tiles of each plane written.
//
//go:noescape
func winoIn8Tail(rows *float32, width int, v *float32, stride int, r, lo, hi int)

// winoOutS is winoOutputRow's loop on n tiles (a multiple of 16) of
// float32, all of whose columns are in the image: M_ξ at m + ξ·stride.
//
//go:noescape
func winoOutS(m *float32, stride int, top, bottom *float32, n int)

// winoOutSTail is winoOutS on one block of fewer than 16 tiles: those of
// the mask lanes read, the output columns of the mask outs written (bits
// 0–15: the first 8 tiles' two columns each, 16–31 the last 8's).
//
//go:noescape
func winoOutSTail(m *float32, stride int, top, bottom *float32, lanes, outs uint32)

// winoOutAsm runs winoOutS, then winoOutSTail, on the tiles of a tile
// row whose two columns are in the image, when it can (winoOutputRow's
// arguments, the ξ planes stride elements apart), and returns how many
// tiles it did: all of those (whole blocks of 16, then a masked block of
// the rest; without AVX-512, winoOut8 on blocks of 8, then winoOut8Tail),
// float32 only. Its sums are the Go loop's, in the same order (no fused
// multiply-add), so the bits are too (a NaN's payload aside where an
// addition meets two NaNs: the Go compiler may order those operands
// otherwise).
func winoOutAsm[T Float](ms *[16][]T, o, tw, stride int, top, bottom []T) int {
	n := min(tw, len(top)/2)
	if !winoAVX512 && !winoAVX2 || unsafe.Sizeof(T(0)) != 4 || n == 0 {
		return 0
	}
	_ = ms[15][o+n-1] // in bounds: every M_ξ holds the n tiles from o (the ms are one M)
	_, _ = top[2*n-1], bottom[2*n-1]
	m := func(j int) *float32 { return (*float32)(unsafe.Pointer(&ms[0][o+j])) }
	at := func(row []T, j int) *float32 { return (*float32)(unsafe.Pointer(&row[2*j])) }
	if !winoAVX512 {
		n8 := n / 8 * 8
		if n8 > 0 {
			winoOut8(m(0), stride, at(top, 0), at(bottom, 0), n8)
		}
		if r := n - n8; r > 0 {
			lo := min(2*r, 8)
			winoOut8Tail(m(n8), stride, at(top, n8), at(bottom, n8), r, lo, 2*r-lo)
		}
		return n
	}
	n16 := n / 16 * 16
	if n16 > 0 {
		winoOutS(m(0), stride, at(top, 0), at(bottom, 0), n16)
	}
	if r := n - n16; r > 0 {
		winoOutSTail(m(n16), stride, at(top, n16), at(bottom, n16), uint32(1)<<r-1, uint32(1)<<(2*r)-1)
	}
	return n
}

// winoInS is winoInputRow's loop on n tiles (a multiple of 16) of
// float32: the four padded rows width elements apart from rows, element ξ
// of tile tc at v[ξ·stride + tc].
//
//go:noescape
func winoInS(rows *float32, width int, v *float32, stride int, n int)

// winoInS8 is winoInS on one block of 8 tiles.
//
//go:noescape
func winoInS8(rows *float32, width int, v *float32, stride int)

// winoInS8Tail is winoInS8 on r < 8 tiles: the row columns of mask cols
// read (each row's first 2r and, 2 further on, 2r again; the others 0),
// the tiles of mask tiles stored.
//
//go:noescape
func winoInS8Tail(rows *float32, width int, v *float32, stride int, cols, tiles uint32)

// winoInAsm runs winoInS, then winoInS8, then winoInS8Tail, on the
// tiles of a tile row when it can (winoInputRow's arguments, the ξ planes
// equally spaced) and returns how many tiles it did: all of them (whole
// blocks of 16, then one of 8, then a masked block of the rest; without
// AVX-512, winoIn8 on blocks of 8, then winoIn8Tail), float32 only. Its
// sums are the Go loop's, in the same order, so the bits are too (a NaN's
// payload aside where an addition meets two NaNs).
func winoInAsm[T Float](rows []T, width int, vs *[16][]T, o, tw int) int {
	n := tw / 8 * 8
	if !winoAVX512 && !winoAVX2 || unsafe.Sizeof(T(0)) != 4 || tw == 0 {
		return 0
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(vs[0])))
	stride := uintptr(unsafe.Pointer(unsafe.SliceData(vs[1]))) - base
	for xi := range vs {
		// Equally spaced planes, each holding tiles o to o+tw−1.
		if uintptr(unsafe.Pointer(unsafe.SliceData(vs[xi])))-base != uintptr(xi)*stride || len(vs[xi]) < o+tw {
			return 0
		}
	}
	_, _ = rows[3*width+2*tw+1], rows[2*tw+1] // the last block reads columns up to 2tw+1 of each row
	v, st := (*float32)(unsafe.Pointer(&vs[0][o])), int(stride/4)
	if !winoAVX512 {
		if n > 0 {
			winoIn8((*float32)(unsafe.Pointer(&rows[0])), width, v, st, n)
		}
		if r := tw - n; r > 0 { // fewer than 8 left: columns 2n to 2tw+1
			lo := min(2*r, 8)
			winoIn8Tail((*float32)(unsafe.Pointer(&rows[2*n])), width, (*float32)(unsafe.Add(unsafe.Pointer(v), 4*n)), st, r, lo, 2*r-lo)
		}
		return tw
	}
	n16 := n / 16 * 16
	if n16 > 0 {
		winoInS((*float32)(unsafe.Pointer(&rows[0])), width, v, st, n16)
	}
	if n > n16 { // one block of 8 left
		winoInS8((*float32)(unsafe.Pointer(&rows[2*n16])), width, (*float32)(unsafe.Add(unsafe.Pointer(v), 4*n16)), st)
	}
	if r := tw - n; r > 0 { // fewer than 8 left: columns 2n to 2tw+1
		winoInS8Tail((*float32)(unsafe.Pointer(&rows[2*n])), width, (*float32)(unsafe.Add(unsafe.Pointer(v), 4*n)), st, uint32(1)<<(2*r)-1, uint32(1)<<r-1)
	}
	return tw
}

// winoWtS is winoWeights' loop for one output channel on n kernels (a
// multiple of 16) of float32: kernel i's taps at w + i·step (reversed when
// flip), with idx[j] = j·step; U_ξ[i] at u[ξ·su + i].
//
//go:noescape
func winoWtS(w *float32, idx *int32, u *float32, su int, n int, flip bool, step int)

// winoWtAsm runs winoWtS for output channel o of p's weight transform
// when it can (winoWeights' arguments) and returns how many input channels
// it did, from 0: whole blocks of 16, float32 only. Its sums are the Go
// loop's, in the same order, so the bits are too.
func winoWtAsm[T Float](p *winoPlan, w, u []T, su, o int) int {
	n := p.cin / 16 * 16
	if !winoAVX512 || unsafe.Sizeof(T(0)) != 4 || n == 0 {
		return 0
	}
	base, step := o*p.cin*9, 9
	if p.flip {
		base, step = o*9, p.cout*9
	}
	if int64(15)*int64(step) > 1<<31-1 {
		return 0 // the gather's indices are 32-bit
	}
	_ = w[base+(n-1)*step+8] // the last kernel's last tap
	_ = u[15*su+o*p.cin+n-1] // the last plane's last element
	var idx [16]int32
	for j := range idx {
		idx[j] = int32(j * step)
	}
	winoWtS((*float32)(unsafe.Pointer(&w[base])), &idx[0], (*float32)(unsafe.Pointer(&u[o*p.cin])), su, n, p.flip, step)
	return n
}
