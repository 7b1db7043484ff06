#!/usr/bin/env python3
"""Writes compute/attn_rows_arm64.s: the attention kernels over KV cache
rows for NEON beside gen-attn-arm64.py's key dot product: the f16 value
accumulation, the Q8_0 value accumulation and the f16 key dot product of
heads shorter than 64.

Run from the repository root: python3 scripts/gen-attn-rows-arm64.py > compute/attn_rows_arm64.s
"""
import sys

sys.dont_write_bytecode = True
import arm64asm as a  # noqa: E402
import kerngen  # noqa: E402

# The assembly's documentation (scripts/gen-attn-rows-arm64.py points here):
#
# Attention kernels over KV cache rows (attn.go, attn_q8.go), each with
# the float operations of its Go version per value, so that the results
# equal it bit for bit:
#
# vkqRowsF16NEON (VKQRowsF16, hd a multiple of 8, stride in bytes): per
# chunk of 32 (then 8) values kept in registers, for each row j in order
# out = f16(out·ms[j]), out = f16(fma(v, vs[j], out)); f16 rounding by
# FCVTN (to nearest even) and back by FCVTL.
#
# vkqRowsQ8_0NEON (VKQRowsQ8_0, nb blocks of 32 values, stride in bytes):
# per block kept in registers, for each row j in order out = out·ms[j]
# where ms[j] is not 1, then out = fma(float(q)·d, vs[j], out).
#
# dotRowsNEON (DotRows, hd a multiple of 8 below 64, stride in bytes):
# per row, eight float64 lanes (position mod 8) adding the float32
# products, then (l0 + l4) + (l2 + l6) + ((l1 + l5) + (l3 + l7)) as
# dotRowsGeneric, rounded to float32.
#
# Every instruction carries its GNU spelling ("// gnu: ..."; see
# scripts/arm64asm.py).


def args(names):
    return ['\t' + a.go(f'MOVD {n}+{8 * i}(FP), R{i}', f'ldr x{i}, [sp, #{8 * i + 8}]') for i, n in enumerate(names)]


def vkq_f16_chunk(regs, label):
    # regs four-lane accumulators of out at x0 (post-incremented); rows
    # from x9 (= x1 + 2·chunk offset), ms at x10, vs at x11, n rows in x13.
    k = len(regs) // 2  # 16-byte loads of eight f16 each
    s = [a.mov(12, 0)] + [a.ld1(g, min(4, len(regs) - g), 12) for g in range(0, len(regs), 4)]
    s += [a.mov(9, 1), a.mov(10, 5), a.mov(11, 6), a.mov(13, 3), f'{label}:', a.ldr_s_post(16, 10, 4), a.ldr_s_post(17, 11, 4)]
    s += [a.fmul_el(r, r, 16, 0) for r in regs]
    s += round_f16(regs)
    s += [a.ld1(18, k, 9, post=False)]
    for i in range(k):
        s += [a.fcvtl(22 + 2 * i, 18 + i), a.fcvtl2(23 + 2 * i, 18 + i)]
    s += [a.fmla_el(r, 22 + r, 17, 0) for r in regs]
    s += round_f16(regs)
    s += [a.add(9, 9, 2), a.subs1(13), a.bne(label)]
    s += [a.st1(g, min(4, len(regs) - g), 0) for g in range(0, len(regs), 4)]
    return s


def round_f16(regs):
    # Each accumulator to f16 and back, in pairs (FCVTN, FCVTN2, FCVTL,
    # FCVTL2 through v30).
    s = []
    for i in range(0, len(regs), 2):
        r = regs[i]
        s += [a.fcvtn(30, r), a.fcvtn2(30, r + 1), a.fcvtl(r, 30), a.fcvtl2(r + 1, 30)]
    return s


def vkq_f16():
    out = ['// func vkqRowsF16NEON(out *float32, v *uint16, stride, n, hd int, ms, vs *float32)',
           'TEXT ·vkqRowsF16NEON(SB), NOSPLIT, $0-56'] + args(['out', 'v', 'stride', 'n', 'hd', 'ms', 'vs'])
    body = [a.cbz(3, 'done'), a.go('LSR $3, R4', 'lsr x4, x4, #3'), 'wide:', a.cmpi(4, 4), a.blt('narrow')]
    body += vkq_f16_chunk([0, 1, 2, 3, 4, 5, 6, 7], 'wrow')
    body += [a.addi(1, 1, 64), a.subsi(4, 4), a.b('wide'), 'narrow:', a.cbz(4, 'done')]
    body += vkq_f16_chunk([0, 1], 'nrow')
    body += [a.addi(1, 1, 16), a.subs1(4), a.b('narrow')]
    return '\n'.join(out + a.indent(body) + ['done:', '\tRET', ''])


