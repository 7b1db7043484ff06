#include "textflag.h"

// SoftMax's loops (softMaxAsm, softmax_amd64.go) over n values, a multiple
// of 8, with AVX2 and FMA: each does softMaxGo's arithmetic bit for bit (a
// maximum does not depend on its order; the sums keep softMaxGo's).

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

// EXP8(OFF) is x[i] = ggmlVExpf(x[i]·scale − mx) for the eight values at
// OFF(SI), the product rounded, with ggml_v_expf's AVX2+FMA instructions
// (ggml-cpu/vec.h: the same fused multiply-adds and constants), its branch
// for 126 < |n| done for every lane and blended in (the lanes without it
// get k·j + k, as ggml's other branch computes). It uses Y0–Y12; scale in
// Y15, mx in Y14.
#define EXP8(OFF) \
	VMULPS OFF(SI), Y15, Y0; \
	VSUBPS Y14, Y0, Y0; \
	VMOVUPS vR<>(SB), Y1; \
	VFMADD231PS vLog2e<>(SB), Y0, Y1; \
	VSUBPS vR<>(SB), Y1, Y2; \
	VFNMADD231PS vLn2hi<>(SB), Y2, Y0; \
	VFNMADD231PS vLn2lo<>(SB), Y2, Y0; \
	VPSLLD $23, Y1, Y3; \
	VPADDD vOne<>(SB), Y3, Y4; \
	VANDPS vAbs<>(SB), Y2, Y5; \
	VCMPPS $0x1e, v126<>(SB), Y5, Y6; \
	VMULPS Y0, Y0, Y7; \
	VMOVUPS vP1<>(SB), Y8; \
	VFMADD231PS vP0<>(SB), Y0, Y8; \
	VMOVUPS vP3<>(SB), Y9; \
	VFMADD231PS vP2<>(SB), Y0, Y9; \
	VFMADD231PS Y7, Y8, Y9; \
	VMULPS vP4<>(SB), Y0, Y10; \
	VFMADD231PS Y7, Y9, Y10; \
	VXORPS Y11, Y11, Y11; \
	VCMPPS $0x12, Y11, Y2, Y8; \
	VANDPS v82<>(SB), Y8, Y8; \
	VPADDD v7f<>(SB), Y8, Y9; \
	VPSUBD Y8, Y3, Y11; \
	VCMPPS $0x1e, v192<>(SB), Y5, Y5; \
	VMULPS Y9, Y9, Y12; \
	VFMADD231PS Y10, Y11, Y11; \
	VMULPS Y9, Y11, Y11; \
	VFMADD231PS Y10, Y4, Y4; \
	VANDPS Y6, Y11, Y11; \
	VANDNPS Y4, Y6, Y4; \
	VORPS Y11, Y4, Y4; \
	VANDPS Y5, Y12, Y12; \
	VANDNPS Y4, Y5, Y4; \
	VORPS Y12, Y4, Y4; \
	VMOVUPS Y4, OFF(SI)

// EXPFAST(OFF, X, K, M, U, J, P) is EXP8's values up to k = 2ⁿ (K), j (J)
// and the mask of lanes with 126 < |n| (M), in six registers: x, then b
// (X), z, e, then k (K), n, |n|, then the mask (M), u = b·b (U), and the
// polynomial's terms (J, P).
#define EXPFAST(OFF, X, K, M, U, J, P) \
	VMULPS OFF(SI), Y15, X; \
	VSUBPS Y14, X, X; \
	VMOVUPS vR<>(SB), K; \
	VFMADD231PS vLog2e<>(SB), X, K; \
	VSUBPS vR<>(SB), K, M; \
	VFNMADD231PS vLn2hi<>(SB), M, X; \
	VFNMADD231PS vLn2lo<>(SB), M, X; \
	VPSLLD $23, K, K; \
	VPADDD vOne<>(SB), K, K; \
	VANDPS vAbs<>(SB), M, M; \
	VCMPPS $0x1e, v126<>(SB), M, M; \
	VMULPS X, X, U; \
	VMOVUPS vP1<>(SB), J; \
	VFMADD231PS vP0<>(SB), X, J; \
	VMOVUPS vP3<>(SB), P; \
	VFMADD231PS vP2<>(SB), X, P; \
	VFMADD231PS U, J, P; \
	VMULPS vP4<>(SB), X, J; \
	VFMADD231PS U, P, J

// func softMaxExpAVX2(x *float32, n int, scale, mx float32) float64
// x[i] = ggmlVExpf(x[i]·scale − mx) (EXP8), sixteen values at a time where
// none needs ggml's branch for 126 < |n| (two EXPFASTs interleaved: the
// same operations on each value); then the sum of the eights in float64 in
// turn, each eight summed in float32 as ggml's AVX2 horizontal sum does,
// ((e0+e4)+(e2+e6))+((e1+e5)+(e3+e7)), two eights' at a time. The sums go
// in a pass of their own: a float64 sum's latency after each eight's e^x
// and horizontal sum left too few eights in flight.
TEXT ·softMaxExpAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ SI, DI
	MOVQ CX, DX
	VBROADCASTSS scale+16(FP), Y15
	VBROADCASTSS mx+20(FP), Y14
