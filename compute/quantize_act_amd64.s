#include "textflag.h"

// Activation quantizers, bit for bit the Go references in quantize_act.go
// (and ggml's AVX2 quantize_row_q8_0).

DATA absmask<>+0(SB)/4, $0x7fffffff
GLOBL absmask<>(SB), RODATA|NOPTR, $4

DATA f127<>+0(SB)/4, $127.0
GLOBL f127<>(SB), RODATA|NOPTR, $4

// The dword order that undoes VPACKSSDW/VPACKSSWB's interleave of the two
// 128-bit lanes.
DATA packperm<>+0(SB)/4, $0
DATA packperm<>+4(SB)/4, $4
DATA packperm<>+8(SB)/4, $1
DATA packperm<>+12(SB)/4, $5
DATA packperm<>+16(SB)/4, $2
DATA packperm<>+20(SB)/4, $6
DATA packperm<>+24(SB)/4, $3
DATA packperm<>+28(SB)/4, $7
GLOBL packperm<>(SB), RODATA|NOPTR, $32

// func quantizeQ8_0AVX2(x *float32, y *blockQ8_0, nb int)
// nb blocks of 32 values: d = f16(amax/127), q = round-half-even(v·127/amax)
// (0 for an all-zero block); corr is set to 0.
TEXT ·quantizeQ8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVL c+24(FP), R8
	TESTQ CX, CX
	JZ done
	VBROADCASTSS absmask<>(SB), Y15
	VMOVSS f127<>(SB), X14
	VMOVDQU packperm<>(SB), Y13
	VXORPS X12, X12, X12
loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS Y15, Y0, Y4
	VANDPS Y15, Y1, Y5
	VMAXPS Y5, Y4, Y4
	VANDPS Y15, Y2, Y5
	VMAXPS Y5, Y4, Y4
	VANDPS Y15, Y3, Y5
	VMAXPS Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS X5, X4, X4
	VMOVHLPS X4, X4, X5
	VMAXPS X5, X4, X4
	VMOVSHDUP X4, X5
	VMAXSS X5, X4, X4
	VDIVSS X14, X4, X5
	VCVTPS2PH $0, X5, X5
	VCVTPH2PS X5, X5
	VMOVSS X5, (DI)
	VDIVSS X4, X14, X6
	VCMPSS $4, X12, X4, X7
	VANDPS X7, X6, X6
	VBROADCASTSS X6, Y6
	VMULPS Y6, Y0, Y0
	VMULPS Y6, Y1, Y1
	VMULPS Y6, Y2, Y2
	VMULPS Y6, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPADDD Y1, Y0, Y8 // corr = c·Σq (the int32s are the int8s: |q| ≤ 127)
	VPADDD Y3, Y2, Y9
	VPADDD Y9, Y8, Y8
	VEXTRACTI128 $1, Y8, X9
	VPADDD X9, X8, X8
	VPSHUFD $0x4e, X8, X9
	VPADDD X9, X8, X8
	VPSHUFD $0xb1, X8, X9
	VPADDD X9, X8, X8
	VMOVD X8, AX
	IMULL R8, AX
	MOVL AX, 4(DI)
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y13, Y0
	VMOVDQU Y0, 8(DI)
	ADDQ $128, SI
	ADDQ $40, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

DATA fm127<>+0(SB)/4, $-127.0
GLOBL fm127<>(SB), RODATA|NOPTR, $4

DATA fone<>+0(SB)/4, $1.0
GLOBL fone<>(SB), RODATA|NOPTR, $4

// func quantizeQ8_KAVX2(x *float32, y *blockQ8_K, nb int)
// nb super-blocks of 256 values as quantize_row_q8_K_ref, except bsums
// (left for the caller): vmax is the first value of largest magnitude,
// iscale = −127/vmax, q = round-half-even(iscale·v), d = 1/iscale; an
// all-zero block gets d = 0 and zero quants. blockQ8_K: d at 0, qs at 4,
// bsums at 260, 292 bytes.
TEXT ·quantizeQ8_KAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ nb+16(FP), CX
	TESTQ CX, CX
	JZ kdone
	VBROADCASTSS absmask<>(SB), Y15
	VMOVDQU packperm<>(SB), Y13
	VXORPS Y12, Y12, Y12
kloop:
	// amax over the 32 vectors.
	MOVQ SI, R8
	MOVQ $8, R9
	VXORPS Y0, Y0, Y0
