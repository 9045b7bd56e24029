// Command asmgen writes the micro-kernels of package gemm: in
// internal/gemm/kernel_amd64.s, for each of float32 and float64, an AVX-512
// kernel of 12 rows by two 512-bit vectors, its edge kernels of its first 4
// and 8 rows, of its first vector of columns (12, 4 and 8 rows), and an
// AVX2/FMA kernel of 6 rows by two 256-bit vectors with its edge kernels
// of 2 and 4 rows and of its first vector (6, 2 and 4 rows); in
// kernel_arm64.s a NEON kernel of 8 rows by three 128-bit vectors. Run it from internal/gemm with `go generate`.
// Each amd64 full kernel also comes as an "m" kernel over a column of
// tiles (kernel.multiOf), with last arguments tiles int, bias *T; the
// AVX-512 "m" kernels and edge kernels of 4 and 8 rows also as "o"
// kernels reading B's rows in place at offsets (kernel.offsOf: offs *int
// for ldb, and a last argument b2 *T), and the AVX-512 "m" kernels as
// "ms" kernels storing each tile in two places (kernel.splitOf: last
// arguments c2 *T, w, masks int).
//
// Every other kernel has the Go signature
//
//	func name(kc int, a, b, c *T, ldb, ldc int, overwrite bool)
//
// and computes, for its MR×NR tile, acc[i][j] = Σ_{p<kc} a[p·MR+i]·b[p·ldb+j]
// with one fused multiply-add per p, in order p = 0, 1, ..., starting from
// +0, then c[i·ldc+j] += acc[i][j], or with overwrite c[i·ldc+j] =
// acc[i][j] + 0 (C not read: what clearing C first and adding gives). The order of operations on one element
// is the same in every kernel, so all of them give bitwise the same C.
package main

import (
	"fmt"
	"os"
	"strings"
)

type kernel struct {
	name   string
	size   int    // bytes per element
	mr     int    // rows (broadcast elements of a per p)
	vecs   int    // vectors per row
	vbyte  int    // bytes per vector
	reg    string // Z or Y
	sfx    string // PS or PD
	avx    int    // 512 or 2
	ast    int    // elements of packed A per p: mr, or the full kernel's MR for an edge kernel
	unroll int    // p's per loop iteration, the rest one at a time (0: 1)
	multi  bool   // tiles of a column (multiOf)
	offs   bool   // B's rows in place at offsets (offsOf)
	late   int    // C's tile prefetched again this many p's before the loop's end (0: not)
	split  bool   // C's tile in two segments (splitOf)
}

// edge is the kernel of k's first rows rows alone, reading k's
// packed A (rows of it the same FMAs in the same order, so bitwise k's
// rows): the last block of a product with fewer rows than MR left.
func (k kernel) edge(rows int) kernel {
	e := k
	e.name, e.mr, e.ast = fmt.Sprintf("%sr%d", k.name, rows), rows, k.mr
	return e
}

// half is the kernel of k's first vector of columns alone (the
// first half of k's tile), reading k's packed panels (ldb apart, the same
// FMAs in the same order, so bitwise k's columns): the last panel of a
// product with at most NR/2 columns left.
func (k kernel) half() kernel {
	h := k
	h.name, h.vecs = k.name+"h", 1
	return h
}

// multiOf is k over a column of tiles: func(kc int, a, b, c *T, ldb,
// ldc int, overwrite bool, tiles int, bias *T) runs k's tile tiles times,
// tile t from the packed A's panel t (a + t·MR·kc elements) into C's rows
// from t·MR on, the same panel of B: a macro-kernel's column of full
// tiles in one call instead of a Go call (and ABI wrapper) a tile. With
// bias not nil, each row i's sum (acc + c, or acc + 0) becomes
// 1·sum + bias[i], fused, before it is stored (vmath's axpbS with a = 1:
// the instruction and operand order of the bias pass it replaces).
func (k kernel) multiOf() kernel {
	m := k
	m.name, m.multi = k.name+"m", true
	return m
}

// offsOf is k (of two vectors a row) reading B's rows in place where
// they lie: the argument ldb becomes offs *int, a last argument b2 *T
// follows, and B's row p is the vector at b + offs[p] (elements, not
// bytes) and the vector at b2 + offs[p] (b plus one vector for a panel
// inside one run, elsewhere for one whose halves lie in two) — a
// convolution's column rows read from a zero-padded copy of its input,
// each at its own offset, instead of gathered into a packed panel first.
// The same FMAs in the same order (bitwise k's tile); the two vectors
// after b2's (the next panel of the same rows) are prefetched as k's
// in-place rows are.
func (k kernel) offsOf() kernel {
	o := k
	o.name, o.offs, o.late = k.name+"o", true, 48
	return o
}

