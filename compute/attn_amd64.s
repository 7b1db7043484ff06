#include "textflag.h"

// Attention kernels over rows of f16 values (keys or values of the KV
// cache), n rows stride bytes apart, head dimension hd a multiple of 8. Each
// f16 is converted to float32 as it is loaded (VCVTPH2PS, exact), so the
// arithmetic is that of float32 rows holding the same values.

// func dotRowsAVX2(q *float32, k *float32, stride, n, hd int, out *float32)
// out[j] = float32(Σ_d q[d]·k_j[d]): each product in float32 (exact for
// f16 values), the sum in float64: eight values at a time, lanes 0..3 into
// one float64 accumulator and 4..7 into another; then those two added,
// upper half onto lower, and the pair.
TEXT ·dotRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ k+8(FP), DX
	MOVQ stride+16(FP), R10
	MOVQ n+24(FP), CX
	MOVQ hd+32(FP), R9
	MOVQ out+40(FP), DI
	SHRQ $3, R9
	TESTQ CX, CX
	JZ ddone
drow:
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	MOVQ DX, BX
	MOVQ SI, R8
	MOVQ R9, R11
dvec:
	VCVTPH2PS (BX), Y2
	VMULPS (R8), Y2, Y2
	VCVTPS2PD X2, Y3
	VEXTRACTF128 $1, Y2, X2
	VCVTPS2PD X2, Y2
	VADDPD Y3, Y0, Y0
	VADDPD Y2, Y1, Y1
	ADDQ $16, BX
	ADDQ $32, R8
	DECQ R11
	JNZ dvec
	VADDPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VADDSD X1, X0, X0
	VCVTSD2SS X0, X0, X0
	VMOVSS X0, (DI)
	ADDQ $4, DI
	ADDQ R10, DX
	DECQ CX
	JNZ drow
ddone:
	VZEROUPPER
	RET

// ROUND16 rounds the eight floats of Yr to f16 and back (nearest even).
#define ROUND16(Yr, Xr) VCVTPS2PH $0, Yr, Xr; VCVTPH2PS Xr, Yr

DATA one<>+0(SB)/4, $1.0
GLOBL one<>(SB), RODATA|NOPTR, $4

// func vkqRowsF16AVX2(out *float32, v *float32, stride, n, hd int, ms, vs *float32)
// For each row j in order: out = f16(out·ms[j]) (skipped when ms[j] is 1:
// out already holds f16 values); out = f16(fma(v_j, vs[j], out)).
TEXT ·vkqRowsF16AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ v+8(FP), DX
	MOVQ stride+16(FP), R10
	MOVQ n+24(FP), CX
	MOVQ hd+32(FP), R9
	MOVQ ms+40(FP), SI
	MOVQ vs+48(FP), R12
	VMOVSS one<>(SB), X6
	TESTQ CX, CX
	JZ vdone
	// 64 values at a time where there are: eight independent chains, so the
	// FMA and conversion latencies of one row overlap (32 at a time is
	// latency-bound: each row's update waits for the previous one's).
v64:
	CMPQ R9, $64
	JLT v32
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y10
	VMOVUPS 160(DI), Y11
	VMOVUPS 192(DI), Y12
	VMOVUPS 224(DI), Y13
	MOVQ DX, BX
	MOVQ SI, R8
	MOVQ R12, R13
	MOVQ CX, R11
v64row:
	VMOVSS (R8), X4
	VUCOMISS X6, X4
	JEQ v64add
	VBROADCASTSS X4, Y4
	VMULPS Y4, Y0, Y0
	VMULPS Y4, Y1, Y1
	VMULPS Y4, Y2, Y2
	VMULPS Y4, Y3, Y3
	VMULPS Y4, Y10, Y10
	VMULPS Y4, Y11, Y11
	VMULPS Y4, Y12, Y12
	VMULPS Y4, Y13, Y13
	ROUND16(Y0, X0)
	ROUND16(Y1, X1)
	ROUND16(Y2, X2)
	ROUND16(Y3, X3)
	ROUND16(Y10, X10)
	ROUND16(Y11, X11)
	ROUND16(Y12, X12)
	ROUND16(Y13, X13)
