#!/usr/bin/env python3
"""Writes compute/attn_group_arm64.s: the grouped attention kernels for NEON
(several query heads of one KV head a pass over the f16 cache rows), the
arm64 counterparts of attn512_amd64.s's dotRowsG*C* and vkqRowsG*C*.

Run from the repository root:
    python3 scripts/gen-attn-group-arm64.py > compute/attn_group_arm64.s
With --mca it prints each kernel's loop over one row in GNU syntax for
bench/arm64-mca.sh.
"""
import sys

sys.dont_write_bytecode = True
import arm64asm as a  # noqa: E402
import kerngen  # noqa: E402

# (G heads, C 64-value chunks): the kernels written. A dot kernel needs
# 4G + 4C + 8 vector registers, so G + C <= 6.
SHAPES = [(2, 1), (3, 1), (4, 1), (2, 2), (3, 2), (4, 2), (2, 4)]

# The assembly's documentation (scripts/gen-attn-group-arm64.py points here):
#
# Grouped attention kernels over f16 KV cache rows for NEON: G query heads
# of one KV head (head size 64·C) a pass over the rows, each row read and
# widened once for all G heads. Each head's results equal the one-head
# kernels' (attn_arm64.s, attn_rows_arm64.s) and so the Go versions' bit
# for bit: the same float operations per value in the same order.
#
# dotRowsNEONG<G>C<C>(q *float32, k *uint16, kstride, n int, out *float32, ostride int)
# (DotRowsGroup; kstride and ostride in bytes): per row, for each quarter
# qd of DotRows's 16-lane accumulators (lanes 4qd..4qd+3 of sum[a], a <
# 4), the row's values 64c + 16a + 4qd widened by FCVTL (4C registers),
# then per head sum[a] = FMLA over the chunks c from zero and that
# quarter of (sum0 + sum2) + (sum1 + sum3); per head the quarters 2 + 0
# and 3 + 1, their sum and hsum8 as dotRows64NEON, stored to head h's
# out (out + h·ostride, four bytes a row).
#
# vkqRowsNEONG<G>C<C>(out *float32, v *uint16, vstride, n int, ms, vs *float32, sstride int)
# (VKQRowsF16Group; vstride and sstride in bytes): per 16 values of the
# head (G·4 accumulators in registers), for each row j in order: the row's
# 16 values widened once, then per head out = f16(out·ms[j]), out =
# f16(fma(v, vs[j], out)) as vkqRowsF16NEON (f16 rounding by FCVTN, back
# by FCVTL), head h's ms and vs at h·sstride.
#
# Every instruction carries its GNU spelling ("// gnu: ..."; see
# scripts/arm64asm.py).


def args(names):
    return ['\t' + a.go(f'MOVD {n}+{8 * i}(FP), R{i}', f'ldr x{i}, [sp, #{8 * i + 8}]') for i, n in enumerate(names)]


# dot: R0 q, R1 k (row), R2 kstride, R3 n, R4 out, R5 ostride; out
# pointers of heads 1.. in R6..
def dot_regs(g, c):
    T = [[4 * h + qd for qd in range(4)] for h in range(g)]
    base = 4 * g
    ACC = list(range(base, base + 4))
    QT = list(range(base + 4, base + 8))
    R = [[base + 8 + a_ * c + ch for ch in range(c)] for a_ in range(4)]
    assert base + 8 + 4 * c <= 32
    return T, ACC, QT, R


def outp(h):
    return 4 if h == 0 else 5 + h  # R4, R6, R7, R8


def dot_row(g, c):
    """One row: the loop body before the pointer steps."""
    hd = 64 * c
    T, ACC, QT, R = dot_regs(g, c)
    s = []
    for qd in range(4):
        for a_ in range(4):
            for ch in range(c):
                s += [a.ldr_d(R[a_][ch], 1, 2 * (64 * ch + 16 * a_ + 4 * qd)), a.fcvtl(R[a_][ch], R[a_][ch])]
        for h in range(g):
            for a_ in range(4):
                s.append(a.movi_zero(ACC[a_]))
                for ch in range(c):
                    qt = QT[(a_ * c + ch) % 4]
                    s += [a.ldr_q(qt, 0, 4 * (h * hd + 64 * ch + 16 * a_ + 4 * qd)), a.fmla(ACC[a_], R[a_][ch], qt)]
            s += [a.fadd(ACC[0], ACC[0], ACC[2]), a.fadd(ACC[1], ACC[1], ACC[3]), a.fadd(T[h][qd], ACC[0], ACC[1])]
    for h in range(g):
        t = T[h]
        s += [a.fadd(t[0], t[2], t[0]), a.fadd(t[1], t[3], t[1]), a.fadd(t[0], t[1], t[0]), a.ext16(t[1], t[0], t[0], 8),
              a.fadd(t[0], t[0], t[1]), a.faddp_s(t[0], t[0]), a.str_s_post(t[0], outp(h), 4)]
    return s


def dot_kernel(g, c):
    name = f'dotRowsNEONG{g}C{c}'
    out = [f'// func {name}(q *float32, k *uint16, kstride, n int, out *float32, ostride int)',
           f'TEXT ·{name}(SB), NOSPLIT, $0-48'] + args(['q', 'k', 'kstride', 'n', 'out', 'ostride'])
    body = [a.cbz(3, 'done')]
    for h in range(1, g):
        body.append(a.add(outp(h), outp(h - 1), 5))
    body += ['row:'] + dot_row(g, c) + [a.add(1, 1, 2), a.subs1(3), a.bne('row')]
    return out + a.indent(body) + ['done:', '\tRET', '']


