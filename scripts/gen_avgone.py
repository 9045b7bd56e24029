# writes internal/cpu/poolglobal_amd64.s (float32 and float64 kernels)

def header(w, name, f64, count="groups"):
    """Writes func name's signature and loads its arguments: DI out, SI x,
    R15 tmp, CX groups (or pairs, count), R8 hw. Returns name."""
    w(f"// func {name}(out, x, tmp *float{64 if f64 else 32}, {count}, hw, w, r0, r1, c0, c1 int, d float{64 if f64 else 32})")
    w(f"TEXT ·{name}(SB), NOSPLIT, $0-{88 if f64 else 84}")
    w(f"\tMOVQ out+0(FP), DI\n\tMOVQ x+8(FP), SI\n\tMOVQ tmp+16(FP), R15\n\tMOVQ {count}+24(FP), CX\n\tMOVQ hw+32(FP), R8")
    return name

def kernel2(f64, pair=False):
    """The AVX2 kernels: 8 float32 (4 float64) planes a step in YMM
    registers, tmp rows of 32 bytes; the same sums in the same order.
    With pair, two such groups a step (avgOne2PairS/D): both transposed
    into tmp rows of 64 bytes (the first group's lanes, then the
    second's), their sums as two independent chains."""
    L = 4 if f64 else 8
    sfx = ("Pair" if pair else "") + ("D" if f64 else "S")
    R = 64 if pair else 32 # bytes a row of tmp
    P = "PD" if f64 else "PS"
    mov = "VMOVUPD" if f64 else "VMOVUPS"
    mmov = "VMASKMOVPD" if f64 else "VMASKMOVPS"
    out = []
    w = out.append
    name = header(w, "avgOne2" + sfx, f64, "pairs" if pair else "groups")
    w(f"\t// DX: the mask of the last block's elements (hw mod {L}, or {L}).")
    w(f"\tMOVQ R8, AX\n\tANDQ ${L-1}, AX\n\tJNZ mask2{sfx}\n\tMOVQ ${L}, AX")
    w(f"mask2{sfx}:")
    sh = 3 if f64 else 2
    w(f"\tSHLQ ${sh}, AX\n\tNEGQ AX\n\tLEAQ avgOne2Mask<>+32(SB), DX\n\tADDQ AX, DX // the mask's address")
    w(f"\tMOVQ R8, R9\n\tSHLQ ${sh}, R9 // plane stride in bytes")
    w(f"\ngroup2{sfx}:")
    w("\t// Transpose the planes' blocks into tmp.")
    w("\tMOVQ SI, R10 // block start in plane 0\n\tMOVQ R15, R11 // tmp at the block\n\tMOVQ R8, R12 // elements left")
    # With pairs, BX walks the next step's planes (2L·hw elements, 64·hw
    # bytes), 64·L bytes a block (as many as a block of this step reads),
    # prefetching them: the L2's prefetchers see 2L strided streams here.
    lines = L if pair else 0 # lines a block: 64·L bytes
    if pair:
        w("\tLEAQ (SI)(R9*8), BX // the next step's planes")
        if not f64:
            w("\tLEAQ (BX)(R9*8), BX")
    w(f"block2{sfx}:")
    for q in range(lines):
        w(f"\tPREFETCHT0 {64*q if q else ''}(BX)")
    if pair:
        w(f"\tADDQ ${64*lines}, BX")
    w(f"\tCMPQ R12, ${L}\n\tJLE last2{sfx}")
    def loads(masked, second=False):
        if masked:
            w("\tVMOVDQU (DX), Y15 // (the transpose overwrites it)")
        for j in range(L):
            addr = "(R10)" if j == 0 and not second else "(R13)"
            if second:
                w("\tADDQ R9, R13")
            elif j == 1:
                w("\tLEAQ (R10)(R9*1), R13")
            elif j > 1:
                w("\tADDQ R9, R13")
            w(f"\t{mmov} {addr}, Y15, Y{j}" if masked else f"\t{mov} {addr}, Y{j}")
    def transpose_store(second=False):
        off = 32 if second else 0
        if not f64:
            for i in range(4):
                w(f"\tVUNPCKLPS Y{2*i+1}, Y{2*i}, Y{8+2*i}")
                w(f"\tVUNPCKHPS Y{2*i+1}, Y{2*i}, Y{9+2*i}")
            for h in range(2):
                b, o = 8+4*h, 4*h
                w(f"\tVSHUFPS $0x44, Y{b+2}, Y{b}, Y{o}")
                w(f"\tVSHUFPS $0xEE, Y{b+2}, Y{b}, Y{o+1}")
                w(f"\tVSHUFPS $0x44, Y{b+3}, Y{b+1}, Y{o+2}")
                w(f"\tVSHUFPS $0xEE, Y{b+3}, Y{b+1}, Y{o+3}")
            for q in range(4):
                w(f"\tVPERM2F128 $0x20, Y{q+4}, Y{q}, Y{8+q}")
                w(f"\tVPERM2F128 $0x31, Y{q+4}, Y{q}, Y{12+q}")
            for k in range(8):  # element k of the planes in Y(8+k)
                w(f"\t{mov} Y{8+k}, {R*k+off}(R11)")
            return
        w("\tVUNPCKLPD Y1, Y0, Y4\n\tVUNPCKHPD Y1, Y0, Y5\n\tVUNPCKLPD Y3, Y2, Y6\n\tVUNPCKHPD Y3, Y2, Y7")
        w("\tVPERM2F128 $0x20, Y6, Y4, Y8\n\tVPERM2F128 $0x20, Y7, Y5, Y9")
        w("\tVPERM2F128 $0x31, Y6, Y4, Y10\n\tVPERM2F128 $0x31, Y7, Y5, Y11")
        for k in range(4):  # element k in Y(8+k)
            w(f"\t{mov} Y{8+k}, {R*k+off}(R11)")
    def halves(base, p3, second=False):
        """A whole block of 4 float64 planes (from base; the fourth's at
        p3) transposed by 128-bit halves: [p0 e0 e1 | p2 e0 e1] and
        [p1 e0 e1 | p3 e0 e1] unpack into elements 0 and 1, the same
        from 16 bytes on into 2 and 3 (inserts and unpacks where the
        full-width loads took unpacks and cross-lane permutes)."""
        off = 32 if second else 0
        for j, (a, b) in enumerate([(f"({base})", f"({base})(R9*2)"), (f"({base})(R9*1)", f"({p3})")]):
            for h in range(2):
                d = j + 2*h
                disp = "16" if h else ""
                w(f"\tVMOVUPD {disp}{a}, X{d}\n\tVINSERTF128 $1, {disp}{b}, Y{d}, Y{d}")
        w("\tVUNPCKLPD Y1, Y0, Y8\n\tVUNPCKHPD Y1, Y0, Y9\n\tVUNPCKLPD Y3, Y2, Y10\n\tVUNPCKHPD Y3, Y2, Y11")
        for k in range(4):  # element k in Y(8+k)
            w(f"\t{mov} Y{8+k}, {R*k+off}(R11)")
    def both(masked):
        if f64 and not masked:
            w("\tLEAQ (R10)(R9*2), R13\n\tADDQ R9, R13 // the fourth plane")
            halves("R10", "R13")
            if pair:
                w("\tLEAQ (R10)(R9*4), R14 // the second group\n\tLEAQ (R14)(R9*2), AX\n\tADDQ R9, AX")
                halves("R14", "AX", True)
            return
        loads(masked); transpose_store()
        if pair:
            # R13 is at the first group's last plane: the second's follow.
            loads(masked, True); transpose_store(True)
    both(False)
    w(f"\tADDQ $32, R10\n\tADDQ ${R*L}, R11\n\tSUBQ ${L}, R12\n\tJMP block2{sfx}")
    w(f"last2{sfx}:")
    both(True)
    w("\t// The window's sums from tmp.")
    rs = 6 if pair else 5 # log2 of a tmp row's bytes
    w(f"\tMOVQ w+40(FP), R9\n\tSHLQ ${rs}, R9 // a row of tmp, in bytes\n\tMOVQ r0+48(FP), BX\n\tMOVQ r1+56(FP), R12")
    w("\tMOVQ c0+64(FP), R13\n\tMOVQ c1+72(FP), R14\n\tVXORPS Y0, Y0, Y0 // the rows' sum")
    if pair:
        w("\tVXORPS Y2, Y2, Y2 // the second group's")
    w(f"\tMOVQ BX, R10\n\tIMULQ R9, R10\n\tADDQ R15, R10\n\tSHLQ ${rs}, R13\n\tSHLQ ${rs}, R14")
    # A window of 1 to 8 columns takes a loop of rows whose columns are
    # unrolled (rowsN: the same additions in the same order), others the
    # loop of column steps.
    w("\tMOVQ R14, AX\n\tSUBQ R13, AX // the window's columns, in bytes")
    for n in range(1, 9):
        w(f"\tCMPQ AX, ${n*R}\n\tJEQ rows{n}{sfx}")
    w(f"row2{sfx}:\n\tCMPQ BX, R12\n\tJGE div2{sfx}\n\tVXORPS Y1, Y1, Y1 // this row's sum\n\tMOVQ R13, R11")
    if pair:
        w("\tVXORPS Y3, Y3, Y3 // the second group's")
    # Four columns a step while four are left (the same additions in the
    # same order: the loop's compare and jumps were half its instructions),
    # then one at a time.
    def add(k):
        w(f"\tVADD{P} {R*k if k else ''}(R10)(R11*1), Y1, Y1")
        if pair:
            w(f"\tVADD{P} {R*k+32}(R10)(R11*1), Y3, Y3")
    w(f"col2{sfx}:\n\tLEAQ {4*R}(R11), AX\n\tCMPQ AX, R14\n\tJGT col2one{sfx}")
    for k in range(4):
        add(k)
    w(f"\tMOVQ AX, R11\n\tJMP col2{sfx}")
    w(f"col2one{sfx}:\n\tCMPQ R11, R14\n\tJGE rowDone2{sfx}")
    add(0)
    w(f"\tADDQ ${R}, R11\n\tJMP col2one{sfx}")
    w(f"rowDone2{sfx}:\n\tVADD{P} Y1, Y0, Y0")
    if pair:
        w(f"\tVADD{P} Y3, Y2, Y2")
    w(f"\tADDQ R9, R10\n\tINCQ BX\n\tJMP row2{sfx}")
    for n in range(1, 9):
        w(f"rows{n}{sfx}:\n\tCMPQ BX, R12\n\tJGE div2{sfx}\n\tLEAQ (R10)(R13*1), AX\n\tVXORPS Y1, Y1, Y1")
        if pair:
            w("\tVXORPS Y3, Y3, Y3")
        for k in range(n):
            w(f"\tVADD{P} {R*k if k else ''}(AX), Y1, Y1")
            if pair:
                w(f"\tVADD{P} {R*k+32}(AX), Y3, Y3")
        w(f"\tVADD{P} Y1, Y0, Y0")
        if pair:
            w(f"\tVADD{P} Y3, Y2, Y2")
        w(f"\tADDQ R9, R10\n\tINCQ BX\n\tJMP rows{n}{sfx}")
    bc = "VBROADCASTSD" if f64 else "VBROADCASTSS"
    w(f"div2{sfx}:\n\t{bc} d+80(FP), Y4\n\tVDIV{P} Y4, Y0, Y0\n\t{mov} Y0, (DI)")
    if pair:
        w(f"\tVDIV{P} Y4, Y2, Y2\n\t{mov} Y2, 32(DI)")
    w(f"\tADDQ ${R}, DI")
    w(f"\tMOVQ hw+32(FP), R9\n\tSHLQ ${rs}, R9 // {L*R//32} planes, in bytes\n\tADDQ R9, SI\n\tSHRQ ${rs-3 if f64 else rs-2}, R9 // one plane's bytes")
    w(f"\tDECQ CX\n\tJNZ group2{sfx}\n\tVZEROUPPER\n\tRET")
    return "\n".join(out) + "\n"

