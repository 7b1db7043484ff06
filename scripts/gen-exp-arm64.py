#!/usr/bin/env python3
"""Writes compute/exp_arm64.s: Expf (glibc's expf, see compute/expf.go) four
values at a time for NEON, the arm64 counterpart of exp_amd64.s's expfAVX2.

Run from the repository root: python3 scripts/gen-exp-arm64.py > compute/exp_arm64.s
With --mca it prints the loop in GNU syntax for bench/arm64-mca.sh.
"""
import sys

sys.dont_write_bytecode = True
import arm64asm as a  # noqa: E402
from arm64enc import three, two, word  # noqa: E402

WHAT = '''// func expfNEON(x *float32, n int)
// x[i] = Expf(x[i]) for n values (a multiple of 4), as expfAVX2: in float64
// lanes (two to a register, FCVTL/FCVTL2), each clamped to [−104, 89]
// (where the formula gives glibc's 0 and +Inf; FMAX/FMIN keep a NaN a
// NaN), z = x·32/ln2, k its nearest integer (by adding 1.5·2^52), r = z −
// k, s = 2^(k/32) from the 32-entry exp2fTab (one load per lane, through
// a general register) and the exponent bits k<<47, y = s·((C0·r + C1)·r²
// + (C2·r + 1)) with Expf's fused multiply-adds (FMLA .2d), rounded to
// float32 by FCVTN/FCVTN2. Bit for bit Expf (TestExp).
//
// Every instruction carries its GNU spelling ("// gnu: ..."; see
// scripts/arm64asm.py).'''


def fmul_d(d, n, m):
    return word(three(0x6E60DC00, d, n, m), f'fmul v{d}.2d, v{n}.2d, v{m}.2d')


def fadd_d(d, n, m):
    return word(three(0x4E60D400, d, n, m), f'fadd v{d}.2d, v{n}.2d, v{m}.2d')


def fsub_d(d, n, m):
    return word(three(0x4EE0D400, d, n, m), f'fsub v{d}.2d, v{n}.2d, v{m}.2d')


def fmla_d(d, n, m):
    return word(three(0x4E60CC00, d, n, m), f'fmla v{d}.2d, v{n}.2d, v{m}.2d')


def fmax_d(d, n, m):
    return word(three(0x4E60F400, d, n, m), f'fmax v{d}.2d, v{n}.2d, v{m}.2d')


def fmin_d(d, n, m):
    return word(three(0x4EE0F400, d, n, m), f'fmin v{d}.2d, v{n}.2d, v{m}.2d')


def add_d(d, n, m):
    return word(three(0x4EE08400, d, n, m), f'add v{d}.2d, v{n}.2d, v{m}.2d')


def shl_d(d, n, sh):
    return word(two(0x4F005400 | (64 + sh) << 16, d, n), f'shl v{d}.2d, v{n}.2d, #{sh}')


def fcvtn_s(d, n):
    return word(two(0x0E616800, d, n), f'fcvtn v{d}.2s, v{n}.2d')


def fcvtn2_s(d, n):
    return word(two(0x4E616800, d, n), f'fcvtn2 v{d}.4s, v{n}.2d')


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


def body():
    return ([a.ldr_q(0, 0, 0), a.fcvtl_d(1, 0), a.fcvtl2_d(2, 0)] + lanes(1, [3, 4, 5, 6, 7]) +
            lanes(2, [8, 9, 10, 11, 12]) + [fcvtn_s(0, 1), fcvtn2_s(0, 2),
                                           a.str_q(0, 0, 0)])


def main():
    if sys.argv[1:] == ['--mca']:
        print('# kernel expfNEON exp rows=1 values=4')
        print('\n'.join(['1:'] + [i.gnu for i in body()] + ['add x0, x0, #16', 'subs x1, x1, #1', 'b.ne 1b']))
        return
    out = [a.header('scripts/gen-exp-arm64.py', WHAT).rstrip('\n'), '', 'TEXT ·expfNEON(SB), NOSPLIT, $0-16']
    s = [a.go('MOVD x+0(FP), R0', 'ldr x0, [sp, #8]'), a.go('MOVD n+8(FP), R1', 'ldr x1, [sp, #16]'),
         a.go('LSR $2, R1', 'lsr x1, x1, #2'), a.cbz(1, 'done'),
         a.go('MOVD $·exp2fTab(SB), R5', 'adr x5, exp2fTab'), a.go('MOVD $expNEONConsts<>(SB), R4', 'adr x4, consts')]
    s += [a.ldr_q(C[name], 4, 16 * i) for i, (name, _) in enumerate(CONSTS)]
    s += ['loop:'] + body() + [a.addi(0, 0, 16), a.subs1(1), a.bne('loop')]
    out += a.indent(s) + ['done:', '\tRET', '']
    for i, (name, bits) in enumerate(CONSTS):
        for lane in range(2):
            out.append(f'DATA expNEONConsts<>+{16 * i + 8 * lane}(SB)/8, ${bits:#018x} // {name}')
    out.append(f'GLOBL expNEONConsts<>(SB), RODATA|NOPTR, ${16 * len(CONSTS)}')
    print('\n'.join(out))


if __name__ == '__main__':
    main()
