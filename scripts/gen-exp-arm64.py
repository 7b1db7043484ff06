#!/usr/bin/env python3
"""Writes compute/exp_arm64.s: Expf (glibc's expf, see compute/expf.go) four
values at a time for NEON, the arm64 counterpart of exp_amd64.s's expfAVX2,
and the online softmax's other two passes (attn_amd64.s's softmaxScanAVX2
and softmaxSumAVX2).

Run from the repository root: python3 scripts/gen-exp-arm64.py > compute/exp_arm64.s
With --mca it prints the loop in GNU syntax for bench/arm64-mca.sh.
"""
import sys

sys.dont_write_bytecode = True
import arm64asm as a  # noqa: E402
import kerngen  # noqa: E402
from arm64enc import two, word  # noqa: E402
from arm64enc import (add_d, fadd_d, fcmgt, fcvt_ds, fcvtn2_s, fcvtn_s, fmax_d, fmin_d, fmla_d,  # noqa: E402
                      fmul_d, fsub_d, umaxv)

# The assembly's documentation (scripts/gen-exp-arm64.py points here):
#
# func expfNEON(x *float32, n int)
# x[i] = Expf(x[i]) for n values (a multiple of 4), as expfAVX2: in float64
# lanes (two to a register, FCVTL/FCVTL2), each clamped to [−104, 89]
# (where the formula gives glibc's 0 and +Inf; FMAX/FMIN keep a NaN a
# NaN), z = x·32/ln2, k its nearest integer (by adding 1.5·2^52), r = z −
# k, s = 2^(k/32) from the 32-entry exp2fTab (one load per lane, through
# a general register) and the exponent bits k<<47, y = s·((C0·r + C1)·r²
# + (C2·r + 1)) with Expf's fused multiply-adds (FMLA .2d), rounded to
# float32 by FCVTN/FCVTN2. Bit for bit Expf (TestExp).
#
# func softmaxScanNEON(vs, ms *float32, n int, scale float32)
# The online softmax's first pass (softmaxScanGeneric): with s =
# vs[j]·scale and M the running max before j, where s > M: vs[j] = M − s,
# ms[j] = 0 and M = s; else vs[j] = s − M, ms[j] = 1. Four positions at a
# time where none of them moves the max (FCMGT, ordered: a NaN never
# does), one by one where one does.
#
# func softmaxSumNEON(vs, ms *float32, n int) float32
# The last pass (softmaxSumGeneric): where ms[j] = 0, ms[j] = vs[j] and
# vs[j] = 1, S = float32(fma(S, ms[j], 1)) in float64; else (ms[j] = 1)
# S = S + vs[j] in float32, which is float32(fma(S, 1, vs[j])) (a float64
# sum of two float32 values rounded to float32 is their float32 sum).
#
# Every instruction carries its GNU spelling ("// gnu: ..."; see
# scripts/arm64asm.py).


def shl_d(d, n, sh):
    return word(two(0x4F005400 | (64 + sh) << 16, d, n), f'shl v{d}.2d, v{n}.2d, #{sh}')


def umov_d(d, n, i):
    return word(two(0x4E083C00 | i << 20, d, n), f'mov x{d}, v{n}.d[{i}]')


def ins_d(d, i, n):
    return word(two(0x4E081C00 | i << 20, d, n), f'mov v{d}.d[{i}], x{n}')


def ldr_x_lsl3(t, n, m):
    return a.go(f'MOVD (R{n})(R{m}<<3), R{t}', f'ldr x{t}, [x{n}, x{m}, lsl #3]')


def andi(d, n, imm):
    return a.go(f'AND ${imm}, R{n}, R{d}', f'and x{d}, x{n}, #{imm}')


# Constants (each in both lanes of its register): v16.. in this order.
CONSTS = [('lo', 0xc05a000000000000), ('hi', 0x4056400000000000), ('invLn2N', 0x40471547652b82fe),
          ('shift', 0x4338000000000000), ('c0', 0x3ebc6af84b912394), ('c1', 0x3f2ebfce50fac4f3),
          ('c2', 0x3f962e42ff0c52d6), ('one', 0x3ff0000000000000), ('mask', 0x1f)]
C = {name: 16 + i for i, (name, _) in enumerate(CONSTS)}
TAB = 5  # exp2fTab