kamax:
	VANDPS (R8), Y15, Y1
	VMAXPS Y1, Y0, Y0
	VANDPS 32(R8), Y15, Y1
	VMAXPS Y1, Y0, Y0
	VANDPS 64(R8), Y15, Y1
	VMAXPS Y1, Y0, Y0
	VANDPS 96(R8), Y15, Y1
	VMAXPS Y1, Y0, Y0
	ADDQ $128, R8
	DECQ R9
	JNZ kamax
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VMAXPS X1, X0, X0
	VMOVSHDUP X0, X1
	VMAXSS X1, X0, X0
	VUCOMISS X12, X0
	JEQ kzero
	// The first value with |v| == amax (value 0 if none, for NaN input).
	VBROADCASTSS X0, Y2
	MOVQ SI, R8
	MOVQ $32, R9
kfind:
	VANDPS (R8), Y15, Y1
	VCMPPS $0, Y2, Y1, Y1
	VMOVMSKPS Y1, AX
	TESTL AX, AX
	JNZ kfound
	ADDQ $32, R8
	DECQ R9
	JNZ kfind
	MOVQ SI, R8
	XORL AX, AX
kfound:
	BSFL AX, AX
	VMOVSS (R8)(AX*4), X3
	VMOVSS fm127<>(SB), X4
	VDIVSS X3, X4, X4
	VMOVSS fone<>(SB), X5
	VDIVSS X4, X5, X5
	VMOVSS X5, (DI)
	VBROADCASTSS X4, Y4
	MOVQ SI, R8
	LEAQ 4(DI), R11
	MOVQ $8, R9
kquant:
	VMULPS (R8), Y4, Y0
	VMULPS 32(R8), Y4, Y1
	VMULPS 64(R8), Y4, Y2
	VMULPS 96(R8), Y4, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y13, Y0
	VMOVDQU Y0, (R11)
	ADDQ $128, R8
	ADDQ $32, R11
	DECQ R9
	JNZ kquant
knext:
	ADDQ $1024, SI
	ADDQ $292, DI
	DECQ CX
	JNZ kloop
kdone:
	VZEROUPPER
	RET
kzero:
	VMOVDQU Y12, (DI)
	VMOVDQU Y12, 32(DI)
	VMOVDQU Y12, 64(DI)
	VMOVDQU Y12, 96(DI)
	VMOVDQU Y12, 128(DI)
	VMOVDQU Y12, 160(DI)
	VMOVDQU Y12, 192(DI)
	VMOVDQU Y12, 224(DI)
	VMOVDQU Y12, 256(DI)
	MOVL $0, 288(DI)
	JMP knext

// func quantizeQ8_1AVX2(x *float32, y *blockQ8_1, nb int)
// nb blocks of 32 values: d and q as quantizeQ8_0AVX2, and s = f16(Σq ·
// amax/127) with the unrounded scale. blockQ8_1: d at 0, s at 4, qs at 8.
TEXT ·quantizeQ8_1AVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ nb+16(FP), CX
	TESTQ CX, CX
	JZ done1
	VBROADCASTSS absmask<>(SB), Y15
	VMOVSS f127<>(SB), X14
	VMOVDQU packperm<>(SB), Y13
	VXORPS X12, X12, X12
loop1:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS Y15, Y0, Y4
	VANDPS Y15, Y1, Y5
	VMAXPS Y5, Y4, Y4
	VANDPS Y15, Y2, Y5
	VMAXPS Y5, Y4, Y4
	VANDPS Y15, Y3, Y5
	VMAXPS Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS X5, X4, X4
	VMOVHLPS X4, X4, X5
	VMAXPS X5, X4, X4
	VMOVSHDUP X4, X5
	VMAXSS X5, X4, X4
	VDIVSS X14, X4, X10 // d = amax/127, kept for s
	VCVTPS2PH $0, X10, X5
	VCVTPH2PS X5, X5
	VMOVSS X5, (DI)
	VDIVSS X4, X14, X6
	VCMPSS $4, X12, X4, X7
	VANDPS X7, X6, X6
	VBROADCASTSS X6, Y6
	VMULPS Y6, Y0, Y0
	VMULPS Y6, Y1, Y1
	VMULPS Y6, Y2, Y2
	VMULPS Y6, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPADDD Y1, Y0, Y8 // Σq (the int32s are the int8s: |q| ≤ 127)
	VPADDD Y3, Y2, Y9
	VPADDD Y9, Y8, Y8
	VEXTRACTI128 $1, Y8, X9
	VPADDD X9, X8, X8
	VPSHUFD $0x4e, X8, X9
	VPADDD X9, X8, X8
	VPSHUFD $0xb1, X8, X9
	VPADDD X9, X8, X8
	VCVTDQ2PS X8, X8
	VMULSS X10, X8, X8
	VCVTPS2PH $0, X8, X8
	VCVTPH2PS X8, X8
	VMOVSS X8, 4(DI)
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y13, Y0
	VMOVDQU Y0, 8(DI)
	ADDQ $128, SI
	ADDQ $40, DI
	DECQ CX
	JNZ loop1
done1:
	VZEROUPPER
	RET
