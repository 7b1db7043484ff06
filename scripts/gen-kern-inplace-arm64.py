#!/usr/bin/env python3
"""Writes compute/kern_inplace_arm64.s: the arm64 kernels that read weights
in place (as stored in the file: no panels), for MXFP4 (NEON, and SDOT
where the CPU has dotprod).

Run from the repository root: python3 scripts/gen-kern-inplace-arm64.py > compute/kern_inplace_arm64.s
"""
import sys

sys.dont_write_bytecode = True
import arm64asm as a  # noqa: E402
import kerngen  # noqa: E402

# The assembly's documentation (scripts/gen-kern-inplace-arm64.py points here):
#
# MXFP4 rows read in place (17-byte blocks: e8m0 scale, qs[16]) against
# Q8_0 activation blocks on arm64, one activation row, output r at 4r
# (four weight rows a step, then one at a time):
# per block sumi = Σ kvalues_mxfp4[nibble]·q exact (TBL, then SDOT or
# SMULL/SMLAL into 16-bit lanes), acc = fma(float(sumi), e8m0Half(e)·d_x,
# acc) in the blocks' order (vecDotMXFP4's, the panel kernels'):
# e8m0Half(e) is 0x00200000 << e as float bits for e < 2, else
# (e − 1) << 23.
#
# Every instruction carries its GNU spelling ("// gnu: ..."; see
# scripts/arm64asm.py).
DATA = a.MXFP4_TABLE


def row_block(k, p, neon):
    # One block of weight row k (at x p) against the activations (v24, v25;
    # d_x in v28): quants v5k, values v5k+1 (low nibbles) and v5k+2 (high),
    # sumi in v5k+3, the scale (e in w19+k) in v20+k, acc in v5k+4.
    q, e = 5 * k, 19 + k
    s = [a.go(f'MOVBU.P 1(R{p}), R{e}', f'ldrb w{e}, [x{p}], #1'), a.ldr_q_post(q, p, 16),
         a.and16(q + 1, q, 30), a.ushr_b(q + 2, q, 4), a.tbl(q + 1, 26, q + 1), a.tbl(q + 2, 26, q + 2)]
    s += a.dot32(q + 3, q + 1, q + 2, 24, 25, neon)
    s += [a.addv_s(q + 3, q + 3), a.scvtf_ss(q + 3, q + 3),
          a.go(f'SUBW $1, R{e}, R23', f'sub w23, w{e}, #1'), a.go('LSLW $23, R23, R23', 'lsl w23, w23, #23'),
          a.go(f'LSLW R{e}, R16, R24', f'lsl w24, w16, w{e}'), a.go(f'CMPW $2, R{e}', f'cmp w{e}, #2'),
          a.go('CSELW LO, R24, R23, R23', 'csel w23, w24, w23, lo'), a.go(f'FMOVS R23, F{20 + k}', f'fmov s{20 + k}, w23'),
          a.fmul_ss(20 + k, 20 + k, 28), a.fmadd_s(q + 4, q + 3, 20 + k, q + 4)]
    return s


def mxfp4_rows_kernel(name, neon):
    # Four weight rows at a time (x12..x15, row stride x17 = nb·17:
    # independent FMA chains), then one at a time.
    act = [a.ldr_s_post(28, 7, 8), a.ld1(24, 2, 7)]
    out = a.prologue(name, 'blockQ8_0')
    body = [a.go('MOVD $mxfp4tab<>(SB), R17', 'adr x17, mxfp4tab'), a.ldr_q(26, 17, 0), a.movi_b(30, 0x0f),
            a.go('MOVW $0x00200000, R16', 'mov w16, #0x200000')] + a.muli(17, 6, 17, 17) + [a.cbz(5, 'done')]
    body += ['quad:', a.cmpi(5, 4), a.blt('single')] + [a.movi_b(5 * k + 4, 0) for k in range(4)]
    body += [a.mov(12, 0), a.add(13, 12, 17), a.add(14, 13, 17), a.add(15, 14, 17), a.mov(7, 1), a.mov(11, 6),
             'qblock:'] + act
    for k in range(4):
        body += row_block(k, 12 + k, neon)
    body += [a.subs1(11), a.bne('qblock')] + [a.str_s_post(5 * k + 4, 3, 4) for k in range(4)]
    body += [a.mov(0, 15), a.subsi(5, 4), a.b('quad')]
    body += ['single:', a.cbz(5, 'done'), a.movi_b(4, 0), a.mov(7, 1), a.mov(11, 6), 'sblock:'] + act
    body += row_block(0, 0, neon) + [a.subs1(11), a.bne('sblock'), a.str_s_post(4, 3, 4), a.subs1(5), a.b('single')]
    return '\n'.join(out + a.indent(body) + ['done:', '\tRET', ''])


def build():
    u = kerngen.Unit('scripts/gen-kern-inplace-arm64.py')
    u.text(a.header('scripts/gen-kern-inplace-arm64.py', DATA))
    for level, neon in (('DotProd', False), ('NEON', True)):
        u.kernel(f'mxfp4InPlaceX1{level}', 'Q8_0', 'MXFP4', mxfp4_rows_kernel(f'mxfp4InPlaceX1{level}', neon))
    # MXFP4 rows as stored. The K-quant, Q6_K and Q8_0 kernels read rows as
    # stored anyway; Q4_0 and IQ4_NL tensors read in place run their Go dot
    # products.
    for level in ('NEON', 'DotProd'):
        u.set(f'mxfp4InPlace{level}', 'MXFP4', 'Q8_0', level, f'mxfp4InPlaceX1{level}', table='inplace')
    return u


if __name__ == '__main__':
    kerngen.run(build)
