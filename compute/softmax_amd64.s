#include "textflag.h"

// SoftMax's loops (softMaxAsm, softmax_amd64.go) over n values, a multiple
// of 8, with AVX2: each does softMaxGo's arithmetic bit for bit (a maximum
// does not depend on its order; the sums keep softMaxGo's).

// func softMaxMaxAVX2(x *float32, n int, scale float32) float32
// The largest x[i]·scale (rounded products).
TEXT ·softMaxMaxAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS scale+16(FP), Y15
	VBROADCASTSS smNegInf<>(SB), Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3
	CMPQ CX, $32
	JB max8
max32:
	VMULPS (SI), Y15, Y4
	VMULPS 32(SI), Y15, Y5
	VMULPS 64(SI), Y15, Y6
	VMULPS 96(SI), Y15, Y7
	VMAXPS Y4, Y0, Y0
	VMAXPS Y5, Y1, Y1
	VMAXPS Y6, Y2, Y2
	VMAXPS Y7, Y3, Y3
	ADDQ $128, SI
	SUBQ $32, CX
	CMPQ CX, $32
	JAE max32
max8:
	TESTQ CX, CX
	JZ maxdone
	VMULPS (SI), Y15, Y4
	VMAXPS Y4, Y0, Y0
	ADDQ $32, SI
	SUBQ $8, CX
	JMP max8
maxdone:
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VMAXPS X1, X0, X0
	VMOVSHDUP X0, X1
	VMAXSS X1, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func softMaxSubAVX2(x *float32, n int, scale, mx float32)
// x[i] = x[i]·scale − mx, the product rounded.
TEXT ·softMaxSubAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS scale+16(FP), Y15
	VBROADCASTSS mx+20(FP), Y14
	CMPQ CX, $16
	JB sub8
sub16:
	VMULPS (SI), Y15, Y0
	VMULPS 32(SI), Y15, Y1
	VSUBPS Y14, Y0, Y0
	VSUBPS Y14, Y1, Y1
	VMOVUPS Y0, (SI)
	VMOVUPS Y1, 32(SI)
	ADDQ $64, SI
	SUBQ $16, CX
	CMPQ CX, $16
	JAE sub16
sub8:
	TESTQ CX, CX
	JZ subdone
	VMULPS (SI), Y15, Y0
	VSUBPS Y14, Y0, Y0
	VMOVUPS Y0, (SI)
subdone:
	VZEROUPPER
	RET

// func softMaxSumAVX2(x *float32, n int) float64
// Each eight e summed in float32 as ggml's AVX2 horizontal sum does,
// ((e0+e4)+(e2+e6))+((e1+e5)+(e3+e7)), and the eights in float64 in turn.
TEXT ·softMaxSumAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VXORPD X0, X0, X0
sum8:
	VMOVUPS (SI), X1
	VADDPS 16(SI), X1, X1
	VMOVHLPS X1, X1, X2
	VADDPS X2, X1, X1
	VMOVSHDUP X1, X2
	VADDSS X2, X1, X1
	VCVTSS2SD X1, X1, X1
	VADDSD X1, X0, X0
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ sum8
	VMOVSD X0, ret+16(FP)
	RET

// func softMaxScaleAVX2(x *float32, n int, s float32)
// x[i] *= s.
TEXT ·softMaxScaleAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), Y15
	CMPQ CX, $16
	JB scale8
scale16:
	VMULPS (SI), Y15, Y0
	VMULPS 32(SI), Y15, Y1
	VMOVUPS Y0, (SI)
	VMOVUPS Y1, 32(SI)
	ADDQ $64, SI
	SUBQ $16, CX
	CMPQ CX, $16
	JAE scale16
scale8:
	TESTQ CX, CX
	JZ scaledone
	VMULPS (SI), Y15, Y0
	VMOVUPS Y0, (SI)
scaledone:
	VZEROUPPER
	RET

DATA smNegInf<>+0(SB)/4, $0xff800000
GLOBL smNegInf<>(SB), RODATA|NOPTR, $4