exp16:
	CMPQ CX, $16
	JB exptail
	EXPFAST(0, Y0, Y1, Y2, Y3, Y4, Y5)
	EXPFAST(32, Y6, Y7, Y8, Y9, Y10, Y11)
	VORPS Y8, Y2, Y2
	VMOVMSKPS Y2, AX
	TESTL AX, AX
	JNZ expbig
	VFMADD231PS Y4, Y1, Y1 // j·k + k
	VFMADD231PS Y10, Y7, Y7
	VMOVUPS Y1, (SI)
	VMOVUPS Y7, 32(SI)
	ADDQ $64, SI
	SUBQ $16, CX
	JMP exp16
expbig:
	EXP8(0)
	EXP8(32)
	ADDQ $64, SI
	SUBQ $16, CX
	JMP exp16
exptail:
	TESTQ CX, CX
	JZ sums
	EXP8(0)
sums:
	VXORPD X13, X13, X13
sum16:
	CMPQ DX, $16
	JB sumtail
	VMOVUPS (DI), Y1
	VMOVUPS 32(DI), Y7
	VPERM2F128 $0x20, Y7, Y1, Y3 // the two eights' low halves
	VPERM2F128 $0x31, Y7, Y1, Y9 // and high halves
	VADDPS Y9, Y3, Y3            // e0+e4, e1+e5, e2+e6, e3+e7 of each
	VPERMILPS $0x4e, Y3, Y9
	VADDPS Y9, Y3, Y3 // (e0+e4)+(e2+e6), (e1+e5)+(e3+e7)
	VMOVSHDUP Y3, Y9
	VADDPS Y9, Y3, Y3 // each eight's sum in lanes 0 and 4
	VEXTRACTF128 $1, Y3, X9
	VCVTSS2SD X3, X3, X3
	VCVTSS2SD X9, X9, X9
	VADDSD X3, X13, X13
	VADDSD X9, X13, X13
	ADDQ $64, DI
	SUBQ $16, DX
	JMP sum16
sumtail:
	TESTQ DX, DX
	JZ expdone
	VMOVUPS (DI), X4
	VADDPS 16(DI), X4, X5
	VMOVHLPS X5, X5, X6
	VADDPS X6, X5, X5
	VMOVSHDUP X5, X6
	VADDSS X6, X5, X5
	VCVTSS2SD X5, X5, X5
	VADDSD X5, X13, X13
expdone:
	VMOVSD X13, ret+24(FP)
	VZEROUPPER
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

#define S8(name, v) DATA name<>+0(SB)/4, v; DATA name<>+4(SB)/4, v; DATA name<>+8(SB)/4, v; DATA name<>+12(SB)/4, v; DATA name<>+16(SB)/4, v; DATA name<>+20(SB)/4, v; DATA name<>+24(SB)/4, v; DATA name<>+28(SB)/4, v; GLOBL name<>(SB), RODATA|NOPTR, $32

// ggml_v_expf's constants (ggmlVExpf's), eight lanes each.
S8(vR, $0x4b400000)     // 0x1.8p23
S8(vLog2e, $0x3fb8aa3b) // 0x1.715476p+0
S8(vLn2hi, $0x3f317200) // 0x1.62e4p-1
S8(vLn2lo, $0x35bfbe8e) // 0x1.7f7d1cp-20
S8(vP0, $0x3c072010)    // 0x1.0e4020p-7
S8(vP1, $0x3d2b9f17)    // 0x1.573e2ep-5
S8(vP2, $0x3e2aaf33)    // 0x1.555e66p-3
S8(vP3, $0x3efffedb)    // 0x1.fffdb6p-2
S8(vP4, $0x3f7ffff6)    // 0x1.ffffecp-1
S8(vOne, $0x3f800000)
S8(vAbs, $0x7fffffff)
S8(v126, $0x42fc0000)
S8(v192, $0x43400000)
S8(v82, $0x82000000)
S8(v7f, $0x7f000000)

// func fmafFMA(a, b, c float32) float32
// a·b + c by VFMADD231SS: the hardware's fmaf, which fmaf is tested against.
TEXT ·fmafFMA(SB), NOSPLIT, $0-20
	VMOVSS a+0(FP), X0
	VMOVSS b+4(FP), X1
	VMOVSS c+8(FP), X2
	VFMADD231SS X1, X0, X2
	VMOVSS X2, ret+16(FP)
	RET
