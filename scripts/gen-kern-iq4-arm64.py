#!/usr/bin/env python3
"""Writes compute/kern_iq4_arm64.s: the IQ4_NL panel kernels (SDOT; Q4_0's
panels with each nibble looked up in kvalues_iq4nl) and the IQ4_XS row
kernels (NEON and SDOT) for arm64.

Run from the repository root: python3 scripts/gen-kern-iq4-arm64.py > compute/kern_iq4_arm64.s
"""
import sys

sys.dont_write_bytecode = True
import arm64asm as a  # noqa: E402
import kerngen  # noqa: E402
import arm64panel as panel  # noqa: E402
import arm64rows as rows  # noqa: E402

# The assembly's documentation (scripts/gen-kern-iq4-arm64.py points here):
#
# IQ4_NL panel kernels against Q8_0 activation blocks on arm64 (SDOT, or
# without dotprod 16-bit products widened by SADALP), with the
# signature and panels of kern_q_arm64.s's Q4_0 kernels (IQ4_NL shares
# Q4_0's block layout): each nibble is replaced by its signed kvalues_iq4nl
# entry (TBL), corr is 0, and per row acc = fma(float(sumi_b), d_w·d_x,
# acc) over the blocks in order (the repacked iq4_nl_8x8 gemv's order, as
# vecDotIQ4NL).
#
# IQ4_XS (iq4_xsX1*): rows as stored against Q8_K activation blocks, one
# activation row; ggml_vec_dot_iq4_xs_q8_K's x86 lanes (vecDotIQ4XS).
#
# Every instruction carries its GNU spelling ("// gnu: ..."; see
# scripts/arm64asm.py).
KVALUES = kerngen.load('gen-kern-iq4.py').KVALUES
DATA = ('// kvalues_iq4nl as bytes.\n' + kerngen.data('iq4nl', kerngen.packed(KVALUES, 8)) + '\n' +
        "// kvalues_iq4nl, then the int16 shifts 0, −2, ..., −14 that bring each\n"
        "// IQ4_XS sub-block's two high scale bits down.\n" +
        kerngen.data('iq4xs', kerngen.packed(KVALUES, 8) + kerngen.packed(range(0, -16, -2), 16))).rstrip('\n')


def iq4_xs_kernel(name, neon):
    # IQ4_XS rows as stored (136-byte blocks: d f16, scales_h u16,
    # scales_l[4], qs[128]), one activation row (x7): vecDotIQ4XS's lanes.
    # Sub-block ib's scale ls − 32 (low four bits from scales_l by ZIP1 of
    # nibbles, high two from scales_h by USHL) as int32 in v24 (0-3) and v25
    # (4-7); its low nibbles (positions 0-15, lanes 0-3) and high (16-31,
    # lanes 4-7) looked up in kvalues (v26, TBL), dot16 against the
    # activations, added by MLA times ls into v20 and v21; acc_l =
    # fma(float(lane_l), d_w·d_x, acc_l) (v18, v19); hsum8 at the end.
    consts = [a.go('MOVD $iq4xs<>(SB), R17', 'adr x17, iq4xs'), a.ld1(26, 2, 17, post=False),
              a.movi_b(30, 0x0f), a.movi_b(29, 0x03), a.movi_b(23, 32)]
    block = [a.ldr_s(31, 0, 4), a.and16(22, 31, 30), a.ushr_b(31, 31, 4), a.zip1_b(22, 22, 31),
             a.addi(10, 0, 2), a.ld1r_h_noinc(16, 10), a.ushl_h(16, 16, 27), a.and16(16, 16, 29), a.xtn_b(16, 16),
             a.shl_b(16, 16, 4), a.orr16(22, 22, 16), a.sub_b(22, 22, 23), a.sxtl_h(22, 22),
             a.sxtl_s(24, 22), a.sxtl2_s(25, 22), a.addi(9, 7, 4), a.movi_b(20, 0), a.movi_b(21, 0)]
    for ib in range(8):
        block += [a.ldur_q(0, 0, 8 + 16 * ib), a.and16(2, 0, 30), a.ushr_b(3, 0, 4), a.tbl(2, 26, 2),
                  a.tbl(3, 26, 3), a.ld1(6, 2, 9)]
        for h in range(2):
            block += a.dot16(11 + h, 2 + h, 6 + h, neon) + [a.mla_s_el(20 + h, 11 + h, 24 + ib // 4, ib % 4)]
    return rows.rows_kernel(name, consts, rows.LANES_ZERO, block + rows.lanes_tail(0), 136, rows.LANES_FINISH)


def build():
    u = kerngen.Unit('scripts/gen-kern-iq4-arm64.py')
    u.text(a.header('scripts/gen-kern-iq4-arm64.py', DATA))
    for rows in (1, 4):
        u.kernel(f'iq4_nlX{rows}DotProd', 'Q8_0', 'IQ4_NL',
                 panel.q4_0_kernel(f'iq4_nlX{rows}DotProd', rows, panel.q4_0_dot_sdot, table='iq4nl<>'))
    u.kernel('iq4_nlX1NEON', 'Q8_0', 'IQ4_NL',
             panel.q4_0_kernel('iq4_nlX1NEON', 1, panel.q4_0_dot_neon_wide, table='iq4nl<>'))
    for level, neon in (('DotProd', False), ('NEON', True)):
        u.kernel(f'iq4_xsX1{level}', 'Q8_K', 'IQ4_XS', iq4_xs_kernel(f'iq4_xsX1{level}', neon))
    u.set('iq4_nlNEON', 'IQ4_NL', 'Q8_0', 'NEON', 'iq4_nlX1NEON', pack='packQ4_0', panel=True, doc=IQ4_NL_DOC)
    u.set('iq4_nlDotProd', 'IQ4_NL', 'Q8_0', 'DotProd', 'iq4_nlX1DotProd', 'iq4_nlX4DotProd',
          pack='packQ4_0', panel=True)
    u.set('iq4_xsNEON', 'IQ4_XS', 'Q8_K', 'NEON', 'iq4_xsX1NEON', doc='IQ4_XS rows are read as stored.')
    u.set('iq4_xsDotProd', 'IQ4_XS', 'Q8_K', 'DotProd', 'iq4_xsX1DotProd')
    return u


IQ4_NL_DOC = """IQ4_NL shares Q4_0's block layout, so its panels are Q4_0's; the table
values are signed, so no correction. Without dotprod each 16-bit product
is widened at once (Q4_0's 16-bit NEON sums would overflow on table
values)."""


if __name__ == '__main__':
    kerngen.run(build)
