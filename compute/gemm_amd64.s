#include "textflag.h"

// STEP4x24(b, a) is one value of p for GemmPacked's 4×24 tile: B's 24
// values at b(DX) (Y0-Y2), each of A's 4 at a(SI) broadcast (Y3), into the
// accumulators Y4-Y15.
#define STEP4x24(b, a) \
	VMOVUPS b(DX), Y0 \
	VMOVUPS b+32(DX), Y1 \
	VMOVUPS b+64(DX), Y2 \
	VBROADCASTSS a(SI), Y3 \
	VFMADD231PS Y0, Y3, Y4 \
	VFMADD231PS Y1, Y3, Y5 \
	VFMADD231PS Y2, Y3, Y6 \
	VBROADCASTSS a+4(SI), Y3 \
	VFMADD231PS Y0, Y3, Y7 \
	VFMADD231PS Y1, Y3, Y8 \
	VFMADD231PS Y2, Y3, Y9 \
	VBROADCASTSS a+8(SI), Y3 \
	VFMADD231PS Y0, Y3, Y10 \
	VFMADD231PS Y1, Y3, Y11 \
	VFMADD231PS Y2, Y3, Y12 \
	VBROADCASTSS a+12(SI), Y3 \
	VFMADD231PS Y0, Y3, Y13 \
	VFMADD231PS Y1, Y3, Y14 \
	VFMADD231PS Y2, Y3, Y15

// GemmNN's register tiles (gemmAsm, gemm_amd64.go): c, a and b point at
// the tile's first output, its first row of A and its first B column;
// ldc, lda, ldb are row strides in bytes; k ≥ 1. Each output is +0, then
// VFMADD231PS by A's value (broadcast) and B's over p = 0..k−1: gemmGo's
// arithmetic.

// func gemm6x16AVX2(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int)
TEXT ·gemm6x16AVX2(SB), NOSPLIT, $0-56
	MOVQ c+0(FP), DI
	MOVQ ldc+8(FP), R8
	MOVQ a+16(FP), SI
	MOVQ lda+24(FP), R9
	MOVQ b+32(FP), DX
	MOVQ ldb+40(FP), R10
	MOVQ k+48(FP), CX
	LEAQ (SI)(R9*2), R11 // row 2
	LEAQ (R11)(R9*2), R12 // row 4
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
loop6:
	VMOVUPS (DX), Y0
	VMOVUPS 32(DX), Y1
	VBROADCASTSS (SI), Y2
	VBROADCASTSS (SI)(R9*1), Y3
	VFMADD231PS Y0, Y2, Y4
	VFMADD231PS Y1, Y2, Y5
	VFMADD231PS Y0, Y3, Y6
	VFMADD231PS Y1, Y3, Y7
	VBROADCASTSS (R11), Y2
	VBROADCASTSS (R11)(R9*1), Y3
	VFMADD231PS Y0, Y2, Y8
	VFMADD231PS Y1, Y2, Y9
	VFMADD231PS Y0, Y3, Y10
	VFMADD231PS Y1, Y3, Y11
	VBROADCASTSS (R12), Y2
	VBROADCASTSS (R12)(R9*1), Y3
	VFMADD231PS Y0, Y2, Y12
	VFMADD231PS Y1, Y2, Y13
	VFMADD231PS Y0, Y3, Y14
	VFMADD231PS Y1, Y3, Y15
	ADDQ $4, SI
	ADDQ $4, R11
	ADDQ $4, R12
	ADDQ R10, DX
	DECQ CX
	JNZ loop6
	VMOVUPS Y4, (DI)
	VMOVUPS Y5, 32(DI)
	VMOVUPS Y6, (DI)(R8*1)
	VMOVUPS Y7, 32(DI)(R8*1)
	LEAQ (DI)(R8*2), DI
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, 32(DI)
	VMOVUPS Y10, (DI)(R8*1)
	VMOVUPS Y11, 32(DI)(R8*1)
	LEAQ (DI)(R8*2), DI
	VMOVUPS Y12, (DI)
	VMOVUPS Y13, 32(DI)
	VMOVUPS Y14, (DI)(R8*1)
	VMOVUPS Y15, 32(DI)(R8*1)
	VZEROUPPER
	RET

// func gemm1x16AVX2(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int)
TEXT ·gemm1x16AVX2(SB), NOSPLIT, $0-56
	MOVQ c+0(FP), DI
	MOVQ a+16(FP), SI
	MOVQ b+32(FP), DX
	MOVQ ldb+40(FP), R10
	MOVQ k+48(FP), CX
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
loop1:
	VBROADCASTSS (SI), Y2
	VFMADD231PS (DX), Y2, Y4
	VFMADD231PS 32(DX), Y2, Y5
	ADDQ $4, SI
	ADDQ R10, DX
	DECQ CX
	JNZ loop1
	VMOVUPS Y4, (DI)
	VMOVUPS Y5, 32(DI)
	VZEROUPPER
	RET

