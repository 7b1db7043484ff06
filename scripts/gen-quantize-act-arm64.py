#!/usr/bin/env python3
"""Writes compute/quantize_act_arm64.s: the Q8_0, Q8_1 and Q8_K activation
quantizers for NEON.

Run from the repository root:
    python3 scripts/gen-quantize-act-arm64.py > compute/quantize_act_arm64.s
With --mca it prints each quantizer's per-block body in GNU syntax for
scripts/arm64-mca.sh.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import arm64enc as a  # noqa: E402
import kerngen  # noqa: E402

# The assembly's documentation (scripts/gen-quantize-act-arm64.py points here):
#
# The activation quantizers of quantize_act.go for arm64's Advanced SIMD,
# bit for bit the Go references: the largest magnitude by FABS and FMAX
# (exact in any order), the scales by scalar FDIV and FCVT (to nearest
# even, as FP32ToFP16), the quants by FMUL, FCVTNS (to nearest even) and
# saturating narrows (the int8 clamp). Go's assembler lacks these vector
# instructions: they are WORDs, each with its GNU spelling
# (scripts/arm64enc.py encodes them).
HEADER = kerngen.asm_head('scripts/gen-quantize-act-arm64.py')

F127, FM127 = 0x42fe0000, 0xc2fe0000  # 127.0 and -127.0 as float32 bits


def emit(ins):
    return ['\t' + i.go for i in ins]


def load32(base, off=0):
    """32 floats from base+off into V0..V7."""
    return [a.ldp_q(2 * i, 2 * i + 1, base, off + 32 * i) for i in range(4)]


def absmax(dst, fmax=a.fmax4s):
    """max |V0..V7| per lane into V{dst} (V16..V23 clobbered)."""
    ins = [a.fabs4s(16 + i, i) for i in range(8)]
    ins += [fmax(16, 16, 17), fmax(18, 18, 19), fmax(20, 20, 21), fmax(22, 22, 23),
            fmax(16, 16, 18), fmax(20, 20, 22)]
    return ins + [fmax(dst, 16, 20)]


def quantize32(scale):
    """V0..V7 times lane 0 of V{scale}, rounded to even and saturated to
    int8: the quants in V0 (elements 0..15) and V4 (16..31)."""
    ins = [a.dup_s(scale, scale, 0)] + [a.fmul(i, i, scale) for i in range(8)]
    ins += [a.fcvtns4s(i, i) for i in range(8)]
    for i in (0, 2, 4, 6):
        ins += [a.sqxtn_h(i, i), a.sqxtn2_h(i, i + 1)]
    return ins + [a.sqxtn_b(0, 0), a.sqxtn2_b(0, 2), a.sqxtn_b(4, 4), a.sqxtn2_b(4, 6)]


def q8_block(q81):
    """One 32-value block: x in R0, the block in R1; 127.0 in S31."""
    ins = load32(0) + absmax(16) + [a.fmaxv(16, 16)]
    out = emit(ins)
    out += ['\tADD $128, R0', '\t' + a.fmov_w_s(5, 16).go, '\tCBZW R5, zero']
    ins = [a.fdiv_s(17, 31, 16), a.fdiv_s(18, 16, 31), a.fcvt_h_s(19, 18), a.fcvt_sh(19, 19),
           a.str_s(19, 1, 0)] + quantize32(17)
    ins += [a.stur_q(0, 1, 8), a.stur_q(4, 1, 24)]
    ins += [a.saddlp_h(1, 0), a.sadalp_h(1, 4), a.saddlv_s(1, 1), a.fmov_w_s(6, 1)]
    out += emit(ins)
    if q81:
        ins = [a.scvtf_s_w(1, 6), a.fmul_ss(1, 18, 1), a.fcvt_h_s(1, 1), a.fcvt_sh(1, 1), a.str_s(1, 1, 4)]
        out += emit(ins)
    else:
        out += ['\tMULW R3, R6', '\tMOVW R6, 4(R1)']
    out += ['\tB next', 'zero:', '\tMOVD ZR, 0(R1)', '\tMOVD ZR, 8(R1)', '\tMOVD ZR, 16(R1)',
            '\tMOVD ZR, 24(R1)', '\tMOVD ZR, 32(R1)', 'next:', '\tADD $40, R1', '\tSUBS $1, R2', '\tBNE loop']
    return out


def q8_0():
    out = ['// func quantizeQ8_0NEON(x *float32, y *blockQ8_0, nb int, c int32)',
           'TEXT ·quantizeQ8_0NEON(SB), NOSPLIT, $0-28',
           '\tMOVD x+0(FP), R0', '\tMOVD y+8(FP), R1', '\tMOVD nb+16(FP), R2', '\tMOVW c+24(FP), R3',
           f'\tMOVW ${F127:#x}, R4', '\t' + a.fmov_s_w(31, 4).go, '\tCBZ R2, done', 'loop:']
    return out + q8_block(False) + ['done:', '\tRET', '']


def q8_1():
    out = ['// func quantizeQ8_1NEON(x *float32, y *blockQ8_1, nb int)',
           'TEXT ·quantizeQ8_1NEON(SB), NOSPLIT, $0-24',
           '\tMOVD x+0(FP), R0', '\tMOVD y+8(FP), R1', '\tMOVD nb+16(FP), R2',
           f'\tMOVW ${F127:#x}, R4', '\t' + a.fmov_s_w(31, 4).go, '\tCBZ R2, done', 'loop:']
    return out + q8_block(True) + ['done:', '\tRET', '']


def q8_k():
    """Q8_K: per super-block of 256, amax by NEON, then the first value of
    that magnitude by a scalar scan, then the quants (bsums are Go's)."""
    out = ['// func quantizeQ8_KNEON(x *float32, y *blockQ8_K, nb int)',
           'TEXT ·quantizeQ8_KNEON(SB), NOSPLIT, $0-24',
           '\tMOVD x+0(FP), R0', '\tMOVD y+8(FP), R1', '\tMOVD nb+16(FP), R2',
           f'\tMOVW ${FM127:#x}, R4', '\t' + a.fmov_s_w(30, 4).go, '\tCBZ R2, done', 'loop:',
           '\t' + a.movi_zero(24).go]
    for blk in range(8):
        out += emit(load32(0, 128 * blk) + absmax(25, a.fmaxnm4s) + [a.fmaxnm4s(24, 24, 25)])
    # FMAXNM skips NaNs as the Go reference's scan does, so the scan below
    # finds amax (all NaN: amax 0, a zero block).
    out += emit([a.fmaxnmv(24, 24), a.fmov_w_s(5, 24)])
    out += ['\tCBZW R5, zero', '\tMOVD R0, R7', 'scan:']
    out += emit([a.ldr_s_post(26, 7, 4), a.fabs_s(27, 26), a.fcmp_ss(27, 24)])
    out += ['\tBNE scan']
    # iscale = -127/vmax in S17, d = 1/iscale.
    out += ['\tMOVW $0x3f800000, R4', '\t' + a.fmov_s_w(28, 4).go]
    out += emit([a.fdiv_s(17, 30, 26), a.fdiv_s(18, 28, 17), a.str_s(18, 1, 0)])
    for blk in range(8):
        out += emit(load32(0, 128 * blk) + quantize32(17) +
                    [a.stur_q(0, 1, 4 + 32 * blk), a.stur_q(4, 1, 20 + 32 * blk)])
    out += ['\tB next', 'zero:', '\tMOVW ZR, 0(R1)', '\tMOVD $4, R7', 'zq:', '\tMOVD ZR, (R1)(R7)',
            '\tADD $8, R7', '\tCMP $260, R7', '\tBLT zq', 'next:',
            '\tADD $1024, R0', '\tADD $292, R1', '\tSUBS $1, R2', '\tBNE loop', 'done:', '\tRET', '']
    return out


def build():
    u = kerngen.Unit('scripts/gen-quantize-act-arm64.py')
    u.text('\n'.join(HEADER.split('\n') + q8_0() + q8_1() + q8_k()).rstrip('\n'))
    u.declare('quantizeQ8_0NEON', 'quantizeQ8_0', 'activations')
    u.declare('quantizeQ8_1NEON', 'quantizeQ8_1', 'activations')
    u.declare('quantizeQ8_KNEON', 'quantizeQ8_K', 'activations')
    return u


def mca():
    body = load32(0) + absmax(16) + [a.fmaxv(16, 16), a.fdiv_s(17, 31, 16), a.fdiv_s(18, 16, 31),
                                      a.fcvt_h_s(19, 18), a.fcvt_sh(19, 19), a.str_s(19, 1, 0)]
    body += quantize32(17) + [a.stur_q(0, 1, 8), a.stur_q(4, 1, 24), a.saddlp_h(1, 0), a.sadalp_h(1, 4),
                              a.saddlv_s(1, 1)]
    kerngen.mca_loop('quantizeQ8_0NEON q8_0 rows=1 values=32', body,
                     ['add x0, x0, #128', 'add x1, x1, #40', 'subs x2, x2, #1', 'b.ne 1b'])


if __name__ == '__main__':
    kerngen.run(build, mca)