def lanes(x, w):
    """Expf of the two float64 lanes of x, into x; w: five scratch vector
    registers (z, kd, t, y, p); general registers 6 + 2·(x%2) and 7 +
    2·(x%2)."""
    z, kd, t, y, p = w
    g0, g1 = 6 + 2 * (x % 2), 7 + 2 * (x % 2)
    s = [fmax_d(x, x, C['lo']), fmin_d(x, x, C['hi']), fmul_d(z, x, C['invLn2N']), fadd_d(kd, z, C['shift']),
         fsub_d(t, kd, C['shift']), fsub_d(z, z, t),  # r in z
         a.and16(t, kd, C['mask'])]
    for i in range(2):
        s += [umov_d(g0, t, i), ldr_x_lsl3(g1, TAB, g0), ins_d(t, i, g1)]
    s += [shl_d(kd, kd, 47), add_d(t, t, kd),  # s in t
          a.mov16(y, C['c1']), fmla_d(y, C['c0'], z),  # C0·r + C1
          fmul_d(p, z, z), a.mov16(x, C['one']), fmla_d(x, C['c2'], z),  # C2·r + 1
          fmla_d(x, y, p), fmul_d(x, x, t)]
    return s


def fmadd_dd(d, n, m, acc):
    return word(0x1F400000 | m << 16 | acc << 10 | n << 5 | d, f'fmadd d{d}, d{n}, d{m}, d{acc}')


def g(text, gnu):
    return a.go(text, gnu)


def scan():
    """softmaxScanNEON: R0 vs, R1 ms, R2 n; V14 scale, V15 M (every lane),
    V13 ones, F12 zero."""
    out = ['// func softmaxScanNEON(vs, ms *float32, n int, scale float32)',
           'TEXT ·softmaxScanNEON(SB), NOSPLIT, $0-28']
    s = [g('MOVD vs+0(FP), R0', 'ldr x0, [sp, #8]'), g('MOVD ms+8(FP), R1', 'ldr x1, [sp, #16]'),
         g('MOVD n+16(FP), R2', 'ldr x2, [sp, #24]'), g('FMOVS scale+24(FP), F14', 'ldr s14, [sp, #32]'),
         a.dup_s(14, 14, 0), g('MOVD $negInfNEON<>(SB), R4', 'adr x4, neginf'), a.ld1r_s_noinc(15, 4),
         g('FMOVS $1.0, F13', 'fmov s13, #1.0'), a.dup_s(13, 13, 0), a.movi_zero(12),
         'scan4:', a.cmpi(2, 4), a.blt('scan1'),
         a.ldr_q(0, 0, 0), a.fmul(0, 0, 14), fcmgt(1, 0, 15), umaxv(1, 1), a.fmov_w_s(3, 1),
         g('CBNZW R3, scanslow', 'cbnz w3, scanslow'),
         a.fsub(0, 0, 15), a.str_q(0, 0, 0), a.str_q(13, 1, 0), a.addi(0, 0, 16), a.addi(1, 1, 16),
         g('SUB $4, R2', 'sub x2, x2, #4'), a.b('scan4'),
         'scanslow:', a.str_q(0, 0, 0), g('MOVD $4, R3', 'mov x3, #4'), a.b('scanone'),
         'scan1:', a.cbz(2, 'scandone'), g('FMOVS (R0), F0', 'ldr s0, [x0]'), g('FMULS F14, F0, F0', 'fmul s0, s0, s14'),
         g('FMOVS F0, (R0)', 'str s0, [x0]'), g('MOVD $1, R3', 'mov x3, #1'),
         'scanone:', g('FMOVS (R0), F0', 'ldr s0, [x0]'), g('FCMPS F15, F0', 'fcmp s0, s15'),
         g('BGT scanmax', 'b.gt scanmax'),  # s > M (unordered: not taken)
         g('FSUBS F15, F0, F1', 'fsub s1, s0, s15'), g('FMOVS F1, (R0)', 'str s1, [x0]'),
         g('FMOVS F13, (R1)', 'str s13, [x1]'), a.b('scannext'),
         'scanmax:', g('FSUBS F0, F15, F1', 'fsub s1, s15, s0'), g('FMOVS F1, (R0)', 'str s1, [x0]'),
         g('FMOVS F12, (R1)', 'str s12, [x1]'), a.dup_s(15, 0, 0),
         'scannext:', a.addi(0, 0, 4), a.addi(1, 1, 4), g('SUB $1, R2', 'sub x2, x2, #1'), a.subs1(3),
         a.bne('scanone'), a.b('scan4'), 'scandone:']
    return out + a.indent(s) + ['\tRET', '']