def whole2d():
    """avgOne2WholePairD: avgOne2PairD for windows that are each plane
    whole, without tmp: a block of 4 elements of the 8 planes is loaded by
    128-bit halves and unpacked (element k of a group's 4 planes in one
    register) and added at once, the row's sum closed into the plane's
    where a row ends (R11 counts down its DX columns), not a second pass
    over tmp. Elements past the last whole block are gathered one at a time."""
    out = []
    w = out.append
    w("// func avgOne2WholePairD(out, x *float64, pairs, hw, w int, d float64)")
    w("TEXT ·avgOne2WholePairD(SB), NOSPLIT, $0-48")
    w("\tMOVQ out+0(FP), DI\n\tMOVQ x+8(FP), SI\n\tMOVQ pairs+16(FP), CX\n\tMOVQ hw+24(FP), R8\n\tMOVQ w+32(FP), DX")
    w("\tMOVQ R8, R9\n\tSHLQ $3, R9 // plane stride in bytes")
    w("wpairD:")
    w("\tMOVQ SI, R10 // the block in plane 0\n\tMOVQ R8, R12 // elements left\n\tMOVQ DX, R11 // the row's columns left")
    w("\tVXORPD Y8, Y8, Y8 // the first group's row sum\n\tVXORPD Y9, Y9, Y9 // its planes' sums")
    w("\tVXORPD Y10, Y10, Y10 // the second group's row sum\n\tVXORPD Y11, Y11, Y11 // its planes' sums")
    w("\tLEAQ (SI)(R9*8), BX // the next step's planes")
    w("wblockD:\n\tCMPQ R12, $4\n\tJLT wtailD")
    for q in range(4):
        w(f"\tPREFETCHT0 {64*q if q else ''}(BX)")
    w("\tADDQ $256, BX")
    def halves(base, p3, dst):
        # [p0 e0 e1 | p2 e0 e1] as a 128-bit load and an insert (two
        # broadcast loads and a blend timed the same)
        for j, (a, b) in enumerate([(f"({base})", f"({base})(R9*2)"), (f"({base})(R9*1)", f"({p3})")]):
            for h in range(2):
                d = j + 2*h
                disp = "16" if h else ""
                w(f"\tVMOVUPD {disp}{a}, X{d}\n\tVINSERTF128 $1, {disp}{b}, Y{d}, Y{d}")
        w(f"\tVUNPCKLPD Y1, Y0, Y{dst}\n\tVUNPCKHPD Y1, Y0, Y{dst+1}\n\tVUNPCKLPD Y3, Y2, Y{dst+2}\n\tVUNPCKHPD Y3, Y2, Y{dst+3}")
    w("\tLEAQ (R10)(R9*2), R13\n\tADDQ R9, R13 // the fourth plane")
    halves("R10", "R13", 4)
    w("\tLEAQ (R10)(R9*4), R14 // the second group\n\tLEAQ (R14)(R9*2), AX\n\tADDQ R9, AX")
    halves("R14", "AX", 12)
    def add(ya, yb, label):
        w(f"\tVADDPD Y{ya}, Y8, Y8\n\tVADDPD Y{yb}, Y10, Y10")
        w(f"\tDECQ R11\n\tJNZ {label}")
        w("\tVADDPD Y8, Y9, Y9\n\tVADDPD Y10, Y11, Y11\n\tVXORPD Y8, Y8, Y8\n\tVXORPD Y10, Y10, Y10\n\tMOVQ DX, R11")
        w(f"{label}:")
    for k in range(4):
        add(4+k, 12+k, f"wcol{k}D")
    w("\tADDQ $32, R10\n\tSUBQ $4, R12\n\tJMP wblockD")
    w("wtailD:\n\tTESTQ R12, R12\n\tJZ wdivD")
    w("\t// element e of the 8 planes, one at a time")
    w("\tLEAQ (R10)(R9*2), R13\n\tADDQ R9, R13 // the fourth plane")
    w("\tLEAQ (R10)(R9*4), R14 // the second group\n\tLEAQ (R14)(R9*2), AX\n\tADDQ R9, AX")
    for base, p3, dst in (("R10", "R13", 4), ("R14", "AX", 12)):
        w(f"\tVMOVSD ({base}), X0\n\tVMOVHPD ({base})(R9*1), X0, X0")
        w(f"\tVMOVSD ({base})(R9*2), X1\n\tVMOVHPD ({p3}), X1, X1")
        w(f"\tVINSERTF128 $1, X1, Y0, Y{dst}")
    add(4, 12, "wcolTailD")
    w("\tADDQ $8, R10\n\tDECQ R12\n\tJMP wtailD")
    w("wdivD:\n\tVBROADCASTSD d+40(FP), Y4\n\tVDIVPD Y4, Y9, Y9\n\tVMOVUPD Y9, (DI)")
    w("\tVDIVPD Y4, Y11, Y11\n\tVMOVUPD Y11, 32(DI)\n\tADDQ $64, DI")
    w("\tLEAQ (SI)(R9*8), SI // the next 8 planes")
    w("\tDECQ CX\n\tJNZ wpairD\n\tVZEROUPPER\n\tRET")
    return "\n".join(out) + "\n"

