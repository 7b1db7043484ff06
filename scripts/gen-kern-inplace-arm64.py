#!/usr/bin/env python3
"""Writes compute/kern_inplace_arm64.s: the arm64 kernels that read weights
in place (as stored in the file: no panels), for MXFP4 (NEON, and SDOT
where the CPU has dotprod).

Run from the repository root: python3 scripts/gen-kern-inplace-arm64.py > compute/kern_inplace_arm64.s
"""
import sys

sys.dont_write_bytecode = True
import arm64asm as a  # noqa: E402

WHAT = '''// MXFP4 rows read in place (17-byte blocks: e8m0 scale, qs[16]) against
// Q8_0 activation blocks on arm64, one activation row, output r at 4r:
// per block sumi = Σ kvalues_mxfp4[nibble]·q exact (TBL, then SDOT or
// SMULL/SMLAL into 16-bit lanes), acc = fma(float(sumi), e8m0Half(e)·d_x,
// acc) in the blocks' order (vecDotMXFP4's, the panel kernels'):
// e8m0Half(e) is 0x00200000 << e as float bits for e < 2, else
// (e − 1) << 23.
//
// Every instruction carries its GNU spelling ("// gnu: ..."; see
// scripts/arm64asm.py).

// kvalues_mxfp4 as bytes.
DATA mxfp4tab<>+0(SB)/8, $0x0c08060403020100
DATA mxfp4tab<>+8(SB)/8, $0xf4f8fafcfdfeff00
GLOBL mxfp4tab<>(SB), RODATA|NOPTR, $16'''


def mxfp4_rows_kernel(name, neon):
    out = a.prologue(name, 'blockQ8_0')
    body = [a.go('MOVD $mxfp4tab<>(SB), R17', 'adr x17, mxfp4tab'), a.ldr_q(26, 17, 0), a.movi_b(30, 0x0f),
            a.go('MOVW $0x00200000, R16', 'mov w16, #0x200000'), a.cbz(5, 'done'), 'row:',
            a.movi_b(18, 0), a.mov(7, 1), a.mov(11, 6), 'block:',
            a.go('MOVBU.P 1(R0), R12', 'ldrb w12, [x0], #1'), a.ldr_q_post(0, 0, 16),
            a.and16(2, 0, 30), a.ushr_b(3, 0, 4), a.tbl(2, 26, 2), a.tbl(3, 26, 3),
            a.ldr_s_post(28, 7, 8), a.ld1(6, 2, 7)]
    body += a.dot32(11, 2, 3, 6, 7, neon)
    body += [a.addv_s(11, 11), a.scvtf_ss(11, 11),
             a.go('SUBW $1, R12, R13', 'sub w13, w12, #1'), a.go('LSLW $23, R13, R13', 'lsl w13, w13, #23'),
             a.go('LSLW R12, R16, R14', 'lsl w14, w16, w12'), a.go('CMPW $2, R12', 'cmp w12, #2'),
             a.go('CSELW LO, R14, R13, R13', 'csel w13, w14, w13, lo'), a.go('FMOVS R13, F29', 'fmov s29, w13'),
             a.fmul_ss(29, 29, 28), a.fmadd_s(18, 11, 29, 18), a.subs1(11), a.bne('block'),
             a.str_s_post(18, 3, 4), a.subs1(5), a.bne('row')]
    return '\n'.join(out + a.indent(body) + ['done:', '\tRET', ''])


def main():
    print(a.header('scripts/gen-kern-inplace-arm64.py', WHAT))
    for level, neon in (('DotProd', False), ('NEON', True)):
        print(mxfp4_rows_kernel(f'mxfp4InPlaceX1{level}', neon))


if __name__ == '__main__':
    main()