# vkq: R0 out (chunk), R1 v (chunk), R2 vstride, R3 n, R4 ms, R5 vs, R6
# sstride; per chunk ms of head h in R7+h, vs in R11+h, the row in R15,
# rows left in R16, chunks left in R17.
def vkq_row(g):
    OUT = [[4 * h + i for i in range(4)] for h in range(g)]
    V, RAW = [16, 17, 18, 19], [20, 21]
    M = [22 + 2 * h for h in range(g)]
    S = [23 + 2 * h for h in range(g)]
    s = [a.ldp_q(RAW[0], RAW[1], 15, 0), a.fcvtl(V[0], RAW[0]), a.fcvtl2(V[1], RAW[0]), a.fcvtl(V[2], RAW[1]),
         a.fcvtl2(V[3], RAW[1])]
    for h in range(g):
        o = OUT[h]
        s += [a.ldr_s_post(M[h], 7 + h, 4), a.ldr_s_post(S[h], 11 + h, 4)]
        s += [a.fmul_el(r, r, M[h], 0) for r in o] + round_f16(o, 30 + h % 2)
        s += [a.fmla_el(r, V[i], S[h], 0) for i, r in enumerate(o)] + round_f16(o, 30 + h % 2)
    return s


def round_f16(regs, tmp):
    s = []
    for i in range(0, len(regs), 2):
        r = regs[i]
        s += [a.fcvtn(tmp, r), a.fcvtn2(tmp, r + 1), a.fcvtl(r, tmp), a.fcvtl2(r + 1, tmp)]
    return s


def vkq_kernel(g, c):
    name = f'vkqRowsNEONG{g}C{c}'
    hd = 64 * c
    out = [f'// func {name}(out *float32, v *uint16, vstride, n int, ms, vs *float32, sstride int)',
           f'TEXT ·{name}(SB), NOSPLIT, $0-56'] + args(['out', 'v', 'vstride', 'n', 'ms', 'vs', 'sstride'])
    body = [a.cbz(3, 'done'), a.go(f'MOVD ${4 * c}, R17', f'mov x17, #{4 * c}'), 'chunk:']
    for h in range(g):
        body += [a.ldr_q(4 * h + i, 0, 4 * h * hd + 16 * i) for i in range(4)]
    body += [a.mov(7, 4), a.mov(11, 5)]
    for h in range(1, g):
        body += [a.add(7 + h, 6 + h, 6), a.add(11 + h, 10 + h, 6)]
    body += [a.mov(15, 1), a.mov(16, 3), 'row:'] + vkq_row(g) + [a.add(15, 15, 2), a.subs1(16), a.bne('row')]
    for h in range(g):
        body += [a.str_q(4 * h + i, 0, 4 * h * hd + 16 * i) for i in range(4)]
    body += [a.addi(0, 0, 64), a.addi(1, 1, 32), a.subs1(17), a.bne('chunk')]
    return out + a.indent(body) + ['done:', '\tRET', '']


def one_head_rows():
    """The one-head kernels' whole loop over one row, for comparison: a
    dotRows64NEON row (its zeroing, chunks and reduction) for head size 64
    and 128, and a vkqRowsF16NEON row of a 32-value chunk."""
    att, rows = kerngen.load('gen-attn-arm64.py'), kerngen.load('gen-attn-rows-arm64.py')
    for c in (1, 2):
        body = [a.movi_zero(r) for r in range(16)] + att.chunk() * c + att.reduce_store()
        kerngen.mca_loop(f'dotRows64NEON/row/hd{64 * c} attn rows=1 values={64 * c}', body,
                         ['add x1, x1, x2', 'subs x3, x3, #1', 'b.ne 1b'])
    s = rows.vkq_f16_chunk([0, 1, 2, 3, 4, 5, 6, 7], 'wrow')
    body = s[s.index('wrow:') + 1:]
    kerngen.mca_loop('vkqRowsF16NEON/row vkq rows=1 values=32',
                     [i for i in body if i.gnu.startswith(('b.ne', 'st1')) is False], ['b.ne 1b'])


def build():
    u = kerngen.Unit('scripts/gen-attn-group-arm64.py')
    u.text(a.header('scripts/gen-attn-group-arm64.py'))
    for g, c in SHAPES:
        u.text('\n'.join(dot_kernel(g, c)))
        u.text('\n'.join(vkq_kernel(g, c)))
        u.declare(f'dotRowsNEONG{g}C{c}', 'dotGroup', 'attention')
        u.declare(f'vkqRowsNEONG{g}C{c}', 'vkqGroup', 'attention')
    return u


def mca():
    one_head_rows()
    for g, c in SHAPES:
        kerngen.mca_loop(f'dotRowsNEONG{g}C{c} attn rows=1 values={64 * c * g}', dot_row(g, c),
                         ['add x1, x1, x2', 'subs x3, x3, #1', 'b.ne 1b'])
        kerngen.mca_loop(f'vkqRowsNEONG{g}C{c} vkq rows=1 values={16 * g}', vkq_row(g),
                         ['add x15, x15, x2', 'subs x16, x16, #1', 'b.ne 1b'])


if __name__ == '__main__':
    kerngen.run(build, mca)
