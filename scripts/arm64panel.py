"""The arm64 panel kernels of the 32-value block types read in Q4_0's
panels (pack.go's packQ4_0: per block eight f16 scales, then four chunks of
four bytes of each row): Q4_0, and IQ4_NL through a table. Shared by
scripts/gen-kern-q-arm64.py and scripts/gen-kern-iq4-arm64.py.

Per row acc = fma(float(sumi_b), d_w·d_x, acc) over the blocks in order,
sumi_b = corr_b + Σ_j v_j·q_j exact (v the nibble, or its table entry).
DotProd: SDOT by element (chunk c of the panel block, four bytes of each of
four rows, against activation bytes 4c..4c+3). NEON (nibbles only): SMLAL
into 16-bit lanes, then pairwise adds.
"""
import arm64asm as a

MASK = 31  # v31: 0x0f bytes


def q4_0_load(table, bf16=False):
    # The panel block at x0 (144 bytes): f16 scales to v17 (rows 0-3) and
    # v18 (rows 4-7) as f32; low nibbles of chunk c in v8+2c (rows 0-3) and
    # v9+2c (rows 4-7), high nibbles in v2c and v2c+1. With table (a
    # 16-byte symbol, whose address x17 holds), each nibble is replaced by
    # its entry (TBL; v31 holds the table, the mask is set again each block).
    # With bf16 the scales are bf16 (MXFP4's panels), widened by SHLL.
    cvt = [a.shll_s(17, 16), a.shll2_s(18, 16)] if bf16 else [a.fcvtl(17, 16), a.fcvtl2(18, 16)]
    s = [a.ldr_q_post(16, 0, 16), a.ld1(0, 4, 0), a.ld1(4, 4, 0)] + cvt
    if table:
        s.append(a.movi_b(MASK, 0x0f))
    s += [a.and16(8 + i, i, MASK) for i in range(8)]
    s += [a.ushr_b(i, i, 4) for i in range(8)]
    if table:
        s.append(a.ldr_q(MASK, 17, 0))
        s += [a.tbl(i, MASK, i) for i in range(16)]
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


def q4_0_dot_neon_wide(j):
    # As q4_0_dot_neon for weights up to 128 in magnitude (IQ4_NL's table
    # values): each 16-bit product (SMULL, |w·x| <= 128·128) added at once
    # by SADALP into int32 lanes v25/v26 (rows 0-1/2-3) and v27/v28 (rows
    # 4-5/6-7), through v30; then ADDP gives one int32 per row.
    assert j == 0
    s = q4_0_act(j)
    h = [25, 26, 27, 28]
    g, t = 29, 30
    first = True
    for src, base in ((A0, 8), (A1, 0)):
        for c in range(4):
            s.append(a.dup_s(g, src, c))
            lo, hi = base + 2 * c, base + 2 * c + 1
            for acc, mul, w in ((h[0], a.smull, lo), (h[1], a.smull2, lo), (h[2], a.smull, hi), (h[3], a.smull2, hi)):
                s += [mul(t, w, g), a.saddlp(acc, t) if first else a.sadalp(acc, t)]
            first = False
    s += [a.addp_s(h[0], h[0], h[1]), a.addp_s(h[2], h[2], h[3]), a.add_s(I0, I0, h[0]), a.add_s(I1, I1, h[2])]
    return s + q4_0_finish(j)


def act_pointers(rows):
    # x7 = x1 (activation row 0), x8.. the next rows at stride x2.
    s = [a.mov(7, 1)]
    for j in range(1, rows):
        s.append(a.add(ACTP[j], ACTP[j - 1], 2))
    return s


def q4_0_kernel(name, rows, dot, table=None, bf16=False):
    """A panel kernel for rows activation rows (1 or 4); dot is
    q4_0_dot_sdot or (one row) q4_0_dot_neon; table and bf16 as
    q4_0_load's."""
    out = a.prologue(name, 'blockQ8_0')
    body = [a.movi_b(MASK, 0x0f), a.cbz(5, 'done')]
    if table:
        body.insert(0, a.go(f'MOVD ${table}(SB), R17', 'adr x17, table'))
    body.append('panel:')
    for j in range(rows):
        body += [a.movi_b(f, 0) for f in acc(j)]
    body += act_pointers(rows) + [a.mov(11, 6)]
    body.append('block:')
    body += q4_0_load(table, bf16)
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
