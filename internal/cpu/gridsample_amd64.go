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
