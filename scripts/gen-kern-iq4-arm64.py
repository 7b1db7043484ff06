#!/usr/bin/env python3
"""Writes compute/kern_iq4_arm64.s: the IQ4_NL panel kernels for arm64
(SDOT; Q4_0's panels with each nibble looked up in kvalues_iq4nl).

Run from the repository root: python3 scripts/gen-kern-iq4-arm64.py > compute/kern_iq4_arm64.s
"""
import sys

sys.dont_write_bytecode = True
import arm64asm as a  # noqa: E402
import arm64panel as panel  # noqa: E402

WHAT = '''// IQ4_NL panel kernels against Q8_0 activation blocks on arm64, with the
// signature and panels of kern_q_arm64.s's Q4_0 kernels (IQ4_NL shares
// Q4_0's block layout): each nibble is replaced by its signed kvalues_iq4nl
// entry (TBL), corr is 0, and per row acc = fma(float(sumi_b), d_w·d_x,
// acc) over the blocks in order (the repacked iq4_nl_8x8 gemv's order, as
// vecDotIQ4NL).
//
// Every instruction carries its GNU spelling ("// gnu: ..."; see
// scripts/arm64asm.py).

// kvalues_iq4nl as bytes.
DATA iq4nl<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4nl<>+8(SB)/8, $0x7159453526190d01
GLOBL iq4nl<>(SB), RODATA|NOPTR, $16'''


def main():
    print(a.header('scripts/gen-kern-iq4-arm64.py', WHAT))
    for rows in (1, 4):
        print(panel.q4_0_kernel(f'iq4_nlX{rows}DotProd', rows, panel.q4_0_dot_sdot, table='iq4nl<>'))


if __name__ == '__main__':
    main()
