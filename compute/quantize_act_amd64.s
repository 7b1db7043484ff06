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
TEXT ·quantizeQ8_0AVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ nb+16(FP), CX
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
	MOVL $0, 4(DI)
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
