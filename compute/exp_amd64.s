#include "textflag.h"

// func expfAVX2(x *float32, n int)
// x[i] = expf(x[i]) for n values (a multiple of 4): glibc's expf (x86-64,
// FMA; see Expf) four lanes at a time in float64: z = x·32/ln2, k its
// nearest integer (by adding 1.5·2^52), r = z − k, s = 2^(k/32) from a
// 32-entry table and the exponent bits, y = s·((C0·r + C1)·r² + (C2·r + 1)),
// rounded to float32. Arguments are first clamped to [−104, 89], where
// the formula gives glibc's 0 and +Inf; NaN stays NaN. Bit for bit Expf,
// which TestExp checks.
TEXT ·expfAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $2, CX
	JZ done
	LEAQ efTab<>(SB), DX
	VBROADCASTSD efLo<>(SB), Y8
	VBROADCASTSD efHi<>(SB), Y9
	VBROADCASTSD efInvLn2N<>(SB), Y10
	VBROADCASTSD efShift<>(SB), Y11
	VBROADCASTSD efC0<>(SB), Y12
	VBROADCASTSD efC1<>(SB), Y13
	VBROADCASTSD efC2<>(SB), Y14
	VBROADCASTSD efOne<>(SB), Y15
	VPBROADCASTQ efMask<>(SB), Y7
loop:
	VCVTPS2PD (SI), Y0
	VMAXPD Y0, Y8, Y0
	VMINPD Y0, Y9, Y0
	VMULPD Y10, Y0, Y1
	VADDPD Y11, Y1, Y2
	VSUBPD Y11, Y2, Y3
	VSUBPD Y3, Y1, Y1
	VPAND Y7, Y2, Y4
	VPCMPEQQ Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPGATHERQQ Y5, (DX)(Y4*8), Y6
	VPSLLQ $47, Y2, Y2
	VPADDQ Y2, Y6, Y6
	VMOVAPD Y12, Y3
	VFMADD213PD Y13, Y1, Y3
	VMULPD Y1, Y1, Y4
	VMOVAPD Y14, Y0
	VFMADD213PD Y15, Y1, Y0
	VFMADD231PD Y4, Y3, Y0
	VMULPD Y6, Y0, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS X0, (SI)
	ADDQ $16, SI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

DATA efTab<>+0(SB)/8, $0x3ff0000000000000
DATA efTab<>+8(SB)/8, $0x3fefd9b0d3158574
DATA efTab<>+16(SB)/8, $0x3fefb5586cf9890f
DATA efTab<>+24(SB)/8, $0x3fef9301d0125b51
DATA efTab<>+32(SB)/8, $0x3fef72b83c7d517b
DATA efTab<>+40(SB)/8, $0x3fef54873168b9aa
DATA efTab<>+48(SB)/8, $0x3fef387a6e756238
DATA efTab<>+56(SB)/8, $0x3fef1e9df51fdee1
DATA efTab<>+64(SB)/8, $0x3fef06fe0a31b715
DATA efTab<>+72(SB)/8, $0x3feef1a7373aa9cb
DATA efTab<>+80(SB)/8, $0x3feedea64c123422
DATA efTab<>+88(SB)/8, $0x3feece086061892d
DATA efTab<>+96(SB)/8, $0x3feebfdad5362a27
DATA efTab<>+104(SB)/8, $0x3feeb42b569d4f82
DATA efTab<>+112(SB)/8, $0x3feeab07dd485429
DATA efTab<>+120(SB)/8, $0x3feea47eb03a5585
DATA efTab<>+128(SB)/8, $0x3feea09e667f3bcd
DATA efTab<>+136(SB)/8, $0x3fee9f75e8ec5f74
DATA efTab<>+144(SB)/8, $0x3feea11473eb0187
DATA efTab<>+152(SB)/8, $0x3feea589994cce13
DATA efTab<>+160(SB)/8, $0x3feeace5422aa0db
DATA efTab<>+168(SB)/8, $0x3feeb737b0cdc5e5
DATA efTab<>+176(SB)/8, $0x3feec49182a3f090
DATA efTab<>+184(SB)/8, $0x3feed503b23e255d
DATA efTab<>+192(SB)/8, $0x3feee89f995ad3ad
DATA efTab<>+200(SB)/8, $0x3feeff76f2fb5e47
DATA efTab<>+208(SB)/8, $0x3fef199bdd85529c
DATA efTab<>+216(SB)/8, $0x3fef3720dcef9069
DATA efTab<>+224(SB)/8, $0x3fef5818dcfba487
DATA efTab<>+232(SB)/8, $0x3fef7c97337b9b5f
DATA efTab<>+240(SB)/8, $0x3fefa4afa2a490da
DATA efTab<>+248(SB)/8, $0x3fefd0765b6e4540
GLOBL efTab<>(SB), RODATA|NOPTR, $256
DATA efLo<>+0(SB)/8, $0xc05a000000000000
GLOBL efLo<>(SB), RODATA|NOPTR, $8
DATA efHi<>+0(SB)/8, $0x4056400000000000
GLOBL efHi<>(SB), RODATA|NOPTR, $8
DATA efInvLn2N<>+0(SB)/8, $0x40471547652b82fe
GLOBL efInvLn2N<>(SB), RODATA|NOPTR, $8
DATA efShift<>+0(SB)/8, $0x4338000000000000
GLOBL efShift<>(SB), RODATA|NOPTR, $8
DATA efC0<>+0(SB)/8, $0x3ebc6af84b912394
GLOBL efC0<>(SB), RODATA|NOPTR, $8
DATA efC1<>+0(SB)/8, $0x3f2ebfce50fac4f3
GLOBL efC1<>(SB), RODATA|NOPTR, $8
DATA efC2<>+0(SB)/8, $0x3f962e42ff0c52d6
GLOBL efC2<>(SB), RODATA|NOPTR, $8
DATA efOne<>+0(SB)/8, $0x3ff0000000000000
GLOBL efOne<>(SB), RODATA|NOPTR, $8
DATA efMask<>+0(SB)/8, $0x000000000000001f
GLOBL efMask<>(SB), RODATA|NOPTR, $8
