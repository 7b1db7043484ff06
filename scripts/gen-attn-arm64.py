#!/usr/bin/env python3
"""Writes compute/attn_arm64.s: the f16 KV cache's key dot product and the
f16 conversions for NEON.

Run from the repository root:
    python3 scripts/gen-attn-arm64.py > compute/attn_arm64.s
With --mca it prints the kernel's loop over 64 values in GNU syntax for
bench/arm64-mca.sh.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import arm64enc as a  # noqa: E402
import kerngen  # noqa: E402

# The assembly's documentation (scripts/gen-attn-arm64.py points here):
#
# dotRows64NEON is DotRows for head sizes a multiple of 64 (see attn.go,
# dotRowsGeneric): per row, four 16-lane float32 FMA accumulators (sum[a]
# takes values 64c + 16a + l), each in four V registers; then sum0 + sum2,
# sum1 + sum3, their sum, the upper 8 lanes onto the lower 8, and hsum8.
#
# f16sNEON and roundF16sNEON convert to f16 by FCVTN (to nearest even, as
# FP32ToFP16; a NaN stays a NaN, maybe with other payload bits), and back by
# FCVTL.
# Go's assembler lacks these vector instructions: they are WORDs, each with
# its GNU spelling (scripts/arm64enc.py encodes them).
HEADER = kerngen.asm_head('scripts/gen-attn-arm64.py')

Q, K, STRIDE, N, HD, OUT = 0, 1, 2, 3, 4, 5
ROW, QP, CNT = 6, 7, 8


def chunk():
    """64 values: row pointer R6, query pointer R7; sum[a] quarter q in V(4a+q)."""
    ins = []
    for a_ in range(4):
        for h in range(2):
            raw = 16 + (2 * a_ + h) % 4
            ins.append(a.ldr_q(raw, ROW, 32 * a_ + 16 * h))
            for half in range(2):
                qt = 2 * h + half
                t = 20 + (4 * a_ + qt) % 8
                qr = 28 + qt
                ins.append(a.ldr_q(qr, QP, 64 * a_ + 16 * qt))
                ins.append((a.fcvtl2 if half else a.fcvtl)(t, raw))
                ins.append(a.fmla(4 * a_ + qt, t, qr))
    return ins


def reduce_store():
    ins = []
    for q in range(4):  # sum0 += sum2; sum1 += sum3; sum0 += sum1
        ins += [a.fadd(q, q, 8 + q), a.fadd(4 + q, 4 + q, 12 + q), a.fadd(q, q, 4 + q)]
    # acc[l] = sum0[8+l] + sum0[l]: lanes 0..3 in V0, 4..7 in V1.
    ins += [a.fadd(0, 2, 0), a.fadd(1, 3, 1)]
    # hsum8: r = acc[4..7] + acc[0..3], then (r0 + r2) + (r1 + r3).
    ins += [a.fadd(0, 1, 0), a.ext16(1, 0, 0, 8), a.fadd(0, 0, 1), a.faddp_s(0, 0), a.str_s(0, OUT, 0)]
    return ins


def kernel():
    out = ['// func dotRows64NEON(q *float32, k *uint16, stride, n, hd int, out *float32)',
           'TEXT ·dotRows64NEON(SB), NOSPLIT, $0-48']
    out += [f'\tMOVD {n}+{8 * r}(FP), R{r}' for r, n in enumerate(['q', 'k', 'stride', 'n', 'hd', 'out'])]
    out += ['\tLSR $6, R4', '\tCBZ R3, done', 'row:']
    out += ['\t' + a.movi_zero(r).go for r in range(16)]
    out += [f'\tMOVD R{K}, R{ROW}', f'\tMOVD R{Q}, R{QP}', f'\tMOVD R{HD}, R{CNT}', 'chunk:']
    out += ['\t' + i.go for i in chunk()]
    out += [f'\tADD $128, R{ROW}', f'\tADD $256, R{QP}', f'\tSUBS $1, R{CNT}', '\tBNE chunk']
    out += ['\t' + i.go for i in reduce_store()]
    out += [f'\tADD $4, R{OUT}', f'\tADD R{STRIDE}, R{K}', f'\tSUBS $1, R{N}', '\tBNE row', 'done:', '\tRET', '']
    return out


def conversions():
    """f16sNEON and roundF16sNEON: eight values a step (n a multiple of 8)."""
    out = []
    for name, dst, rnd in (('f16sNEON', '*uint16', False), ('roundF16sNEON', '*float32', True)):
        out += [f'// func {name}(dst {dst}, src *float32, n int)', f'TEXT ·{name}(SB), NOSPLIT, $0-24',
                '\tMOVD dst+0(FP), R0', '\tMOVD src+8(FP), R1', '\tMOVD n+16(FP), R2', '\tLSR $3, R2',
                '\tCBZ R2, done', 'loop:']
        ins = [a.ldp_q(0, 1, 1, 0), a.fcvtn(2, 0), a.fcvtn2(2, 1)]
        if rnd:
            ins += [a.fcvtl(0, 2), a.fcvtl2(1, 2), a.stp_q(0, 1, 0, 0)]
        else:
            ins += [a.str_q(2, 0, 0)]
        out += ['\t' + i.go for i in ins]
        out += [f'\tADD ${32 if rnd else 16}, R0', '\tADD $32, R1', '\tSUBS $1, R2', '\tBNE loop', 'done:', '\tRET', '']
    return out


def build():
    u = kerngen.Unit('scripts/gen-attn-arm64.py')
    u.text('\n'.join(HEADER.split('\n') + kernel() + conversions()).rstrip('\n'))
    u.declare('dotRows64NEON', 'dotRows', 'attention rows')
    u.declare('roundF16sNEON', 'roundF16s', 'float')
    u.declare('f16sNEON', 'f16s', 'float')
    return u


def mca():
    kerngen.mca_loop('dotRows64NEON attn rows=1 values=64', chunk(),
                     [f'add x{ROW}, x{ROW}, #128', f'add x{QP}, x{QP}, #256', f'subs x{CNT}, x{CNT}, #1', 'b.ne 1b'])


if __name__ == '__main__':
    kerngen.run(build, mca)
