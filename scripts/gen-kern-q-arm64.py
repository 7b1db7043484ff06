#!/usr/bin/env python3
"""Writes compute/kern_q_arm64.s: the Q4_0 panel kernels and the Q8_0 row
kernels for arm64 (NEON, and SDOT where the CPU has dotprod).

Run from the repository root: python3 scripts/gen-kern-q-arm64.py > compute/kern_q_arm64.s
"""
import sys

sys.dont_write_bytecode = True
import arm64asm as a  # noqa: E402
import arm64lanes  # noqa: E402

WHAT = '''// Kernels for Q4_0 and Q8_0 weights against Q8_0 activation blocks on
// arm64 (blockQ8_0: d f32 at 0, corr i32 at 4, qs at 8; 40 bytes), the
// arm64 counterparts of kern_q_amd64.s with the same signature
//
//	func k(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)
//
// and the same float operations per output, so that their results equal
// the Go reference's and the amd64 kernels' bit for bit:
//
// Q4_0 (q4_0x*): np panels of eight rows (pack.go's packQ4_0), output r of
// panel p at 4·(8p + r); per row acc = fma(float(sumi_b), d_w·d_x, acc)
// over the blocks in order, sumi_b = corr_b + Σ_j u_j·q_j exact (u the
// unsigned nibble, corr_b = −8·Σq). DotProd: SDOT by element (chunk c of
// the panel block, four bytes of each of four rows, against activation
// bytes 4c..4c+3). NEON: SMLAL into 16-bit lanes (at most eight products of
// 15·127 each), then pairwise adds.
//
// Q8_0 (q8_0*): np rows as stored (34-byte blocks), output r at 4r; per
// block eight int32 lanes (lane l sums quants 4l..4l+3: one SDOT per sixteen
// bytes, or SMULL, ADDP and SADDLP) times d_w·d_x added by FMA into eight
// float lanes, summed at the end upper half onto lower, then pairs
// (ggml_vec_dot_q8_0_q8_0's x86 order). The x1 kernels take four weight
// rows at a time (independent accumulator chains), then single rows.
//
// Every instruction carries its GNU spelling ("// gnu: ..."): Go's
// assembler lacks most of these, so they are WORDs (scripts/arm64asm.py).'''

MASK = 31  # v31: 0x0f bytes


def q4_0_load():
    # The panel block at x0 (144 bytes): f16 scales to v17 (rows 0-3) and
    # v18 (rows 4-7) as f32; low nibbles of chunk c in v8+2c (rows 0-3) and
    # v9+2c (rows 4-7), high nibbles in v2c and v2c+1.
    s = [a.ldr_q_post(16, 0, 16), a.ld1(0, 4, 0), a.ld1(4, 4, 0), a.fcvtl(17, 16), a.fcvtl2(18, 16)]
    s += [a.and16(8 + i, i, MASK) for i in range(8)]
    s += [a.ushr_b(i, i, 4) for i in range(8)]
    return s


# Per activation row of the Q4_0 kernels: activations v19 (qs 0..15), v20
# (qs 16..31), d_x v21, integer sums v22 (rows 0-3) and v16 (rows 4-7);
# float accumulators v23+2j, v24+2j for activation row j.
A0, A1, DX, I0, I1 = 19, 20, 21, 22, 16
ACTP = [7, 8, 9, 10]  # activation row pointers


def acc(j):
    return 23 + 2 * j, 24 + 2 * j


def q4_0_finish(j):
    # sumi to float, d_w·d_x, one FMA per row.
    f0, f1 = acc(j)
    return [a.scvtf(I0, I0), a.scvtf(I1, I1), a.fmul(A0, 17, DX), a.fmul(A1, 18, DX),
            a.fmla(f0, I0, A0), a.fmla(f1, I1, A1)]