// splitOf is k's "m" kernel (AVX-512) storing each tile in two places:
// func(kc int, a, b, c *T, ldb, ldc int, overwrite bool, tiles int,
// bias *T, c2 *T, w int, masks int) writes the tile's columns j < w at
// c + j and the others at c2 + (j − w) (rows ldc apart in both: a panel
// that crosses from one sample's positions into the next), by masked
// loads and stores (masks: bits 0–15 the lanes of the first vector below
// w, bits 16–31 those of the second; the other lanes go to c2). The same
// FMAs and additions as k's, lane by lane: bitwise k's tile stored in
// pieces.
func (k kernel) splitOf() kernel {
	m := k
	m.name, m.split = k.name+"s", true
	return m
}

func (k kernel) nr() int { return k.vecs * k.vbyte / k.size }

func main() {
	s512 := kernel{"kernS512", 4, 12, 2, 64, "Z", "PS", 512, 12, 0, false, false, 0, false}
	d512 := kernel{"kernD512", 8, 12, 2, 64, "Z", "PD", 512, 12, 0, false, false, 0, false}
	s256 := kernel{"kernS256", 4, 6, 2, 32, "Y", "PS", 2, 6, 4, false, false, 0, false}
	d256 := kernel{"kernD256", 8, 6, 2, 32, "Y", "PD", 2, 6, 4, false, false, 0, false}
	ks := []kernel{
		s512, d512,
		s256, d256,
		s512.edge(4), s512.edge(8), d512.edge(4), d512.edge(8),
		s512.half(), s512.half().edge(4), s512.half().edge(8),
		d512.half(), d512.half().edge(4), d512.half().edge(8),
		s256.edge(2), s256.edge(4), d256.edge(2), d256.edge(4),
		s256.half(), s256.half().edge(2), s256.half().edge(4),
		d256.half(), d256.half().edge(2), d256.half().edge(4),
		s512.multiOf(), d512.multiOf(), s256.multiOf(), d256.multiOf(),
		s512.multiOf().offsOf(), d512.multiOf().offsOf(), s512.multiOf().splitOf(), d512.multiOf().splitOf(),
		s512.edge(4).offsOf(), s512.edge(8).offsOf(), d512.edge(4).offsOf(), d512.edge(8).offsOf(),
	}
	var s strings.Builder
	s.WriteString("// Code generated by asmgen; DO NOT EDIT.\n\n//go:build amd64 && !purego\n\n#include \"textflag.h\"\n")
	// 1.0 for the multi kernels' bias (1·sum + bias, fused).
	s.WriteString("\nDATA one32<>+0(SB)/4, $0x3f800000\nGLOBL one32<>(SB), RODATA|NOPTR, $4\n")
	s.WriteString("\nDATA one64<>+0(SB)/8, $0x3ff0000000000000\nGLOBL one64<>(SB), RODATA|NOPTR, $8\n")
	for _, k := range ks {
		gen(&s, k)
	}
	interleaveS8(&s, false)
	interleaveS6(&s)
	interleaveD4(&s, false)
	interleaveS8(&s, true)
	interleaveD4(&s, true)
	peak(&s, "peakS512", "Z", "VPXORD", 24)
	peak(&s, "peakS256", "Y", "VXORPS", 12)
	write("kernel_amd64.s", s.String())
	var n strings.Builder
	n.WriteString("// Code generated by asmgen; DO NOT EDIT.\n\n//go:build arm64 && !purego\n\n#include \"textflag.h\"\n")
	genNEON(&n, "kernS128", 4)
	genNEON(&n, "kernD128", 8)
	write("kernel_arm64.s", n.String())
}