v64add:
	VBROADCASTSS (R13), Y5
	VCVTPH2PS (BX), Y7
	VCVTPH2PS 16(BX), Y8
	VCVTPH2PS 32(BX), Y9
	VCVTPH2PS 48(BX), Y14
	VFMADD231PS Y7, Y5, Y0
	VFMADD231PS Y8, Y5, Y1
	VFMADD231PS Y9, Y5, Y2
	VFMADD231PS Y14, Y5, Y3
	VCVTPH2PS 64(BX), Y7
	VCVTPH2PS 80(BX), Y8
	VCVTPH2PS 96(BX), Y9
	VCVTPH2PS 112(BX), Y14
	VFMADD231PS Y7, Y5, Y10
	VFMADD231PS Y8, Y5, Y11
	VFMADD231PS Y9, Y5, Y12
	VFMADD231PS Y14, Y5, Y13
	ROUND16(Y0, X0)
	ROUND16(Y1, X1)
	ROUND16(Y2, X2)
	ROUND16(Y3, X3)
	ROUND16(Y10, X10)
	ROUND16(Y11, X11)
	ROUND16(Y12, X12)
	ROUND16(Y13, X13)
	ADDQ $4, R8
	ADDQ $4, R13
	ADDQ R10, BX
	DECQ R11
	JNZ v64row
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y10, 128(DI)
	VMOVUPS Y11, 160(DI)
	VMOVUPS Y12, 192(DI)
	VMOVUPS Y13, 224(DI)
	ADDQ $256, DI
	ADDQ $128, DX
	SUBQ $64, R9
	JMP v64
v32:
	CMPQ R9, $32
	JLT v8
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ DX, BX
	MOVQ SI, R8
	MOVQ R12, R13
	MOVQ CX, R11
v32row:
	VMOVSS (R8), X4
	VUCOMISS X6, X4
	JEQ v32add
	VBROADCASTSS X4, Y4
	VMULPS Y4, Y0, Y0
	VMULPS Y4, Y1, Y1
	VMULPS Y4, Y2, Y2
	VMULPS Y4, Y3, Y3
	ROUND16(Y0, X0)
	ROUND16(Y1, X1)
	ROUND16(Y2, X2)
	ROUND16(Y3, X3)
v32add:
	VBROADCASTSS (R13), Y5
	VCVTPH2PS (BX), Y7
	VCVTPH2PS 16(BX), Y8
	VCVTPH2PS 32(BX), Y9
	VCVTPH2PS 48(BX), Y14
	VFMADD231PS Y7, Y5, Y0
	VFMADD231PS Y8, Y5, Y1
	VFMADD231PS Y9, Y5, Y2
	VFMADD231PS Y14, Y5, Y3
	ROUND16(Y0, X0)
	ROUND16(Y1, X1)
	ROUND16(Y2, X2)
	ROUND16(Y3, X3)
	ADDQ $4, R8
	ADDQ $4, R13
	ADDQ R10, BX
	DECQ R11
	JNZ v32row
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $64, DX
	SUBQ $32, R9
	JMP v32
v8:
	CMPQ R9, $8
	JLT vdone
	VMOVUPS (DI), Y0
	MOVQ DX, BX
	MOVQ SI, R8
	MOVQ R12, R13
	MOVQ CX, R11
v8row:
	VMOVSS (R8), X4
	VUCOMISS X6, X4
	JEQ v8add
	VBROADCASTSS X4, Y4
	VMULPS Y4, Y0, Y0
	ROUND16(Y0, X0)
v8add:
	VBROADCASTSS (R13), Y5
	VCVTPH2PS (BX), Y7
	VFMADD231PS Y7, Y5, Y0
	ROUND16(Y0, X0)
	ADDQ $4, R8
	ADDQ $4, R13
	ADDQ R10, BX
	DECQ R11
	JNZ v8row
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $16, DX
	SUBQ $8, R9
	JMP v8
vdone:
	VZEROUPPER
	RET

// func dotRows64AVX2(q *float32, k *float32, stride, n, hd int, out *float32)
// For hd a multiple of 64: ggml_vec_dot_f16 on AVX512 (four 16-lane FMA
// accumulators over steps of 64 values, reduced sum0+sum2, sum1+sum3, then
// those two, then _mm512_reduce_add_ps: upper 8 lanes onto lower, then as
// hsum8). Each 16-lane accumulator is two ymm here: Y0/Y1, Y2/Y3, Y4/Y5,
// Y6/Y7.
TEXT ·dotRows64AVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ k+8(FP), DX
	MOVQ stride+16(FP), R10
	MOVQ n+24(FP), CX
	MOVQ hd+32(FP), R9
	MOVQ out+40(FP), DI
	SHRQ $6, R9
	TESTQ CX, CX
	JZ d64done
d64row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ DX, BX
	MOVQ SI, R8
	MOVQ R9, R11
