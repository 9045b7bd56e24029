//go:build !amd64 || purego

package cpu

// gridSampleSoA32 is the AVX2 gather path of GridSampleS on amd64; here
// there is none (false: use the Go loop).
func gridSampleSoA32(out, pp []float32, s *gridSoA[float32], wp int) bool { return false }

// gridAVX2 is false: no gather kernel.
var gridAVX2 = false

// gridContractO32 is the AVX2 kernel of GridSampleO on amd64; never
// called here (gridAVX2 is false), so it does nothing.
func gridContractO32(acc, f []float32, idx []int32, planes, gr []float32, blocks, nc, ps, p, wp int) {
}

// gridTransposeBlocks, gridSampleCLBlocks, gridScatterCLBlocks and
// gridContractOCLBlocks are the AVX2 channels-last kernels on amd64; never
// called here (gridChannelsLast is false without AVX2), so they do
// nothing.
func gridTransposeBlocks(dst, src []float32, nb, nk, sr, sb, sk, dr, db, dk int) {}

func gridSampleCLBlocks(out, plane []float32, taps []gridTap[float32], nb, cw, p, wp int) {}

func gridScatterCLBlocks(plane, gr []float32, taps []gridTap[float32], nb, cw, p, wp int) {}

func gridContractOCLBlocks(acc, plane, gr []float32, taps []gridTap[float32], nb, p, wp int) {}
