#include "textflag.h"

// func siluMulAVX2(dst, gate, up *float32, n int)
// dst[i] = g/(1 + vExpf(−g))·up[i] for n values (a multiple of 4), g =
// gate[i]: vExpf's operations lane for lane, four lanes at a time, each
// fma32 as vExpf's (float32(math.FMA) of the float64 values: the fused
// sum in double precision, then rounded to float32), so the same bits.
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $2, CX
	JZ adone
	VXORPS X15, X15, X15
	VBROADCASTSS aRf<>(SB), X14
	VBROADCASTSS aOnef<>(SB), X13
aloop:
	VMOVUPS (SI), X0
	VXORPS aSign<>(SB), X0, X1 // x = −g
	VCVTPS2PD X1, Y2
	// z = fma32(x, log2e, r); n = z − r
	VMOVUPD aR<>(SB), Y3
	VFMADD231PD aLog2e<>(SB), Y2, Y3
	VCVTPD2PSY Y3, X3
	VSUBPS X14, X3, X4
	// b = fma32(−n, ln2lo, fma32(−n, ln2hi, x))
	VXORPS aSign<>(SB), X4, X5 // −n
	VCVTPS2PD X5, Y5
	VFMADD231PD aLn2hi<>(SB), Y5, Y2
	VCVTPD2PSY Y2, X6
	VCVTPS2PD X6, Y6
	VFMADD231PD aLn2lo<>(SB), Y5, Y6
	VCVTPD2PSY Y6, X6
	VCVTPS2PD X6, Y7 // b
	VMULPS X6, X6, X8
	VCVTPS2PD X8, Y8 // u = b·b
	// p1 = fma32(P0, b, P1), p2 = fma32(P2, b, P3), p3 = fma32(p1, u, p2)
	VMOVUPD aP1<>(SB), Y9
	VFMADD231PD aP0<>(SB), Y7, Y9
	VCVTPD2PSY Y9, X9
	VCVTPS2PD X9, Y9
	VMOVUPD aP3<>(SB), Y10
	VFMADD231PD aP2<>(SB), Y7, Y10
	VCVTPD2PSY Y10, X10
	VCVTPS2PD X10, Y10
	VFMADD231PD Y8, Y9, Y10
	VCVTPD2PSY Y10, X10
	VCVTPS2PD X10, Y10
	// p4 = fma32(P4, b, 1); j = fma32(p3, u, p4)
	VMOVUPD aOne<>(SB), Y11
	VFMADD231PD aP4<>(SB), Y7, Y11
	VCVTPD2PSY Y11, X11
	VCVTPS2PD X11, Y11
	VFMADD231PD Y8, Y10, Y11
	VCVTPD2PSY Y11, X11
	VCVTPS2PD X11, Y11
	// e = float32(float64(j)·2ⁿ)
	VCVTTPS2DQ X4, X12
	VPADDD a1023<>(SB), X12, X12
	VPMOVSXDQ X12, Y12
	VPSLLQ $52, Y12, Y12
	VMULPD Y12, Y11, Y11
	VCVTPD2PSY Y11, X11
	// |n| > 192: 0 where n <= 0, +Inf where n > 0.
	VANDPS aAbs<>(SB), X4, X10
	VCMPPS $0x1e, a192<>(SB), X10, X10
	VCMPPS $0x1e, X15, X4, X9
	VANDPS aInf<>(SB), X9, X9
	VBLENDVPS X10, X9, X11, X11
	VADDPS X13, X11, X11
	VDIVPS X11, X0, X0
	VMULPS (DX), X0, X0
	VMOVUPS X0, (DI)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $16, DI
	DECQ CX
	JNZ aloop
adone:
	VZEROUPPER
	RET

DATA aRf<>+0(SB)/4, $0x4b400000
GLOBL aRf<>(SB), RODATA|NOPTR, $4
DATA aOnef<>+0(SB)/4, $0x3f800000
GLOBL aOnef<>(SB), RODATA|NOPTR, $4

#define D4(name, v) DATA name<>+0(SB)/8, v; DATA name<>+8(SB)/8, v; DATA name<>+16(SB)/8, v; DATA name<>+24(SB)/8, v; GLOBL name<>(SB), RODATA|NOPTR, $32
#define S4(name, v) DATA name<>+0(SB)/4, v; DATA name<>+4(SB)/4, v; DATA name<>+8(SB)/4, v; DATA name<>+12(SB)/4, v; GLOBL name<>(SB), RODATA|NOPTR, $16

// The float32 constants of vExpf as float64 values (their bits).
D4(aR, $0x4168000000000000)
D4(aLog2e, $0x3ff7154760000000)
D4(aLn2hi, $0x3fe62e4000000000)
D4(aLn2lo, $0x3eb7f7d1c0000000)
D4(aP0, $0x3f80e40200000000)
D4(aP1, $0x3fa573e2e0000000)
D4(aP2, $0x3fc555e660000000)
D4(aP3, $0x3fdfffdb60000000)
D4(aP4, $0x3feffffec0000000)
D4(aOne, $0x3ff0000000000000)
S4(a1023, $1023)
S4(aAbs, $0x7fffffff)
S4(a192, $0x43400000)
S4(aInf, $0x7f800000)
S4(aSign, $0x80000000)