d64step:
	VCVTPH2PS (BX), Y8
	VFMADD231PS (R8), Y8, Y0
	VCVTPH2PS 16(BX), Y9
	VFMADD231PS 32(R8), Y9, Y1
	VCVTPH2PS 32(BX), Y10
	VFMADD231PS 64(R8), Y10, Y2
	VCVTPH2PS 48(BX), Y11
	VFMADD231PS 96(R8), Y11, Y3
	VCVTPH2PS 64(BX), Y8
	VFMADD231PS 128(R8), Y8, Y4
	VCVTPH2PS 80(BX), Y9
	VFMADD231PS 160(R8), Y9, Y5
	VCVTPH2PS 96(BX), Y10
	VFMADD231PS 192(R8), Y10, Y6
	VCVTPH2PS 112(BX), Y11
	VFMADD231PS 224(R8), Y11, Y7
	ADDQ $128, BX
	ADDQ $256, R8
	DECQ R11
	JNZ d64step
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, (DI)
	ADDQ $4, DI
	ADDQ R10, DX
	DECQ CX
	JNZ d64row
d64done:
	VZEROUPPER
	RET

// func roundF16sAVX2(dst, src *float32, n int)
// dst[i] = f16(src[i]) as float32 for i < n, n a multiple of 8.
TEXT ·roundF16sAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ rdone
rloop:
	VMOVUPS (SI), Y0
	ROUND16(Y0, X0)
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ rloop
rdone:
	VZEROUPPER
	RET

// func f16sAVX2(dst *uint16, src *float32, n int)
// dst[i] = f16(src[i]) (nearest even) for i < n, n a multiple of 8.
TEXT ·f16sAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ f16done
f16loop:
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	DECQ CX
	JNZ f16loop
f16done:
	VZEROUPPER
	RET

DATA negInf<>+0(SB)/4, $0xff800000
GLOBL negInf<>(SB), RODATA|NOPTR, $4

// func softmaxScanAVX2(vs, ms *float32, n int, scale float32)
// The first pass of the online softmax (see softmaxScanGeneric): with
// s = vs[j]·scale and M the running max before j, where s > M: vs[j] = M−s,
// ms[j] = 0 and M = s; else vs[j] = s−M, ms[j] = 1. Eight positions at a
// time where none of them moves the max, one by one where one does.
TEXT ·softmaxScanAVX2(SB), NOSPLIT, $0-28
	MOVQ vs+0(FP), DI
	MOVQ ms+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS scale+24(FP), Y14
	VBROADCASTSS negInf<>(SB), Y15 // M in every lane
	VBROADCASTSS one<>(SB), Y13
	VXORPS Y12, Y12, Y12