def q4_0_act(j):
    # d_x to every lane of v21, corr to v22 and v16, qs to v19, v20.
    p = ACTP[j]
    return [a.ld1r_s(DX, p), a.ld1r_s(I0, p), a.ld1(A0, 2, p), a.mov16(I1, I0)]


def q4_0_dot_sdot(j):
    s = q4_0_act(j)
    for c in range(4):
        s += [a.sdot_el(I0, 8 + 2 * c, A0, c), a.sdot_el(I1, 9 + 2 * c, A0, c),
              a.sdot_el(I0, 2 * c, A1, c), a.sdot_el(I1, 2 * c + 1, A1, c)]
    return s + q4_0_finish(j)


def q4_0_dot_neon(j):
    # 16-bit products accumulated by SMLAL: v25/v26 rows 0-1/2-3, v27/v28
    # rows 4-5/6-7 (each halfword at most eight products of 15·127), the
    # activation group broadcast in v29; then ADDP and SADDLP give one
    # int32 per row, added to corr.
    assert j == 0
    s = q4_0_act(j)
    h = [25, 26, 27, 28]
    g = 29
    first = True
    for src, base in ((A0, 8), (A1, 0)):
        for c in range(4):
            s.append(a.dup_s(g, src, c))
            lo, hi = base + 2 * c, base + 2 * c + 1
            if first:
                s += [a.smull(h[0], lo, g), a.smull2(h[1], lo, g), a.smull(h[2], hi, g), a.smull2(h[3], hi, g)]
                first = False
            else:
                s += [a.smlal(h[0], lo, g), a.smlal2(h[1], lo, g), a.smlal(h[2], hi, g), a.smlal2(h[3], hi, g)]
    s += [a.addp_h(h[0], h[0], h[1]), a.addp_h(h[2], h[2], h[3]), a.saddlp(h[0], h[0]), a.saddlp(h[2], h[2]),
          a.add_s(I0, I0, h[0]), a.add_s(I1, I1, h[2])]
    return s + q4_0_finish(j)


def act_pointers(rows):
    # x7 = x1 (activation row 0), x8.. the next rows at stride x2.
    s = [a.mov(7, 1)]
    for j in range(1, rows):
        s.append(a.add(ACTP[j], ACTP[j - 1], 2))
    return s


def q4_0_kernel(name, rows, dot):
    out = a.prologue(name, 'blockQ8_0')
    body = [a.movi_b(MASK, 0x0f), a.cbz(5, 'done')]
    body.append('panel:')
    for j in range(rows):
        body += [a.movi_b(f, 0) for f in acc(j)]
    body += act_pointers(rows) + [a.mov(11, 6)]
    body.append('block:')
    body += q4_0_load()
    for j in range(rows):
        body += dot(j)
    body += [a.subs1(11), a.bne('block')]
    body.append(a.mov(12, 3))
    for j in range(rows):
        body.append(a.stp_q(*acc(j), 12))
        if j < rows - 1:
            body.append(a.add(12, 12, 4))
    body += [a.addi(3, 3, 32), a.subs1(5), a.bne('panel')]
    out += a.indent(body)
    return '\n'.join(out + ['done:', '\tRET', ''])


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


def main():
    print(a.header('scripts/gen-kern-q-arm64.py', WHAT))
    for rows in (1, 4):
        print(q4_0_kernel(f'q4_0x{rows}DotProd', rows, q4_0_dot_sdot))
    print(q4_0_kernel('q4_0x1NEON', 1, q4_0_dot_neon))
    print(arm64lanes.rows_kernel('q8_0x1DotProd', arm64lanes.TYPES['q8_0'], 'blockQ8_0', False))
    print(q8_0_x4_kernel('q8_0x4DotProd', False))
    print(arm64lanes.rows_kernel('q8_0x1NEON', arm64lanes.TYPES['q8_0'], 'blockQ8_0', True))
    print(q8_0_x4_kernel('q8_0x4NEON', True))


if __name__ == '__main__':
    main()
