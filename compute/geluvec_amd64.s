#include "textflag.h"

// LOOKUP8 loads eight values at SI into Y0 and leaves in Y4 the table
// (DX) entries at them rounded to halves (VCVTPS2PH, to nearest even:
// FP32ToFP16's rounding), gathered as 32-bit loads (the table holds a
// padding entry) masked to 16 bits (Y12: 0xffff a lane), widened.
#define LOOKUP8 \
	VMOVUPS (SI), Y0 \
	VCVTPS2PH $0, Y0, X1 \
	VPMOVZXWD X1, Y2 \
	VPCMPEQD Y3, Y3, Y3 \
	VPXOR Y4, Y4, Y4 \
	VPGATHERDD Y3, (DX)(Y2*2), Y4 \
	VPAND Y12, Y4, Y4 \
	VEXTRACTI128 $1, Y4, X5 \
	VPACKUSDW X5, X4, X4 \
	VCVTPH2PS X4, Y4

// func geluAVX2(x *float32, n int, t *uint16)
// Gelu over n values (a multiple of 8): each eight rounded to halves
// (VCVTPS2PH, to nearest even: FP32ToFP16's rounding), their table
// entries gathered as 32-bit loads (t holds a padding entry) and masked
// to 16 bits, widened (VCVTPH2PS); 0 where x ≤ −10, x where x ≥ 10.
TEXT ·geluAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ t+16(FP), DX
	VBROADCASTSS gvNeg10<>(SB), Y14
	VBROADCASTSS gvPos10<>(SB), Y13
	VPBROADCASTD gvLow16<>(SB), Y12
loop:
	LOOKUP8
	VCMPPS $2, Y14, Y0, Y6
	VANDNPS Y4, Y6, Y4
	VCMPPS $13, Y13, Y0, Y6
	VBLENDVPS Y6, Y0, Y4, Y4
	VMOVUPS Y4, (SI)
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ loop
	VZEROUPPER
	RET

DATA gvNeg10<>+0(SB)/4, $0xc1200000
GLOBL gvNeg10<>(SB), RODATA|NOPTR, $4
DATA gvPos10<>+0(SB)/4, $0x41200000
GLOBL gvPos10<>(SB), RODATA|NOPTR, $4
DATA gvLow16<>+0(SB)/4, $0x0000ffff
GLOBL gvLow16<>(SB), RODATA|NOPTR, $4

// func lookupAVX2(x *float32, n int, t *uint16)
// HalfTable.Lookup over n values (a multiple of 8): geluAVX2's loop
// without its clamps.
TEXT ·lookupAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ t+16(FP), DX
	VPBROADCASTD gvLow16<>(SB), Y12
lookup:
	LOOKUP8
	VMOVUPS Y4, (SI)
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ lookup
	VZEROUPPER
	RET