scan8:
	CMPQ CX, $8
	JLT scan1
	VMULPS (DI), Y14, Y0
	VCMPPS $0x1e, Y15, Y0, Y1 // s > M, ordered (GT_OQ)
	VMOVMSKPS Y1, AX
	TESTL AX, AX
	JNZ scanslow
	VSUBPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	VMOVUPS Y13, (SI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP scan8
scanslow: // the eight one by one (scaled already)
	VMOVUPS Y0, (DI)
	MOVQ $8, DX
	JMP scanone
scan1: // the tail, scaled one by one
	MOVQ CX, DX
	TESTQ DX, DX
	JZ scandone
	VMULSS (DI), X14, X0
	VMOVSS X0, (DI)
	MOVQ $1, DX
scanone:
	VMOVSS (DI), X0
	VUCOMISS X15, X0
	JA scanmax // s > M (unordered: not taken)
	VSUBSS X15, X0, X1
	VMOVSS X1, (DI)
	VMOVSS X13, (SI)
	JMP scannext
scanmax:
	VSUBSS X0, X15, X1
	VMOVSS X1, (DI)
	VMOVSS X12, (SI)
	VBROADCASTSS X0, Y15
scannext:
	ADDQ $4, DI
	ADDQ $4, SI
	DECQ CX
	DECQ DX
	JNZ scanone
	JMP scan8
scandone:
	VZEROUPPER
	RET

// func softmaxSumAVX2(vs, ms *float32, n int) float32
// The last pass (see softmaxSumGeneric): where ms[j] = 0 (the max moved),
// ms[j] = vs[j] and vs[j] = 1; S = float32(fma(S, ms[j], vs[j])) in float64
// in order. Where ms[j] = 1 that is the float32 sum S + vs[j] (a float64
// sum of two float32 values rounded to float32 is the float32 sum).
TEXT ·softmaxSumAVX2(SB), NOSPLIT, $0-28
	MOVQ vs+0(FP), DI
	MOVQ ms+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS X0, X0, X0 // S
	VXORPS X12, X12, X12
	VMOVSS one<>(SB), X13
	TESTQ CX, CX
	JZ sumdone
sumloop:
	VMOVSS (SI), X1
	VUCOMISS X12, X1
	JNE sumadd // ms != 0 (1 here)
	JP sumadd
	VMOVSS (DI), X1 // the rescale
	VMOVSS X1, (SI)
	VMOVSS X13, (DI)
	VCVTSS2SD X0, X0, X0
	VCVTSS2SD X1, X1, X1
	VCVTSS2SD X13, X2, X2
	VFMADD213SD X2, X1, X0 // S·ms + 1
	VCVTSD2SS X0, X0, X0
	JMP sumnext
sumadd:
	VADDSS (DI), X0, X0
sumnext:
	ADDQ $4, DI
	ADDQ $4, SI
	DECQ CX
	JNZ sumloop
sumdone:
	VMOVSS X0, ret+24(FP)
	RET

// Q8BLOCK accumulates one Q8_0 block of the V row at BX+off into A0..A3
// (its 32 values): v = float32(q)·d (exact), A += v·Y5 by FMA.
#define Q8BLOCK(off, A0, A1, A2, A3) \
	VPBROADCASTW off(BX), X7; \
	VCVTPH2PS X7, Y7; \
	VPMOVSXBD off+2(BX), Y8; \
	VPMOVSXBD off+10(BX), Y9; \
	VPMOVSXBD off+18(BX), Y14; \
	VPMOVSXBD off+26(BX), Y15; \
	VCVTDQ2PS Y8, Y8; \
	VCVTDQ2PS Y9, Y9; \
	VCVTDQ2PS Y14, Y14; \
	VCVTDQ2PS Y15, Y15; \
	VMULPS Y7, Y8, Y8; \
	VMULPS Y7, Y9, Y9; \
	VMULPS Y7, Y14, Y14; \
	VMULPS Y7, Y15, Y15; \
	VFMADD231PS Y5, Y8, A0; \
	VFMADD231PS Y5, Y9, A1; \
	VFMADD231PS Y5, Y14, A2; \
	VFMADD231PS Y5, Y15, A3

// func vkqRowsQ8_0AVX2(out *float32, v *byte, stride, n, nb int, ms, vs *float32)
// The float32 value accumulation over Q8_0 rows (see vkqRowsQ8_0Generic):
// for each row j in order, out = out·ms[j] where ms[j] != 1, then
// out = fma(d·q, vs[j], out) over the row's first nb blocks. Two blocks
// (64 values, eight independent chains) at a time where there are.
TEXT ·vkqRowsQ8_0AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ v+8(FP), DX
	MOVQ stride+16(FP), R10
	MOVQ n+24(FP), CX
	MOVQ nb+32(FP), R9
	MOVQ ms+40(FP), SI
	MOVQ vs+48(FP), R12
	VMOVSS one<>(SB), X6
	TESTQ CX, CX
	JZ q8vdone
q8v2:
	CMPQ R9, $2
	JLT q8v1
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y10
	VMOVUPS 160(DI), Y11
	VMOVUPS 192(DI), Y12
	VMOVUPS 224(DI), Y13
	MOVQ DX, BX
	MOVQ SI, R8
	MOVQ R12, R13
	MOVQ CX, R11
q8v2row:
	VMOVSS (R8), X4
	VUCOMISS X6, X4
	JEQ q8v2add
	VBROADCASTSS X4, Y4
	VMULPS Y4, Y0, Y0
	VMULPS Y4, Y1, Y1
	VMULPS Y4, Y2, Y2
	VMULPS Y4, Y3, Y3
	VMULPS Y4, Y10, Y10
	VMULPS Y4, Y11, Y11
	VMULPS Y4, Y12, Y12
	VMULPS Y4, Y13, Y13
q8v2add:
	VBROADCASTSS (R13), Y5
	Q8BLOCK(0, Y0, Y1, Y2, Y3)
	Q8BLOCK(34, Y10, Y11, Y12, Y13)
	ADDQ $4, R8
	ADDQ $4, R13
	ADDQ R10, BX
	DECQ R11
	JNZ q8v2row
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y10, 128(DI)
	VMOVUPS Y11, 160(DI)
	VMOVUPS Y12, 192(DI)
	VMOVUPS Y13, 224(DI)
	ADDQ $256, DI
	ADDQ $68, DX
	SUBQ $2, R9
	JMP q8v2
q8v1:
	TESTQ R9, R9
	JZ q8vdone
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ DX, BX
	MOVQ SI, R8
	MOVQ R12, R13
	MOVQ CX, R11
q8v1row:
	VMOVSS (R8), X4
	VUCOMISS X6, X4
	JEQ q8v1add
	VBROADCASTSS X4, Y4
	VMULPS Y4, Y0, Y0
	VMULPS Y4, Y1, Y1
	VMULPS Y4, Y2, Y2
	VMULPS Y4, Y3, Y3
q8v1add:
	VBROADCASTSS (R13), Y5
	Q8BLOCK(0, Y0, Y1, Y2, Y3)
	ADDQ $4, R8
	ADDQ $4, R13
	ADDQ R10, BX
	DECQ R11
	JNZ q8v1row
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
q8vdone:
	VZEROUPPER
	RET