func write(name, text string) {
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// genNEON writes an arm64 NEON kernel of 8 rows by three 128-bit vectors
// (8×12 float32, 8×6 float64): accumulators V0-V23 (row i, vector v in
// V(3i+v)), B's vectors in V24-V26, a's element broadcast (VLD1R) into V27
// or V28 alternately. The same FMA per p as the amd64 kernels; c += acc is
// a fused multiply-add by 1.0 (exactly an addition: Go's assembler has no
// vector FADD).
func genNEON(s *strings.Builder, name string, size int) {
	w := func(f string, a ...any) { fmt.Fprintf(s, "\t"+f+"\n", a...) }
	arr, shift, one := "S4", 2, "$0x3f800000"
	if size == 8 {
		arr, shift, one = "D2", 3, "$0x3ff0000000000000"
	}
	const mr, vecs = 8, 3
	fmt.Fprintf(s, "\n// func %s(kc int, a, b, c *T, ldb, ldc int, overwrite bool): %d×%d tile.\nTEXT ·%s(SB), NOSPLIT, $0-49\n", name, mr, vecs*16/size, name)
	w("MOVD kc+0(FP), R0")
	w("MOVD a+8(FP), R1")
	w("MOVD b+16(FP), R2")
	w("MOVD c+24(FP), R3")
	w("MOVD ldb+32(FP), R4")
	w("MOVD ldc+40(FP), R5")
	w("LSL $%d, R4, R4", shift)
	w("LSL $%d, R5, R5", shift)
	for i := 0; i < mr*vecs; i++ {
		w("VEOR V%d.B16, V%d.B16, V%d.B16", i, i, i)
	}
	w("CBZ R0, %s_store", name)
	fmt.Fprintf(s, "%s_loop:\n", name)
	w("VLD1 (R2), [V24.%s, V25.%s, V26.%s]", arr, arr, arr)
	w("ADD R4, R2, R2")
	for i := 0; i < mr; i++ {
		bc := 27 + i%2
		w("VLD1R.P %d(R1), [V%d.%s]", size, bc, arr)
		for v := 0; v < vecs; v++ {
			w("VFMLA V%d.%s, V%d.%s, V%d.%s", 24+v, arr, bc, arr, i*vecs+v, arr)
		}
	}
	w("SUBS $1, R0, R0")
	w("BNE %s_loop", name)
	fmt.Fprintf(s, "%s_store:\n", name)
	w("MOVD %s, R6", one)
	w("VDUP R6, V27.%s", arr)
	// Overwrite: c = 0 + acc·1 without reading C, bitwise what clearing C
	// and adding gives.
	w("MOVBU overwrite+48(FP), R7")
	for i := 0; i < mr; i++ {
		w("CBNZ R7, %s_zero%d", name, i)
		w("VLD1 (R3), [V29.%s, V30.%s, V31.%s]", arr, arr, arr)
		w("B %s_add%d", name, i)
		fmt.Fprintf(s, "%s_zero%d:\n", name, i)
		for v := 29; v <= 31; v++ {
			w("VEOR V%d.B16, V%d.B16, V%d.B16", v, v, v)
		}
		fmt.Fprintf(s, "%s_add%d:\n", name, i)
		for v := 0; v < vecs; v++ {
			w("VFMLA V%d.%s, V27.%s, V%d.%s", i*vecs+v, arr, arr, 29+v, arr)
		}
		w("VST1 [V29.%s, V30.%s, V31.%s], (R3)", arr, arr, arr)
		if i < mr-1 {
			w("ADD R5, R3, R3")
		}
	}
	w("RET")
}

func gen(s *strings.Builder, k kernel) {
	w := func(f string, a ...any) { fmt.Fprintf(s, "\t"+f+"\n", a...) }
	acc := func(i, v int) string { return fmt.Sprintf("%s%d", k.reg, i*k.vecs+v) }
	nacc := k.mr * k.vecs
	breg := func(v int) string { return fmt.Sprintf("%s%d", k.reg, nacc+v) }
	bc := fmt.Sprintf("%s%d", k.reg, nacc+k.vecs)
	bcst := "VBROADCASTSS"
	if k.size == 8 {
		bcst = "VBROADCASTSD"
	}
	// The arguments' bytes: with b2 after overwrite (aligned to 8) or
	// bias, or c2, w and masks after bias.
	ldb, arg, b2, args, margs := "ldb", "ldb", "", 49, 72
	if k.offs {
		ldb, arg, b2, args, margs = "offs *int", "offs", ", b2 *T", 64, 80
	}
	if k.split {
		b2, margs = ", c2 *T, w, masks int", 96
	}
	if k.multi {
		fmt.Fprintf(s, "\n// func %s(kc int, a, b, c *T, %s, ldc int, overwrite bool, tiles int, bias *T%s): tiles %d×%d tiles down C.\nTEXT ·%s(SB), NOSPLIT, $0-%d\n", k.name, ldb, b2, k.mr, k.nr(), k.name, margs)
	} else {
		fmt.Fprintf(s, "\n// func %s(kc int, a, b, c *T, %s, ldc int, overwrite bool%s): %d×%d tile.\nTEXT ·%s(SB), NOSPLIT, $0-%d\n", k.name, ldb, b2, k.mr, k.nr(), k.name, args)
	}
	if k.offs {
		// The second vector of B's row p from b2 + offs[p] (R14): b + one
		// vector for a panel inside one run, elsewhere for a panel whose
		// halves lie in two.
		at := 56
		if k.multi {
			at = 72
		}
		w("MOVQ b2+%d(FP), R14", at)
	}
	w("MOVQ kc+0(FP), CX")
	w("MOVQ a+8(FP), AX")
	w("MOVQ b+16(FP), BX")
	w("MOVQ c+24(FP), DI")
	w("MOVQ %s+32(FP), R8", arg)
	w("MOVQ ldc+40(FP), DX")
	shift := 2
	if k.size == 8 {
		shift = 3
	}
	if !k.offs { // offs: R8 walks the offsets, R15 holds B's row's
		w("SHLQ $%d, R8", shift)
	}
	w("SHLQ $%d, DX", shift)
	if k.split {
		// The lanes' masks: K1 and K3 C's (below w), K2 and K4 C2's; R14
		// walks C2's rows from c2 − w elements (lane j at R14 + j).
		w("MOVQ masks+88(FP), R15")
		w("KMOVW R15, K1")
		w("KNOTW K1, K2")
		w("SHRQ $16, R15")
		w("KMOVW R15, K3")
		w("KNOTW K3, K4")
		w("MOVQ w+80(FP), R15")
		w("SHLQ $%d, R15", shift)
		w("MOVQ c2+72(FP), R14")
		w("SUBQ R15, R14")
	}
	if k.multi {
		// kc and b (or offs) again for every tile (R13, R11); the tiles
		// left in SI. A's next panel follows this one's (AX after the
		// loop), C's next rows the last row stored (DI + ldc).
		w("MOVQ tiles+56(FP), SI")
		w("MOVQ bias+64(FP), R12")
		w("TESTQ SI, SI")
		w("JEQ %s_done", k.name)
		w("MOVQ CX, R13")
		walk := "BX"
		if k.offs {
			walk = "R8"
		}
		w("MOVQ %s, R11", walk)
		fmt.Fprintf(s, "%s_tile:\n", k.name)
		w("MOVQ R13, CX")
		w("MOVQ R11, %s", walk)
	}
	for i := 0; i < nacc; i++ {
		r := fmt.Sprintf("%s%d", k.reg, i)
		if k.avx == 512 {
			w("VPXORD %s, %s, %s", r, r, r)
		} else {
			w("VXORPS %s, %s, %s", r, r, r)
		}
	}
	// Prefetch C's tile: its rows are ldc apart (other pages, often not in
	// cache) and are needed only after the loop.
	prefetchC := func() {
		rows := []string{"DI"}
		if k.split {
			rows = append(rows, "R14")
		}
		for _, r := range rows {
			w("MOVQ %s, R10", r)
			for i := 0; i < k.mr; i++ {
				for off := 0; off < k.vecs*k.vbyte; off += 64 {
					w("PREFETCHT0 %d(R10)", off)
				}
				if i < k.mr-1 {
					w("ADDQ DX, R10")
				}
			}
		}
	}
	prefetchC()
	w("TESTQ CX, CX")
	w("JEQ %s_store", k.name)
	// body writes one p's loads and FMAs, a's elements u·ast further on.
	brow := func(v int) string { return fmt.Sprintf("%d(BX)", v*k.vbyte) } // B's row p, its vector v (v ≤ 2·vecs)
	if k.offs {
		brow = func(v int) string {
			if v == 0 {
				return fmt.Sprintf("(BX)(R15*%d)", k.size)
			}
			return fmt.Sprintf("%d(R14)(R15*%d)", (v-1)*k.vbyte, k.size)
		}
	}
	body := func(u int) {
		if k.offs {
			w("MOVQ (R8), R15")
		}
		for v := 0; v < k.vecs; v++ {
			w("VMOVUP%c %s, %s", k.sfx[1], brow(v), breg(v))
		}
		// The next panel's part of this row of B: where the kernel reads B in
		// place (rows ldb apart, on other pages) nothing else fetches it.
		for off := k.vecs * k.vbyte; off < 2*k.vecs*k.vbyte; off += 64 {
			w("PREFETCHT0 %s", brow(off/k.vbyte))
		}
		for i := 0; i < k.mr; i++ {
			// One broadcast of a per row into a register (alternating two
			// registers where there are spare ones), then an FMA per vector
			// of b: a broadcast memory operand in each FMA would make the
			// loads, not the FMAs, the bottleneck.
			r := bc
			if k.avx == 512 && i%2 == 1 {
				r = fmt.Sprintf("%s%d", k.reg, nacc+k.vecs+1)
			}
			w("%s %d(AX), %s", bcst, (u*k.ast+i)*k.size, r)
			for v := 0; v < k.vecs; v++ {
				// Operands b, then a (Intel order), in every kernel, so that
				// a NaN payload is chosen alike.
				w("VFMADD231%s %s, %s, %s", k.sfx, r, breg(v), acc(i, v))
			}
		}
		if k.offs {
			w("ADDQ $8, R8")
		} else {
			w("ADDQ R8, BX")
		}
	}
	if k.unroll > 1 {
		// unroll p's a loop, A's next lines prefetched (A streams from
		// the L2 cache), then the rest one p at a time.
		w("CMPQ CX, $%d", k.unroll)
		w("JLT %s_loop", k.name)
		fmt.Fprintf(s, "%s_loopu:\n", k.name)
		step := k.unroll * k.ast * k.size
		for off := 0; off < step; off += 64 {
			w("PREFETCHT0 %d(AX)", 512+off)
		}
		for u := 0; u < k.unroll; u++ {
			body(u)
		}
		w("ADDQ $%d, AX", step)
		w("SUBQ $%d, CX", k.unroll)
		w("CMPQ CX, $%d", k.unroll)
		w("JGE %s_loopu", k.name)
		w("TESTQ CX, CX")
		w("JEQ %s_store", k.name)
	}
	if k.late > 0 && k.unroll <= 1 {
		// All but the last late p's, then C's tile prefetched again: the
		// first prefetch's lines, least recently used through the loop,
		// may have left L1 by the time the tile is stored.
		w("CMPQ CX, $%d", k.late)
		w("JLE %s_loop", k.name) // C just prefetched: all of the loop at once
		w("SUBQ $%d, CX", k.late)
		fmt.Fprintf(s, "%s_early:\n", k.name)
		body(0)
		w("ADDQ $%d, AX", k.ast*k.size)
		w("DECQ CX")
		w("JNE %s_early", k.name)
		w("MOVQ $%d, CX", k.late)
		prefetchC()
	}
	fmt.Fprintf(s, "%s_loop:\n", k.name)
	body(0)
	w("ADDQ $%d, AX", k.ast*k.size)
	w("DECQ CX")
	w("JNE %s_loop", k.name)
	fmt.Fprintf(s, "%s_store:\n", k.name)
	w("MOVBLZX overwrite+48(FP), R9")
	// Free after the loop: zero (overwrite's addend), and for the bias
	// the ones and the row's bias broadcast.
	zero := fmt.Sprintf("%s%d", k.reg, nacc+k.vecs)
	ones, bb := fmt.Sprintf("%s15", k.reg), fmt.Sprintf("%s12", k.reg)
	if k.avx == 512 {
		ones, bb = "Z28", "Z29"
	}
	if k.multi {
		w("TESTQ R12, R12")
		w("JNE %s_storeb", k.name)
	}
	w("TESTQ R9, R9")
	w("JNE %s_overwrite", k.name)
	store := func(src func(v int) string, bias bool) {
		for i := 0; i < k.mr; i++ {
			if bias {
				w("%s %d(R12), %s", bcst, i*k.size, bb)
			}
			for v := 0; v < k.vecs; v++ {
				from := src(v)
				if k.split && from != zero {
					// C's lanes and C2's into one register.
					w("VMOVUP%c.Z %d(DI), K%d, Z30", k.sfx[1], v*k.vbyte, 1+2*v)
					w("VMOVUP%c %d(R14), K%d, Z30", k.sfx[1], v*k.vbyte, 2+2*v)
					from = "Z30"
				}
				w("VADD%s %s, %s, %s", k.sfx, from, acc(i, v), acc(i, v))
				if bias {
					w("VFMADD213%s %s, %s, %s", k.sfx, bb, ones, acc(i, v))
				}
				if k.split {
					w("VMOVUP%c %s, K%d, %d(DI)", k.sfx[1], acc(i, v), 1+2*v, v*k.vbyte)
					w("VMOVUP%c %s, K%d, %d(R14)", k.sfx[1], acc(i, v), 2+2*v, v*k.vbyte)
				} else {
					w("VMOVUP%c %s, %d(DI)", k.sfx[1], acc(i, v), v*k.vbyte)
				}
			}
			if i < k.mr-1 {
				w("ADDQ DX, DI")
				if k.split {
					w("ADDQ DX, R14")
				}
			}
		}
		if bias {
			w("ADDQ $%d, R12", k.mr*k.size)
		}
		if k.multi {
			w("JMP %s_next", k.name)
			return
		}
		w("VZEROUPPER")
		w("RET")
	}
	clearZero := func() {
		if k.avx == 512 {
			w("VPXORD %s, %s, %s", zero, zero, zero)
		} else {
			w("VXORPS %s, %s, %s", zero, zero, zero)
		}
	}
	inC := func(v int) string { return fmt.Sprintf("%d(DI)", v*k.vbyte) }
	store(inC, false)
	// Overwrite: c = acc + 0 without reading C, bitwise what clearing C and
	// adding gives (-0 becomes +0), in a register free after the loop.
	fmt.Fprintf(s, "%s_overwrite:\n", k.name)
	clearZero()
	store(func(int) string { return zero }, false)
	if k.multi {
		one := "one32<>(SB)"
		if k.size == 8 {
			one = "one64<>(SB)"
		}
		fmt.Fprintf(s, "%s_storeb:\n", k.name)
		w("%s %s, %s", bcst, one, ones)
		w("TESTQ R9, R9")
		w("JNE %s_overwriteb", k.name)
		store(inC, true)
		fmt.Fprintf(s, "%s_overwriteb:\n", k.name)
		clearZero()
		store(func(int) string { return zero }, true)
		fmt.Fprintf(s, "%s_next:\n", k.name)
		w("ADDQ DX, DI")
		if k.split {
			w("ADDQ DX, R14")
		}
		w("DECQ SI")
		w("JNE %s_tile", k.name)
		fmt.Fprintf(s, "%s_done:\n", k.name)
		w("VZEROUPPER")
		w("RET")
	}
}

// peak writes func name(n int): n iterations of acc independent float32
// FMAs on registers alone, the machine's FMA ceiling for BenchmarkPeak.
func peak(s *strings.Builder, name, reg, xor string, acc int) {
	w := func(f string, a ...any) { fmt.Fprintf(s, "\t"+f+"\n", a...) }
	fmt.Fprintf(s, "\n// func %s(n int): n×%d register-only FMAs.\nTEXT ·%s(SB), NOSPLIT, $0-8\n", name, acc, name)
	w("MOVQ n+0(FP), CX")
	for i := 0; i < acc+2; i++ {
		w("%s %s%d, %s%d, %s%d", xor, reg, i, reg, i, reg, i)
	}
	w("TESTQ CX, CX")
	w("JEQ %s_done", name)
	fmt.Fprintf(s, "%s_loop:\n", name)
	for i := 0; i < acc; i++ {
		w("VFMADD231PS %s%d, %s%d, %s%d", reg, acc, reg, acc+1, reg, i)
	}
	loopEnd(s, name)
}

// interleaveS8 writes func interleaveS8(dst *float32, st int, src *float32,
// ld, kb int, alpha float32): for the 8 rows src[r·ld:], r < 8, and p < kb
// (a multiple of 8), dst[p·st+r] = alpha·src[r·ld+p]: 8×8 blocks
// transposed in AVX registers (unpack, shuffle, 128-bit permute), the
// product by alpha before, so each element is the same alpha·v as the Go
// loop's. With ptrs it writes interleavePtrsS8(dst *float32, st int, rows
// *unsafe.Pointer, kb int, alpha float32) instead: row r is the 8 rows'
// own pointer rows[r] (read again at every block: no registers are left
// to hold them), dst[p·st+r] = alpha·rows[r][p].
func interleaveS8(s *strings.Builder, ptrs bool) {
	w := func(f string, a ...any) { fmt.Fprintf(s, "\t"+f+"\n", a...) }
	name, alpha := interleaveStart(s, "S8", "float32", 2, ptrs)
	if !ptrs {
		w("LEAQ (SI)(R8*4), BX") // rows 4-7
	}
	w("LEAQ (R13)(R13*2), R10")
	w("LEAQ (DI)(R13*4), DX") // dst rows p+4..p+7
	w("MOVQ R13, AX")
	w("SHLQ $3, AX") // 8·st bytes
	w("SHRQ $3, CX")
	w("TESTQ CX, CX")
	w("JEQ %s_done", name)
	fmt.Fprintf(s, "%s_loop:\n", name)
	w("VBROADCASTSS alpha+%d(FP), Y15", alpha)
	rows := []string{"(SI)", "(SI)(R8*1)", "(SI)(R8*2)", "(SI)(R9*1)", "(BX)", "(BX)(R8*1)", "(BX)(R8*2)", "(BX)(R9*1)"}
	for r, a := range rows {
		a = rowAddr(w, ptrs, r, a)
		w("VMULPS %s, Y15, Y%d", a, r)
	}
	for i := 0; i < 4; i++ { // t(2i) = lo(r2i, r2i+1), t(2i+1) = hi
		w("VUNPCKLPS Y%d, Y%d, Y%d", 2*i+1, 2*i, 8+2*i)
		w("VUNPCKHPS Y%d, Y%d, Y%d", 2*i+1, 2*i, 9+2*i)
	}
	// tt: from (t0, t2), (t1, t3), (t4, t6), (t5, t7).
	for h := 0; h < 2; h++ {
		b := 8 + 4*h
		o := 4 * h
		w("VSHUFPS $0x44, Y%d, Y%d, Y%d", b+2, b, o)
		w("VSHUFPS $0xEE, Y%d, Y%d, Y%d", b+2, b, o+1)
		w("VSHUFPS $0x44, Y%d, Y%d, Y%d", b+3, b+1, o+2)
		w("VSHUFPS $0xEE, Y%d, Y%d, Y%d", b+3, b+1, o+3)
	}
	outs := []string{"(DI)", "(DI)(R13*1)", "(DI)(R13*2)", "(DI)(R10*1)", "(DX)", "(DX)(R13*1)", "(DX)(R13*2)", "(DX)(R10*1)"}
	for q := 0; q < 4; q++ {
		w("VPERM2F128 $0x20, Y%d, Y%d, Y%d", q+4, q, 8+q)
		w("VPERM2F128 $0x31, Y%d, Y%d, Y%d", q+4, q, 12+q)
	}
	for q := 0; q < 8; q++ {
		w("VMOVUPS Y%d, %s", 8+q, outs[q])
	}
	w("ADDQ $32, SI")
	if !ptrs {
		w("ADDQ $32, BX")
	}
	w("ADDQ AX, DI")
	w("ADDQ AX, DX")
	loopEnd(s, name)
}

// interleaveS6 writes func interleaveS6(dst *float32, src *float32, ld,
// kb int, alpha float32): for the 6 rows src[r·ld:], r < 6, and p < kb
// (a multiple of 8), dst[p·6+r] = alpha·src[r·ld+p] (the AVX2 kernels'
// packed A, whose 6-row panels interleaveS8's 8 rows do not fit): 6×8
// blocks transposed as interleaveS8's 8×8 with two rows of zeros, each
// p's 8 lanes stored 6 floats after the last (the next store overwrites
// the 2 zeros; the block's last p stores 6 floats alone), so that dst[0 :
// 6·kb] alone is written.
func interleaveS6(s *strings.Builder) {
	w := func(f string, a ...any) { fmt.Fprintf(s, "\t"+f+"\n", a...) }
	name := "interleaveS6"
	fmt.Fprintf(s, "\n// func %s(dst *float32, src *float32, ld, kb int, alpha float32)\nTEXT ·%s(SB), NOSPLIT, $0-36\n", name, name)
	w("MOVQ dst+0(FP), DI")
	w("MOVQ src+8(FP), SI")
	w("MOVQ ld+16(FP), R8")
	w("MOVQ kb+24(FP), CX")
	w("SHLQ $2, R8")
	w("LEAQ (R8)(R8*2), R9")
	w("LEAQ (SI)(R8*4), BX") // rows 4-5
	w("SHRQ $3, CX")
	w("TESTQ CX, CX")
	w("JEQ %s_done", name)
	fmt.Fprintf(s, "%s_loop:\n", name)
	w("VBROADCASTSS alpha+32(FP), Y15")
	rows := []string{"(SI)", "(SI)(R8*1)", "(SI)(R8*2)", "(SI)(R9*1)", "(BX)", "(BX)(R8*1)"}
	for r, a := range rows {
		w("VMULPS %s, Y15, Y%d", a, r)
	}
	for i := 0; i < 3; i++ {
		w("VUNPCKLPS Y%d, Y%d, Y%d", 2*i+1, 2*i, 8+2*i)
		w("VUNPCKHPS Y%d, Y%d, Y%d", 2*i+1, 2*i, 9+2*i)
	}
	w("VXORPS Y14, Y14, Y14") // the unpacked rows 6 and 7
	w("VSHUFPS $0x44, Y10, Y8, Y0")
	w("VSHUFPS $0xEE, Y10, Y8, Y1")
	w("VSHUFPS $0x44, Y11, Y9, Y2")
	w("VSHUFPS $0xEE, Y11, Y9, Y3")
	w("VSHUFPS $0x44, Y14, Y12, Y4")
	w("VSHUFPS $0xEE, Y14, Y12, Y5")
	w("VSHUFPS $0x44, Y14, Y13, Y6")
	w("VSHUFPS $0xEE, Y14, Y13, Y7")
	for q := 0; q < 4; q++ {
		w("VPERM2F128 $0x20, Y%d, Y%d, Y%d", q+4, q, 8+q)
		w("VPERM2F128 $0x31, Y%d, Y%d, Y%d", q+4, q, 12+q)
	}
	for q := 0; q < 7; q++ {
		w("VMOVUPS Y%d, %d(DI)", 8+q, 24*q)
	}
	w("VMOVUPS X15, 168(DI)")
	w("VEXTRACTF128 $1, Y15, X15")
	w("VMOVQ X15, 184(DI)")
	w("ADDQ $32, SI")
	w("ADDQ $32, BX")
	w("ADDQ $192, DI")
	loopEnd(s, name)
}

// interleaveD4 is interleaveS8 for float64 in 4×4 blocks: func
// interleaveD4(dst *float64, st int, src *float64, ld, kb int, alpha
// float64), 4 rows, kb a multiple of 4; with ptrs, interleavePtrsD4(dst
// *float64, st int, rows *unsafe.Pointer, kb int, alpha float64).
func interleaveD4(s *strings.Builder, ptrs bool) {
	w := func(f string, a ...any) { fmt.Fprintf(s, "\t"+f+"\n", a...) }
	name, alpha := interleaveStart(s, "D4", "float64", 3, ptrs)
	w("LEAQ (R13)(R13*2), R10")
	w("MOVQ R13, AX")
	w("SHLQ $2, AX") // 4·st bytes
	w("SHRQ $2, CX")
	w("TESTQ CX, CX")
	w("JEQ %s_done", name)
	fmt.Fprintf(s, "%s_loop:\n", name)
	w("VBROADCASTSD alpha+%d(FP), Y15", alpha)
	for r, a := range []string{"(SI)", "(SI)(R8*1)", "(SI)(R8*2)", "(SI)(R9*1)"} {
		a = rowAddr(w, ptrs, r, a)
		w("VMULPD %s, Y15, Y%d", a, r)
	}
	w("VUNPCKLPD Y1, Y0, Y4")
	w("VUNPCKHPD Y1, Y0, Y5")
	w("VUNPCKLPD Y3, Y2, Y6")
	w("VUNPCKHPD Y3, Y2, Y7")
	w("VPERM2F128 $0x20, Y6, Y4, Y8")
	w("VPERM2F128 $0x20, Y7, Y5, Y9")
	w("VPERM2F128 $0x31, Y6, Y4, Y10")
	w("VPERM2F128 $0x31, Y7, Y5, Y11")
	for q, a := range []string{"(DI)", "(DI)(R13*1)", "(DI)(R13*2)", "(DI)(R10*1)"} {
		w("VMOVUPD Y%d, %s", 8+q, a)
	}
	w("ADDQ $32, SI")
	w("ADDQ AX, DI")
	loopEnd(s, name)
}

// interleaveStart writes the header of interleave<kind> (or, with ptrs,
// interleavePtrs<kind>) for elements of elem (shift: log2 of their size)
// and returns its name and alpha's argument offset.
func interleaveStart(s *strings.Builder, kind, elem string, shift int, ptrs bool) (name string, alpha int) {
	size := 1 << shift
	if ptrs {
		name = "interleavePtrs" + kind
		ptrsHead(s, name, elem, 32+size, shift)
		return name, 32
	}
	name = "interleave" + kind
	interleaveHead(s, name, elem, 40+size, shift)
	return name, 40
}

// rowAddr is the address of row r's block: addr (off SI and BX), or with
// ptrs R8 and SI after loading the row's pointer rows[r] into R8.
func rowAddr(w func(string, ...any), ptrs bool, r int, addr string) string {
	if !ptrs {
		return addr
	}
	w("MOVQ %d(BX), R8", 8*r)
	return "(R8)(SI*1)"
}

// ptrsHead writes the header of func name(dst *elem, st int, rows
// *unsafe.Pointer, kb int, alpha elem) (frame: its argument bytes) and
// loads the arguments: DI dst, BX rows, CX kb, R13 st in bytes (shifted
// by shift, log2 of elem's size), SI 0 (the offset into every row).
func ptrsHead(s *strings.Builder, name, elem string, frame, shift int) {
	w := func(f string, a ...any) { fmt.Fprintf(s, "\t"+f+"\n", a...) }
	fmt.Fprintf(s, "\n// func %s(dst *%s, st int, rows *unsafe.Pointer, kb int, alpha %s)\nTEXT ·%s(SB), NOSPLIT, $0-%d\n", name, elem, elem, name, frame)
	w("MOVQ dst+0(FP), DI")
	w("MOVQ st+8(FP), R13")
	w("MOVQ rows+16(FP), BX")
	w("MOVQ kb+24(FP), CX")
	w("SHLQ $%d, R13", shift)
	w("XORQ SI, SI")
}

// interleaveHead writes the header of func name(dst *elem, st int, src
// *elem, ld, kb int, alpha elem) (frame: its argument bytes) and loads
// the arguments: DI dst, SI src, CX kb, R13 st and R8 ld in bytes
// (shifted by shift, log2 of elem's size), R9 3·ld.
func interleaveHead(s *strings.Builder, name, elem string, frame, shift int) {
	w := func(f string, a ...any) { fmt.Fprintf(s, "\t"+f+"\n", a...) }
	fmt.Fprintf(s, "\n// func %s(dst *%s, st int, src *%s, ld, kb int, alpha %s)\nTEXT ·%s(SB), NOSPLIT, $0-%d\n", name, elem, elem, elem, name, frame)
	w("MOVQ dst+0(FP), DI")
	w("MOVQ st+8(FP), R13")
	w("MOVQ src+16(FP), SI")
	w("MOVQ ld+24(FP), R8")
	w("MOVQ kb+32(FP), CX")
	w("SHLQ $%d, R13", shift)
	w("SHLQ $%d, R8", shift)
	w("LEAQ (R8)(R8*2), R9")
}

// loopEnd closes the loop name_loop counted down in CX, and the function.
func loopEnd(s *strings.Builder, name string) {
	fmt.Fprintf(s, "\tDECQ CX\n\tJNE %s_loop\n%s_done:\n\tVZEROUPPER\n\tRET\n", name, name)
}