def ssum():
    """softmaxSumNEON: R0 vs, R1 ms, R2 n; F0 S, F13 one."""
    out = ['// func softmaxSumNEON(vs, ms *float32, n int) float32', 'TEXT ·softmaxSumNEON(SB), NOSPLIT, $0-28']
    s = [g('MOVD vs+0(FP), R0', 'ldr x0, [sp, #8]'), g('MOVD ms+8(FP), R1', 'ldr x1, [sp, #16]'),
         g('MOVD n+16(FP), R2', 'ldr x2, [sp, #24]'), a.movi_zero(0), g('FMOVS $1.0, F13', 'fmov s13, #1.0'),
         g('FMOVD $1.0, F2', 'fmov d2, #1.0'), a.cbz(2, 'sumdone'),
         'sumloop:', g('FMOVS (R1), F1', 'ldr s1, [x1]'), g('FCMPS $(0.0), F1', 'fcmp s1, #0.0'),
         g('BNE sumadd', 'b.ne sumadd'),  # ms != 0 (1 here; unordered: taken)
         g('FMOVS (R0), F1', 'ldr s1, [x0]'), g('FMOVS F1, (R1)', 'str s1, [x1]'), g('FMOVS F13, (R0)', 'str s13, [x0]'),
         fcvt_ds(0, 0), fcvt_ds(1, 1), fmadd_dd(0, 0, 1, 2), a.fcvt_sd(0, 0), a.b('sumnext'),
         'sumadd:', g('FMOVS (R0), F1', 'ldr s1, [x0]'), g('FADDS F1, F0, F0', 'fadd s0, s0, s1'),
         'sumnext:', a.addi(0, 0, 4), a.addi(1, 1, 4), a.subs1(2), a.bne('sumloop'),
         'sumdone:', g('FMOVS F0, ret+24(FP)', 'str s0, [sp, #32]')]
    return out + a.indent(s) + ['\tRET', '']


def body():
    return ([a.ldr_q(0, 0, 0), a.fcvtl_d(1, 0), a.fcvtl2_d(2, 0)] + lanes(1, [3, 4, 5, 6, 7]) +
            lanes(2, [8, 9, 10, 11, 12]) + [fcvtn_s(0, 1), fcvtn2_s(0, 2),
                                           a.str_q(0, 0, 0)])


def build():
    u = kerngen.Unit('scripts/gen-exp-arm64.py')
    out = [a.header('scripts/gen-exp-arm64.py').rstrip('\n'), '', 'TEXT ·expfNEON(SB), NOSPLIT, $0-16']
    s = [a.go('MOVD x+0(FP), R0', 'ldr x0, [sp, #8]'), a.go('MOVD n+8(FP), R1', 'ldr x1, [sp, #16]'),
         a.go('LSR $2, R1', 'lsr x1, x1, #2'), a.cbz(1, 'done'),
         a.go('MOVD $·exp2fTab(SB), R5', 'adr x5, exp2fTab'), a.go('MOVD $expNEONConsts<>(SB), R4', 'adr x4, consts')]
    s += [a.ldr_q(C[name], 4, 16 * i) for i, (name, _) in enumerate(CONSTS)]
    s += ['loop:'] + body() + [a.addi(0, 0, 16), a.subs1(1), a.bne('loop')]
    out += a.indent(s) + ['done:', '\tRET', '']
    out += scan() + ssum()
    out += ['DATA negInfNEON<>+0(SB)/4, $0xff800000', 'GLOBL negInfNEON<>(SB), RODATA|NOPTR, $4']
    for i, (name, bits) in enumerate(CONSTS):
        for lane in range(2):
            out.append(f'DATA expNEONConsts<>+{16 * i + 8 * lane}(SB)/8, ${bits:#018x} // {name}')
    out.append(f'GLOBL expNEONConsts<>(SB), RODATA|NOPTR, ${16 * len(CONSTS)}')
    u.text('\n'.join(out))
    u.declare('expfNEON', 'expf', 'softmax')
    u.declare('softmaxScanNEON', 'softmaxScan', 'softmax')
    u.declare('softmaxSumNEON', 'softmaxSum', 'softmax')
    return u


def mca():
    kerngen.mca_loop('expfNEON exp rows=1 values=4', body(), ['add x0, x0, #16', 'subs x1, x1, #1', 'b.ne 1b'])


if __name__ == '__main__':
    kerngen.run(build, mca)
