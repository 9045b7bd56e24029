//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// gridAVX2 picks gridGatherS (tests switch it off to cover the Go loop).
var gridAVX2 = cpu.X86.HasAVX2

//go:noescape
func gridGatherS(out, plane *float32, idx *int32, w0, w1, w2, w3 *float32, n, wp int)

// gridSampleSoA32 computes out[j] = taps' value on the zero-framed plane
// pp for the pixels of one image whose taps are laid out as ix, w (see
// gridSoA): with AVX2 gathers eight at a time, the rest in Go, bitwise
// the same as gridTap.value.
func gridSampleSoA32(out, pp []float32, s *gridSoA[float32], wp int) bool {
	if !gridAVX2 {
		return false
	}
	n := len(out) &^ 7
	if n > 0 {
		_ = pp[len(pp)-1]
		gridGatherS(&out[0], &pp[0], &s.ix[0], &s.w[0][0], &s.w[1][0], &s.w[2][0], &s.w[3][0], n, wp)
	}
	for j := n; j < len(out); j++ {
		i := int(s.ix[j])
		out[j] = s.w[0][j]*pp[i] + s.w[1][j]*pp[i+1] + s.w[2][j]*pp[i+wp] + s.w[3][j]*pp[i+wp+1]
	}
	return true
}

//go:noescape
func gridGatherO(acc, f *float32, idx *int32, planes, gr *float32, blocks, nc, ps, p, wp int)

// gridContractO32 runs gridGatherO on blocks full blocks of 8 pixels
// (blocks > 0, nc > 0 channels); see gridOBlocks for the layout.
func gridContractO32(acc, f []float32, idx []int32, planes, gr []float32, blocks, nc, ps, p, wp int) {
	_, _, _ = acc[16*blocks-1], f[32*blocks-1], idx[8*blocks-1]
	_ = planes[(nc-1)*ps+ps-1]
	_ = gr[(nc-1)*p+8*blocks-1]
	gridGatherO(&acc[0], &f[0], &idx[0], &planes[0], &gr[0], blocks, nc, ps, p, wp)
}

//go:noescape
func gridTranspose8(dst, src *float32, nb, nk, sr, sb, sk, dr, db, dk int)

// gridTransposeBlocks transposes nk·nb blocks of 8×8 (nb, nk > 0; strides
// in elements): block (k, b) reads rows r = 0…7 at src[k·sk + b·sb + r·sr:]
// and writes its column q to dst[k·dk + b·db + q·dr:].
func gridTransposeBlocks(dst, src []float32, nb, nk, sr, sb, sk, dr, db, dk int) {
	_ = src[(nk-1)*sk+(nb-1)*sb+7*sr+7]
	_ = dst[(nk-1)*dk+(nb-1)*db+7*dr+7]
	gridTranspose8(&dst[0], &src[0], nb, nk, 4*sr, 4*sb, 4*sk, 4*dr, 4*db, 4*dk)
}

//go:noescape
func gridSampleCL(out, plane *float32, taps *gridTap[float32], nb, nk, cs, p, ws int)

//go:noescape
func gridScatterCL(plane, gr *float32, taps *gridTap[float32], nb, nk, cs, p, ws int)

// gridSampleCLBlocks runs gridSampleCL on nb > 0 blocks of 8 pixels of
// cw channels (out: cw rows of p), the channels-last plane of cw channels
// with row stride wp cells. The taps' corners are inside the plane by
// construction (gridTaps).
func gridSampleCLBlocks(out, plane []float32, taps []gridTap[float32], nb, cw, p, wp int) {
	_, _ = taps[8*nb-1], out[(cw-1)*p+8*nb-1]
	gridSampleCL(&out[0], &plane[0], &taps[0], nb, cw/8, 4*cw, 4*p, 4*wp*cw)
}

// gridScatterCLBlocks runs gridScatterCL on nb > 0 blocks of 8 pixels of
// cw channels (gr: cw rows of p) into the channels-last plane.
func gridScatterCLBlocks(plane, gr []float32, taps []gridTap[float32], nb, cw, p, wp int) {
	_, _ = taps[8*nb-1], gr[(cw-1)*p+8*nb-1]
	gridScatterCL(&plane[0], &gr[0], &taps[0], nb, cw/8, 4*cw, 4*p, 4*wp*cw)
}

//go:noescape
func gridContractOCL(acc, plane, gr *float32, taps *gridTap[float32], nb, cs, p, ws int)

// gridContractOCLBlocks runs gridContractOCL on nb > 0 blocks of 8 pixels
// of one chunk of 8 channels: acc holds the x sums at 0 and the y sums at
// p, gr 8 rows of p.
func gridContractOCLBlocks(acc, plane, gr []float32, taps []gridTap[float32], nb, p, wp int) {
	_, _, _ = taps[8*nb-1], gr[7*p+8*nb-1], acc[p+8*nb-1]
	gridContractOCL(&acc[0], &plane[0], &gr[0], &taps[0], nb, 32, 4*p, 32*wp)
}