// func gemm6x8AVX2(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int)
TEXT ·gemm6x8AVX2(SB), NOSPLIT, $0-56
	MOVQ c+0(FP), DI
	MOVQ ldc+8(FP), R8
	MOVQ a+16(FP), SI
	MOVQ lda+24(FP), R9
	MOVQ b+32(FP), DX
	MOVQ ldb+40(FP), R10
	MOVQ k+48(FP), CX
	LEAQ (SI)(R9*2), R11
	LEAQ (R11)(R9*2), R12
	VXORPS Y4, Y4, Y4
	VXORPS Y6, Y6, Y6
	VXORPS Y8, Y8, Y8
	VXORPS Y10, Y10, Y10
	VXORPS Y12, Y12, Y12
	VXORPS Y14, Y14, Y14
loop68:
	VMOVUPS (DX), Y0
	VBROADCASTSS (SI), Y2
	VBROADCASTSS (SI)(R9*1), Y3
	VFMADD231PS Y0, Y2, Y4
	VFMADD231PS Y0, Y3, Y6
	VBROADCASTSS (R11), Y2
	VBROADCASTSS (R11)(R9*1), Y3
	VFMADD231PS Y0, Y2, Y8
	VFMADD231PS Y0, Y3, Y10
	VBROADCASTSS (R12), Y2
	VBROADCASTSS (R12)(R9*1), Y3
	VFMADD231PS Y0, Y2, Y12
	VFMADD231PS Y0, Y3, Y14
	ADDQ $4, SI
	ADDQ $4, R11
	ADDQ $4, R12
	ADDQ R10, DX
	DECQ CX
	JNZ loop68
	VMOVUPS Y4, (DI)
	VMOVUPS Y6, (DI)(R8*1)
	LEAQ (DI)(R8*2), DI
	VMOVUPS Y8, (DI)
	VMOVUPS Y10, (DI)(R8*1)
	LEAQ (DI)(R8*2), DI
	VMOVUPS Y12, (DI)
	VMOVUPS Y14, (DI)(R8*1)
	VZEROUPPER
	RET

// func gemm1x8AVX2(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int)
TEXT ·gemm1x8AVX2(SB), NOSPLIT, $0-56
	MOVQ c+0(FP), DI
	MOVQ a+16(FP), SI
	MOVQ b+32(FP), DX
	MOVQ ldb+40(FP), R10
	MOVQ k+48(FP), CX
	VXORPS Y4, Y4, Y4
loop18:
	VBROADCASTSS (SI), Y2
	VFMADD231PS (DX), Y2, Y4
	ADDQ $4, SI
	ADDQ R10, DX
	DECQ CX
	JNZ loop18
	VMOVUPS Y4, (DI)
	VZEROUPPER
	RET

// func gemmPk4x24AVX2(c *float32, ldc int, a *float32, b *float32, k int, acc int, next uintptr)
//
// GemmPacked's register tile: 4 rows by 24 columns of C (rows ldc bytes
// apart) from a micro-panel of A (4 values a step of p, PackRows) and a
// panel of B (24 values a step, PackCols), k ≥ 1 steps. With acc = 0 each
// output starts from +0, else from C's value (a block of p after the
// first: the same fused multiply-adds as one pass over the whole). Four
// broadcasts of A to twelve fused multiply-adds, not 6x16's six: Zen 3
// runs a broadcast on the pipes its multiply-adds use. Four steps a loop,
// each loop prefetching a line from next (the next micro-panel of A,
// whose first use would otherwise wait on L2 or L3), then one at a time.
TEXT ·gemmPk4x24AVX2(SB), NOSPLIT, $0-56
	MOVQ c+0(FP), DI
	MOVQ ldc+8(FP), R8
	MOVQ a+16(FP), SI
	MOVQ b+24(FP), DX
	MOVQ k+32(FP), CX
	MOVQ acc+40(FP), AX
	MOVQ next+48(FP), R13
	LEAQ (DI)(R8*2), R11 // row 2 of C
	TESTQ AX, AX
	JNZ load
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	JMP start
load:
	VMOVUPS (DI), Y4
	VMOVUPS 32(DI), Y5
	VMOVUPS 64(DI), Y6
	VMOVUPS (DI)(R8*1), Y7
	VMOVUPS 32(DI)(R8*1), Y8
	VMOVUPS 64(DI)(R8*1), Y9
	VMOVUPS (R11), Y10
	VMOVUPS 32(R11), Y11
	VMOVUPS 64(R11), Y12
	VMOVUPS (R11)(R8*1), Y13
	VMOVUPS 32(R11)(R8*1), Y14
	VMOVUPS 64(R11)(R8*1), Y15
start:
	SUBQ $4, CX
	JB tail
loop4:
	STEP4x24(0, 0)
	STEP4x24(96, 16)
	STEP4x24(192, 32)
	STEP4x24(288, 48)
	PREFETCHT0 (R13)
	ADDQ $64, R13
	ADDQ $64, SI
	ADDQ $384, DX
	SUBQ $4, CX
	JAE loop4
