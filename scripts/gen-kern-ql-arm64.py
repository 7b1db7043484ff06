#!/usr/bin/env python3
"""Writes compute/kern_ql_arm64.s: the Q5_0, Q4_1 and Q5_1 row kernels for
arm64 (NEON, and SDOT where the CPU has dotprod).

Run from the repository root: python3 scripts/gen-kern-ql-arm64.py > compute/kern_ql_arm64.s
"""
import sys

sys.dont_write_bytecode = True
import arm64asm as a  # noqa: E402
import kerngen  # noqa: E402
import arm64lanes as lanes  # noqa: E402

# The assembly's documentation (scripts/gen-kern-ql-arm64.py points here):
#
# Kernels for Q5_0 (against Q8_0 activation blocks), Q4_1 and Q5_1
# (against Q8_1: d f32 at 0, s f32 at 4, qs at 8; 40 bytes) on arm64, with
# the signature of kern_ql_amd64.s's, for one activation row: np weight
# rows as stored, output r at 4r, two rows a step (independent chains).
# ggml_vec_dot_q{5_0,4_1,5_1}'s x86 lanes, as vecDotQ5_0/Q4_1/Q5_1: per
# block eight int32 lanes (lane l sums the products at positions
# 4l..4l+3) times d_w·d_x added by FMA into eight float lanes, hsum8 at
# the end; Q4_1 and Q5_1 add m_w·s_x by FMA into a scalar added after.
# The fifth bits are spread to bytes by TBL (the byte of qh holding each
# quant's bit) and CMTST (its bit), from q5tab.
#
# Every instruction carries its GNU spelling ("// gnu: ..."; see
# scripts/arm64asm.py).


def build():
    u = kerngen.Unit('scripts/gen-kern-ql-arm64.py')
    u.text(a.header('scripts/gen-kern-ql-arm64.py'))
    u.text(lanes.Q5_TABLE)
    for level, neon in (('DotProd', False), ('NEON', True)):
        for t, acts in (('q5_0', 'Q8_0'), ('q4_1', 'Q8_1'), ('q5_1', 'Q8_1')):
            name = f'{t}x1{level}'
            u.kernel(name, acts, t.upper(), lanes.rows_kernel(name, lanes.TYPES[t], f'block{acts}', neon))
    # Rows as stored, one activation row at a time.
    for t, acts in (('q5_0', 'Q8_0'), ('q4_1', 'Q8_1'), ('q5_1', 'Q8_1')):
        for level in ('NEON', 'DotProd'):
            u.set(f'{t}{level}', t.upper(), acts, level, f'{t}x1{level}')
    return u


if __name__ == '__main__':
    kerngen.run(build)