def vkq_q8():
    # Per block: out (32 values) in v0..v7; per row ms[j] in s16 (compared
    # with 1.0 in s18), vs[j] in s17, d in s19, quants v20, v21 widened to
    # v22..v25 (int16), then four at a time to v26 (int32, float, ·d).
    out = ['// func vkqRowsQ8_0NEON(out *float32, v *byte, stride, n, nb int, ms, vs *float32)',
           'TEXT ·vkqRowsQ8_0NEON(SB), NOSPLIT, $0-56'] + args(['out', 'v', 'stride', 'n', 'nb', 'ms', 'vs'])
    body = [a.fmov_s_one(18), a.cbz(3, 'done'), a.cbz(4, 'done'), 'block:', a.ld1(0, 4, 0, post=False),
            a.addi(12, 0, 64), a.ld1(4, 4, 12, post=False), a.mov(9, 1), a.mov(10, 5), a.mov(11, 6),
            a.mov(13, 3), 'row:', a.ldr_s_post(16, 10, 4), a.ldr_s_post(17, 11, 4), a.fcmp_ss(16, 18),
            a.beq('same')]
    body += [a.fmul_el(r, r, 16, 0) for r in range(8)]
    body += ['same:', a.ldr_h(19, 9, 0), a.fcvt_sh(19, 19), a.ldur_q(20, 9, 2), a.ldur_q(21, 9, 18),
             a.sxtl_h(22, 20), a.sxtl2_h(23, 20), a.sxtl_h(24, 21), a.sxtl2_h(25, 21)]
    for r in range(8):
        h = 22 + r // 2
        body += [(a.sxtl2_s if r % 2 else a.sxtl_s)(26, h), a.scvtf(26, 26), a.fmul_el(26, 26, 19, 0),
                 a.fmla_el(r, 26, 17, 0)]
    body += [a.add(9, 9, 2), a.subs1(13), a.bne('row'), a.st1(0, 4, 0), a.st1(4, 4, 0), a.addi(1, 1, 34),
             a.subs1(4), a.bne('block')]
    return '\n'.join(out + a.indent(body) + ['done:', '\tRET', ''])


def dot_short():
    # Per row: float64 lanes v0 (0, 1), v1 (2, 3), v2 (4, 5), v3 (6, 7);
    # eight keys (v4, to v5, v6 as float32) times eight query values (v16,
    # v17) a step.
    out = ['// func dotRowsNEON(q *float32, k *uint16, stride, n, hd int, out *float32)',
           'TEXT ·dotRowsNEON(SB), NOSPLIT, $0-48'] + args(['q', 'k', 'stride', 'n', 'hd', 'out'])
    body = [a.cbz(3, 'done'), a.go('LSR $3, R4', 'lsr x4, x4, #3'), 'row:'] + [a.movi_b(i, 0) for i in range(4)]
    body += [a.mov(9, 1), a.mov(10, 0), a.mov(11, 4), 'step:', a.ldr_q_post(4, 9, 16), a.ld1(16, 2, 10),
             a.fcvtl(5, 4), a.fcvtl2(6, 4), a.fmul(5, 5, 16), a.fmul(6, 6, 17)]
    for i, (src, hi) in enumerate(((5, 0), (5, 1), (6, 0), (6, 1))):
        body += [(a.fcvtl2_d if hi else a.fcvtl_d)(7, src), a.fadd_d(i, i, 7)]
    body += [a.subs1(11), a.bne('step'), a.fadd_d(0, 0, 2), a.fadd_d(1, 1, 3), a.fadd_d(0, 0, 1), a.faddp_d(0, 0),
             a.fcvt_sd(0, 0), a.str_s_post(0, 5, 4), a.add(1, 1, 2), a.subs1(3), a.bne('row')]
    return '\n'.join(out + a.indent(body) + ['done:', '\tRET', ''])


def build():
    u = kerngen.Unit('scripts/gen-attn-rows-arm64.py')
    u.text(a.header('scripts/gen-attn-rows-arm64.py'))
    u.text(vkq_f16())
    u.text(vkq_q8())
    u.text(dot_short())
    u.declare('vkqRowsF16NEON', 'vkqRowsF16', 'attention rows')
    u.declare('vkqRowsQ8_0NEON', 'vkqRowsQ8_0', 'attention rows')
    u.declare('dotRowsNEON', 'dotRows', 'attention rows')
    return u


def main():
    kerngen.run(build)


if __name__ == '__main__':
    main()