mask2 = '''
// avgOne2Mask: 32 bytes on, then 32 off; the mask of the first n bytes
// (a multiple of 4, at most 32) is the 32 bytes from avgOne2Mask + 32 − n.
DATA avgOne2Mask<>+0(SB)/8, $-1
DATA avgOne2Mask<>+8(SB)/8, $-1
DATA avgOne2Mask<>+16(SB)/8, $-1
DATA avgOne2Mask<>+24(SB)/8, $-1
DATA avgOne2Mask<>+32(SB)/8, $0
DATA avgOne2Mask<>+40(SB)/8, $0
DATA avgOne2Mask<>+48(SB)/8, $0
DATA avgOne2Mask<>+56(SB)/8, $0
GLOBL avgOne2Mask<>(SB), RODATA|NOPTR, $64

'''

head = '''// Code generated by scripts/gen_avgone.py; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// The vector kernels of poolglobal.go: one output per plane, 8 float32
// (or 4 float64) planes a step, one plane a lane. Each block of 8 (4)
// elements of the planes is loaded (VMASKMOVPS/PD for the plane's last,
// short block), transposed in registers and stored to tmp (rows of 32
// bytes); then each window row's sum from +0 in column order, the rows'
// sums from +0 in row order, divided by d: the Go loop's additions, in its
// order and with its operand order, lane by lane. avgOne2PairS and
// avgOne2PairD take two such groups a step (tmp rows of 64 bytes), whose
// sums are two independent chains; avgOne2WholePairD needs no tmp for a
// window that is each plane whole. (AVX-512 kernels of 16 float32 planes
// a step, one chain, ran 1.6-2x slower than the pairs on a Zen 4 VM and
// were dropped.)

'''
import sys
open(sys.argv[1], "w").write(head + mask2 + kernel2(False) + "\n" + kernel2(True)
    + "\n" + kernel2(False, True) + "\n" + kernel2(True, True) + "\n" + whole2d())
