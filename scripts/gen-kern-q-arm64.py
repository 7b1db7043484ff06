#!/usr/bin/env python3
"""Writes compute/kern_q_arm64.s: the Q4_0 panel kernels and the Q8_0 row
kernels for arm64 (NEON, and SDOT where the CPU has dotprod).

Run from the repository root: python3 scripts/gen-kern-q-arm64.py > compute/kern_q_arm64.s
"""
import sys

sys.dont_write_bytecode = True
import arm64asm as a  # noqa: E402
import kerngen  # noqa: E402
import arm64lanes  # noqa: E402
import arm64panel  # noqa: E402

# The assembly's documentation (scripts/gen-kern-q-arm64.py points here):
#
# Kernels for Q4_0 and Q8_0 weights against Q8_0 activation blocks on
# arm64 (blockQ8_0: d f32 at 0, corr i32 at 4, qs at 8; 40 bytes), the
# arm64 counterparts of kern_q_amd64.s with the same signature
#
#     func k(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)
#
# and the same float operations per output, so that their results equal
# the Go reference's and the amd64 kernels' bit for bit:
#
# Q4_0 (q4_0x*): np panels of eight rows (pack.go's packQ4_0), output r of
# panel p at 4·(8p + r); per row acc = fma(float(sumi_b), d_w·d_x, acc)
# over the blocks in order, sumi_b = corr_b + Σ_j u_j·q_j exact (u the
# unsigned nibble, corr_b = −8·Σq). DotProd: SDOT by element (chunk c of
# the panel block, four bytes of each of four rows, against activation
# bytes 4c..4c+3). NEON: SMLAL into 16-bit lanes (at most eight products of
# 15·127 each), then pairwise adds.
#
# Q8_0 (q8_0*): np rows as stored (34-byte blocks), output r at 4r; per
# block eight int32 lanes (lane l sums quants 4l..4l+3: one SDOT per sixteen
# bytes, or SMULL, ADDP and SADDLP) times d_w·d_x added by FMA into eight
# float lanes, summed at the end upper half onto lower, then pairs
# (ggml_vec_dot_q8_0_q8_0's x86 order). The x1 kernels take four weight
# rows at a time (independent accumulator chains), then single rows.
#
# Every instruction carries its GNU spelling ("// gnu: ..."): Go's
# assembler lacks most of these, so they are WORDs (scripts/arm64asm.py).

ACTP = arm64panel.ACTP
act_pointers = arm64panel.act_pointers


# Q8_0 rows: the x1 kernels are arm64lanes.py's; the x4 kernels take four
# activation rows against one weight row at a time.

def q8_0_x4_kernel(name, neon):
    # Four activation rows (x7..x10), one weight row at a time. Weights v0,
    # v1, d_w v2; per activation row j: activations v3+7j, v4+7j, scale
    # v5+7j, lane sums v6+7j, v7+7j, accumulators v8+7j, v9+7j.
    out = a.prologue(name, 'blockQ8_0')
    body = [a.cbz(5, 'done')]
    body.append('row:')
    for j in range(4):
        body += [a.movi_b(8 + 7 * j, 0), a.movi_b(9 + 7 * j, 0)]
    body += act_pointers(4) + [a.mov(11, 6)]
    body.append('block:')
    body += [a.ldr_h_post(2, 0, 2), a.ld1(0, 2, 0), a.fcvt_sh(2, 2)]
    for j in range(4):
        v = 3 + 7 * j
        body += [a.ldr_s_post(v + 2, ACTP[j], 8), a.ld1(v, 2, ACTP[j]), a.fmul_ss(v + 2, v + 2, 2)]
        # The weights are shared: dot16 clobbers the activations instead
        # (without dotprod), the products being the same.
        body += a.dot16(v + 3, v, 0, neon) + a.dot16(v + 4, v + 1, 1, neon)
        body += [a.scvtf(v + 3, v + 3), a.scvtf(v + 4, v + 4), a.fmla_el(v + 5, v + 3, v + 2, 0),
                 a.fmla_el(v + 6, v + 4, v + 2, 0)]
    body += [a.subs1(11), a.bne('block')]
    body.append(a.mov(12, 3))
    for j in range(4):
        body += a.hsum8(8 + 7 * j) + [a.str_s(8 + 7 * j, 12)]
        if j < 3:
            body.append(a.add(12, 12, 4))
    body += [a.addi(3, 3, 4), a.subs1(5), a.bne('row')]
    out += a.indent(body)
    return '\n'.join(out + ['done:', '\tRET', ''])


def build():
    u = kerngen.Unit('scripts/gen-kern-q-arm64.py')
    u.text(a.header('scripts/gen-kern-q-arm64.py'))
    for rows in (1, 4):
        u.kernel(f'q4_0x{rows}DotProd', 'Q8_0', 'Q4_0',
                 arm64panel.q4_0_kernel(f'q4_0x{rows}DotProd', rows, arm64panel.q4_0_dot_sdot))
    u.kernel('q4_0x1NEON', 'Q8_0', 'Q4_0', arm64panel.q4_0_kernel('q4_0x1NEON', 1, arm64panel.q4_0_dot_neon))
    u.kernel('q8_0x1DotProd', 'Q8_0', 'Q8_0',
             arm64lanes.rows_kernel('q8_0x1DotProd', arm64lanes.TYPES['q8_0'], 'blockQ8_0', False))
    u.kernel('q8_0x4DotProd', 'Q8_0', 'Q8_0', q8_0_x4_kernel('q8_0x4DotProd', False))
    u.kernel('q8_0x1NEON', 'Q8_0', 'Q8_0',
             arm64lanes.rows_kernel('q8_0x1NEON', arm64lanes.TYPES['q8_0'], 'blockQ8_0', True))
    u.kernel('q8_0x4NEON', 'Q8_0', 'Q8_0', q8_0_x4_kernel('q8_0x4NEON', True))
    u.set('q4_0NEON', 'Q4_0', 'Q8_0', 'NEON', 'q4_0x1NEON', pack='packQ4_0', panel=True, corr=-8)
    u.set('q4_0DotProd', 'Q4_0', 'Q8_0', 'DotProd', 'q4_0x1DotProd', 'q4_0x4DotProd',
          pack='packQ4_0', panel=True, corr=-8)
    u.set('q8_0NEON', 'Q8_0', 'Q8_0', 'NEON', 'q8_0x1NEON', 'q8_0x4NEON')
    u.set('q8_0DotProd', 'Q8_0', 'Q8_0', 'DotProd', 'q8_0x1DotProd', 'q8_0x4DotProd', doc=Q8_0_DOC)
    return u


Q8_0_DOC = """Q8_0 keeps ggml's vec_dot order (eight position lanes per row), as on
amd64 (Q8_0's AVX2 and VNNI kernels say why)."""


if __name__ == '__main__':
    kerngen.run(build)
