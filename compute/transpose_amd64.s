#include "textflag.h"

// TRANSPOSE8 writes the 8×8 block of floats whose rows start at A, A+ldx,
// A+2·ldx, A+3·ldx, B, … B+3·ldx (ldx in R8, 3·ldx in R9) transposed, its
// columns as the rows of dst at OFF(DI), 64 bytes apart.
#define TRANSPOSE8(A, B, OFF) \
	VMOVUPS (A), Y0; \
	VMOVUPS (A)(R8*1), Y1; \
	VMOVUPS (A)(R8*2), Y2; \
	VMOVUPS (A)(R9*1), Y3; \
	VMOVUPS (B), Y4; \
	VMOVUPS (B)(R8*1), Y5; \
	VMOVUPS (B)(R8*2), Y6; \
	VMOVUPS (B)(R9*1), Y7; \
	VUNPCKLPS Y1, Y0, Y8; \
	VUNPCKHPS Y1, Y0, Y9; \
	VUNPCKLPS Y3, Y2, Y10; \
	VUNPCKHPS Y3, Y2, Y11; \
	VUNPCKLPS Y5, Y4, Y12; \
	VUNPCKHPS Y5, Y4, Y13; \
	VUNPCKLPS Y7, Y6, Y14; \
	VUNPCKHPS Y7, Y6, Y15; \
	VSHUFPS $0x44, Y10, Y8, Y0; \
	VSHUFPS $0xee, Y10, Y8, Y1; \
	VSHUFPS $0x44, Y11, Y9, Y2; \
	VSHUFPS $0xee, Y11, Y9, Y3; \
	VSHUFPS $0x44, Y14, Y12, Y4; \
	VSHUFPS $0xee, Y14, Y12, Y5; \
	VSHUFPS $0x44, Y15, Y13, Y6; \
	VSHUFPS $0xee, Y15, Y13, Y7; \
	VPERM2F128 $0x20, Y4, Y0, Y8; \
	VPERM2F128 $0x20, Y5, Y1, Y9; \
	VPERM2F128 $0x20, Y6, Y2, Y10; \
	VPERM2F128 $0x20, Y7, Y3, Y11; \
	VPERM2F128 $0x31, Y4, Y0, Y12; \
	VPERM2F128 $0x31, Y5, Y1, Y13; \
	VPERM2F128 $0x31, Y6, Y2, Y14; \
	VPERM2F128 $0x31, Y7, Y3, Y15; \
	VMOVUPS Y8, OFF(DI); \
	VMOVUPS Y9, OFF+64(DI); \
	VMOVUPS Y10, OFF+128(DI); \
	VMOVUPS Y11, OFF+192(DI); \
	VMOVUPS Y12, OFF+256(DI); \
	VMOVUPS Y13, OFF+320(DI); \
	VMOVUPS Y14, OFF+384(DI); \
	VMOVUPS Y15, OFF+448(DI)

// func transpose16AVX2(dst *float32, x *float32, ldx int, rows int)
// TransposePanel for w = 16 and rows a positive multiple of 8; ldx in
// bytes: two 8×8 transposes (columns 0–7, then 8–15) for each eight rows.
TEXT ·transpose16AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ ldx+16(FP), R8
	MOVQ rows+24(FP), CX
	LEAQ (R8)(R8*2), R9   // 3·ldx
	LEAQ (SI)(R8*4), R10  // vector 4
	LEAQ (R10)(R8*4), R11 // vector 8
	LEAQ (R11)(R8*4), R12 // vector 12
loop:
	TRANSPOSE8(SI, R10, 0)
	TRANSPOSE8(R11, R12, 32)
	ADDQ $32, SI
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $512, DI
	SUBQ $8, CX
	JNZ loop
	VZEROUPPER
	RET
