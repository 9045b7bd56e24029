// EVENODD and EVENODD4 split 16 float32 or 8 float64 into their even
// and odd elements, for avgvec_amd64.s, nearest_amd64.s and
// avg2x2_amd64.s.

// EVENODD loads the 8 floats at off(base) and off+32(base) (16 in all)
// and splits them into the even ones (e) and the odd ones (o), in order;
// clobbers Y14, Y15.
#define EVENODD(off, off32, base, e, o) \
	VMOVUPS off(base), Y14 \
	VMOVUPS off32(base), Y15 \
	VSHUFPS $0x88, Y15, Y14, e \
	VSHUFPS $0xDD, Y15, Y14, o \
	VPERMPD $0xD8, e, e \
	VPERMPD $0xD8, o, o

// EVENODD4 is EVENODD for 8 float64.
#define EVENODD4(off, off32, base, e, o) \
	VMOVUPD off(base), Y14 \
	VMOVUPD off32(base), Y15 \
	VSHUFPD $0x0, Y15, Y14, e \
	VSHUFPD $0xF, Y15, Y14, o \
	VPERMPD $0xD8, e, e \
	VPERMPD $0xD8, o, o