tail:
	ADDQ $4, CX
	JZ store
loop1:
	STEP4x24(0, 0)
	ADDQ $16, SI
	ADDQ $96, DX
	DECQ CX
	JNZ loop1
store:
	VMOVUPS Y4, (DI)
	VMOVUPS Y5, 32(DI)
	VMOVUPS Y6, 64(DI)
	VMOVUPS Y7, (DI)(R8*1)
	VMOVUPS Y8, 32(DI)(R8*1)
	VMOVUPS Y9, 64(DI)(R8*1)
	VMOVUPS Y10, (R11)
	VMOVUPS Y11, 32(R11)
	VMOVUPS Y12, 64(R11)
	VMOVUPS Y13, (R11)(R8*1)
	VMOVUPS Y14, 32(R11)(R8*1)
	VMOVUPS Y15, 64(R11)(R8*1)
	VZEROUPPER
	RET

// func packColsF16AVX2(dst *float32, src *uint16, ld int, k8 int)
//
// PackCols' F16 panel: 24 weight rows (src, ld bytes apart) of 8·k8
// halves into dst, value p of the 24 one after another. Eight values of
// eight rows at a time are converted (VCVTPH2PS: exact) and transposed.
TEXT ·packColsF16AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), R8
	MOVQ k8+24(FP), CX
	LEAQ (R8)(R8*2), R9 // 3 rows
loop:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ $3, DX
group:
	LEAQ (R10)(R8*4), R13 // row 4 of the group
	VCVTPH2PS (R10), Y0
	VCVTPH2PS (R10)(R8*1), Y1
	VCVTPH2PS (R10)(R8*2), Y2
	VCVTPH2PS (R10)(R9*1), Y3
	VCVTPH2PS (R13), Y4
	VCVTPH2PS (R13)(R8*1), Y5
	VCVTPH2PS (R13)(R8*2), Y6
	VCVTPH2PS (R13)(R9*1), Y7
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15
	VMOVUPS Y8, (R11)
	VMOVUPS Y9, 96(R11)
	VMOVUPS Y10, 192(R11)
	VMOVUPS Y11, 288(R11)
	VMOVUPS Y12, 384(R11)
	VMOVUPS Y13, 480(R11)
	VMOVUPS Y14, 576(R11)
	VMOVUPS Y15, 672(R11)
	LEAQ (R10)(R8*8), R10
	ADDQ $32, R11
	DECQ DX
	JNZ group
	ADDQ $16, SI
	ADDQ $768, DI
	DECQ CX
	JNZ loop
	VZEROUPPER
	RET

// func packRowsAVX2(dst *float32, src *float32, lda int, k8 int, round int)
//
// PackRows' micro-panel: 4 rows (src, lda bytes apart) of 8·k8 values into
// dst, value p of the 4 one after another; with round ≠ 0 each rounded to
// f16 on the way (VCVTPS2PH to nearest even, then back: RoundF16s').
TEXT ·packRowsAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lda+16(FP), R8
	MOVQ k8+24(FP), CX
	MOVQ round+32(FP), AX
	LEAQ (R8)(R8*2), R9 // 3 rows
rowsloop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R8*1), Y1
	VMOVUPS (SI)(R8*2), Y2
	VMOVUPS (SI)(R9*1), Y3
	TESTQ AX, AX
	JZ rowsT
	VCVTPS2PH $0, Y0, X0
	VCVTPH2PS X0, Y0
	VCVTPS2PH $0, Y1, X1
	VCVTPH2PS X1, Y1
	VCVTPS2PH $0, Y2, X2
	VCVTPH2PS X2, Y2
	VCVTPS2PH $0, Y3, X3
	VCVTPH2PS X3, Y3
rowsT:
	VUNPCKLPS Y1, Y0, Y4
	VUNPCKHPS Y1, Y0, Y5
	VUNPCKLPS Y3, Y2, Y6
	VUNPCKHPS Y3, Y2, Y7
	VSHUFPS $0x44, Y6, Y4, Y0
	VSHUFPS $0xEE, Y6, Y4, Y1
	VSHUFPS $0x44, Y7, Y5, Y2
	VSHUFPS $0xEE, Y7, Y5, Y3
	VPERM2F128 $0x20, Y1, Y0, Y4
	VPERM2F128 $0x20, Y3, Y2, Y5
	VPERM2F128 $0x31, Y1, Y0, Y6
	VPERM2F128 $0x31, Y3, Y2, Y7
	VMOVUPS Y4, (DI)
	VMOVUPS Y5, 32(DI)
	VMOVUPS Y6, 64(DI)
	VMOVUPS Y7, 96(DI)
	ADDQ $32, SI
	ADDQ $128, DI
	DECQ CX
	JNZ rowsloop
	VZEROUPPER
	RET
