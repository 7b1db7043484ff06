#!/usr/bin/env python3
"""Writes compute/kern_mxfp4_arm64.s: the MXFP4 panel kernels for arm64
(NEON, and SDOT where the CPU has dotprod).

Run from the repository root: python3 scripts/gen-kern-mxfp4-arm64.py > compute/kern_mxfp4_arm64.s
"""
import sys

sys.dont_write_bytecode = True
import arm64asm as a  # noqa: E402
import kerngen  # noqa: E402
import arm64panel as panel  # noqa: E402

# The assembly's documentation (scripts/gen-kern-mxfp4-arm64.py points here):
#
# MXFP4 panel kernels against Q8_0 activation blocks on arm64, with the
# signature and the panel arithmetic of kern_q_arm64.s's Q4_0 kernels, on
# packMXFP4's panels (the eight rows' scales 2^(e−128) as bf16, widened
# exactly by SHLL, then Q4_0's chunks): each nibble is replaced by its
# signed kvalues_mxfp4 entry (TBL), corr is 0, and per row acc =
# fma(float(sumi_b), d_w·d_x, acc) over the blocks in order (the repacked
# mxfp4_8x8 gemv's order, as vecDotMXFP4). Without dotprod the 16-bit
# SMLAL sums of Q4_0's NEON kernel hold (eight products of at most 12·128).
#
# Every instruction carries its GNU spelling ("// gnu: ..."; see
# scripts/arm64asm.py).
DATA = a.MXFP4_TABLE


def build():
    u = kerngen.Unit('scripts/gen-kern-mxfp4-arm64.py')
    u.text(a.header('scripts/gen-kern-mxfp4-arm64.py', DATA))
    for rows in (1, 4):
        u.kernel(f'mxfp4X{rows}DotProd', 'Q8_0', 'MXFP4',
                 panel.q4_0_kernel(f'mxfp4X{rows}DotProd', rows, panel.q4_0_dot_sdot, table='mxfp4tab<>', bf16=True))
    u.kernel('mxfp4X1NEON', 'Q8_0', 'MXFP4',
             panel.q4_0_kernel('mxfp4X1NEON', 1, panel.q4_0_dot_neon, table='mxfp4tab<>', bf16=True))
    u.set('mxfp4NEON', 'MXFP4', 'Q8_0', 'NEON', 'mxfp4X1NEON', pack='packMXFP4', panel=True,
          doc="MXFP4 reads packMXFP4's panels; the table values are signed, so no\ncorrection.")
    u.set('mxfp4DotProd', 'MXFP4', 'Q8_0', 'DotProd', 'mxfp4X1DotProd', 'mxfp4X4DotProd',
          pack='packMXFP4', panel=True)
    return u


if __name__ == '__main__':
    kerngen.run(build)
