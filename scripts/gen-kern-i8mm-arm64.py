#!/usr/bin/env python3
"""Writes compute/kern_i8mm_arm64.s: the arm64 kernels that use SMMLA (i8mm,
ARMv8.6) for several activation rows at once.

Run from the repository root: python3 scripts/gen-kern-i8mm-arm64.py > compute/kern_i8mm_arm64.s
"""
import sys

sys.dont_write_bytecode = True
import arm64asm as a  # noqa: E402
import kerngen  # noqa: E402
import arm64rows as rows  # noqa: E402

# The assembly's documentation (scripts/gen-kern-i8mm-arm64.py points here):
#
# Kernels for i8mm (SMMLA) on arm64, with the signature of the other
# kernels
#
#     func k(w *byte, x *blockQ8_K, xs int, out *float32, os int, np, nb int)
#
# x is not four blockQ8_K rows but one group of four activation rows laid
# out by interleaveQ8_K (kern_i8mm_arm64.go), 1168 bytes per super-block:
# at 0 and 512 the qs of rows 0, 1 and of rows 2, 3 with their eight-byte
# groups side by side (g: row j's bytes 8g..8g+7 then row j''s), at 1024
# d of the four rows (f32), at 1040 their bsums (int16[16] each); xs is
# not read.
#
# q4_KX4I8MM (and q2_KX4I8MM, below): Q4_K rows as stored (144-byte
# blocks: d f16, dmin f16, scales[12], qs[128]) two weight rows a, b at a
# time (the last row of an odd np with itself, storing its outputs only),
# output for row r and activation row j at 4r + j·os. Per super-block and
# pair of activation rows j, j' the four integer sums (j·a, j·b, j'·a,
# j'·b, SMMLA's 2×2 lanes) of each 32-value sub-block s take four SMMLAs
# (the weights' eight-byte groups put side by side by TRN1/TRN2 .2d, the
# activations' read so by two LDPs), then isum += sc_s·sum (MLA by [sa_s,
# sb_s, sa_s, sb_s]); imin = Σ_s min_s·(bsums[2s] + bsums[2s+1]). The
# integers are exact, so the float operations are the x1 kernels'
# (vecDotQ4_K's order, one FMA per super-block): acc = fma(float(isum),
# d_w·d_x, acc), accMin = fma(float(imin), dmin_w·d_x, accMin), output acc
# − accMin, four outputs to a vector.
#
# q2_KX4I8MM: Q2_K rows as stored (84-byte blocks: scales[16] (scale |
# min<<4), qs[64], d f16, dmin f16), as q4_KX4I8MM with sixteen 16-value
# sub-blocks (two SMMLAs each; sub-block j = 8n + 2sh + h is bits 2sh of
# qs[32n + 16h:]) and imin = Σ_j min_j·bsums[j] (vecDotQ2_K's order).
#
# Every instruction carries its GNU spelling ("// gnu: ..."; see
# scripts/arm64asm.py).

MASK = 31  # 0x0f bytes
ACC = [24, 26]  # acc per pair of activation rows: lanes j·a, j·b, j'·a, j'·b
ACCM = [25, 27]  # accMin, the same lanes
Z = [20, 21, 22, 23]  # scales 2i, 2i+1 of rows a, b: sa, sb, sa', sb' (int32)
IMIN = [18, 19]
ISUM = [16, 17]
X = 7  # the group's super-block (interleaveQ8_K's layout)
XB = 1168  # its bytes
XD, XBS = 1024, 1040  # offsets of d[4] and bsums[4][16]
RB = 20  # row b's block pointer
ROWB = 25  # bytes per weight row


def scales():
    # Scales of rows a (x0) and b (x20) as int32 in Z; their mins as int16
    # in v1 (a) and v3 (b).
    s = rows.k4_scale_words(0, 12, 13, 19, 15) + [a.ins_s(0, 0, 12), a.ins_s(0, 1, 13), a.ins_s(1, 0, 19),
                                                  a.ins_s(1, 1, 15)]
    s += rows.k4_scale_words(RB, 12, 13, 19, 15) + [a.ins_s(2, 0, 12), a.ins_s(2, 1, 13), a.ins_s(3, 0, 19),
                                                   a.ins_s(3, 1, 15)]
    s += [a.zip1_b(4, 0, 2), a.sxtl_h(5, 4), a.sxtl2_h(6, 4), a.sxtl_s(Z[0], 5), a.sxtl2_s(Z[1], 5),
          a.sxtl_s(Z[2], 6), a.sxtl2_s(Z[3], 6), a.sxtl_h(1, 1), a.sxtl_h(3, 3)]
    return s


def mins():
    # IMIN[p] = the lanes j·a, j·b, j'·a, j'·b of Σ_s min_s·(bsums[2s] +
    # bsums[2s+1]): per activation row the eight pair sums (v4), SMULL and
    # SMLAL2 by each row's mins, then three ADDPs per pair.
    s = []
    for p in range(2):
        for i, j in enumerate((2 * p, 2 * p + 1)):
            pa, pb = 6 + 2 * i, 7 + 2 * i
            s += [a.ldr_q(4, X, XBS + 32 * j), a.ldr_q(5, X, XBS + 32 * j + 16), a.addp_h(4, 4, 5),
                  a.smull_s(pa, 4, 1), a.smlal2_s(pa, 4, 1), a.smull_s(pb, 4, 3), a.smlal2_s(pb, 4, 3)]
        s += [a.addp_s(6, 6, 7), a.addp_s(8, 8, 9), a.addp_s(IMIN[p], 6, 8)]
    return s


def sub_block(c, h):
    # Sub-block s = 2c + h: nibbles of rows a (v0, v1) and b (v2, v3) to
    # v4..v7, the weight groups W (v8..v11: a's and b's bytes 0-7, 8-15,
    # 16-23, 24-31 side by side), the scales [sa, sb, sa, sb] to v12; per
    # pair of activation rows their groups, side by side as stored (v29,
    # v13, v15, v14), four SMMLAs into v30 and an MLA by the scales into
    # ISUM.
    sb = 2 * c + h
    if h == 0:
        s = [a.and16(4 + i, i, MASK) for i in range(4)]
    else:
        s = [a.ushr_b(4 + i, i, 4) for i in range(4)]
    s += [a.trn1_d(8, 4, 6), a.trn2_d(9, 4, 6), a.trn1_d(10, 5, 7), a.trn2_d(11, 5, 7)]
    s.append((a.trn2_d if sb % 2 else a.trn1_d)(12, Z[sb // 2], Z[sb // 2]))
    for p in range(2):
        off = 512 * p + 64 * sb
        s += [a.ldp_q(29, 13, X, off), a.ldp_q(15, 14, X, off + 32), a.movi_b(30, 0), a.smmla(30, 29, 8), a.smmla(30, 13, 9), a.smmla(30, 15, 10), a.smmla(30, 14, 11),
              a.mla_s(ISUM[p], 30, 12)]
    return s


def tail(d_off):
    # d_w, dmin_w (f16 at d_off) of rows a, b: [da, db, dma, dmb] (v2), DW = [da, db, da,
    # db] (v3), DM (v4); the four rows' d (v8), per pair DX = [dj, dj,
    # dj', dj'] (v5, by ZIP1/ZIP2 .4s), then
    # acc = fma(float(isum), DW·DX, acc), accMin = fma(float(imin), DM·DX,
    # accMin).
    s = [a.ldr_s(0, 0, d_off), a.ldr_s(1, RB, d_off), a.zip1_h(2, 0, 1), a.fcvtl(2, 2), a.trn1_d(3, 2, 2), a.trn2_d(4, 2, 2),
         a.ldr_q(8, X, XD)]
    for p in range(2):
        s += [(a.zip2_s if p else a.zip1_s)(5, 8, 8),
              a.fmul(6, 3, 5), a.fmul(7, 4, 5), a.scvtf(ISUM[p], ISUM[p]), a.scvtf(IMIN[p], IMIN[p]),
              a.fmla(ACC[p], ISUM[p], 6), a.fmla(ACCM[p], IMIN[p], 7)]
    return s


def q4_k_block():
    s = scales() + mins() + [a.movi_b(ISUM[0], 0), a.movi_b(ISUM[1], 0)]
    for c in range(4):
        s += [a.ldr_q(0, 0, 16 + 32 * c), a.ldr_q(1, 0, 32 + 32 * c), a.ldr_q(2, RB, 16 + 32 * c),
              a.ldr_q(3, RB, 32 + 32 * c)]
        s += sub_block(c, 0) + sub_block(c, 1)
    return s + tail(0)


# Q2_K: scales of sub-blocks 2k, 2k+1 of rows a, b (sa, sb, sa', sb') in
# Z2[k]; the 2-bit mask in MASK.
Z2 = [20, 21, 22, 23, 12, 13, 14, 15]


def q2_k_scales_mins():
    # Scales (low nibbles of bytes 0-15) of rows a (v0) and b (v1) paired
    # by ZIP1/ZIP2 and widened into Z2; mins (high nibbles) as int16 (a:
    # v4, v5; b: v6, v7); IMIN[p] = the lanes j·a, j·b, j'·a, j'·b of
    # Σ_s min_s·bsums[s] (SMULL, SMLAL2, SMLAL, SMLAL2, three ADDPs a pair).
    s = [a.ldr_q(0, 0, 0), a.ldr_q(1, RB, 0), a.movi_b(8, 0x0f), a.and16(2, 0, 8), a.and16(3, 1, 8),
         a.ushr_b(0, 0, 4), a.ushr_b(1, 1, 4), a.sxtl_h(4, 0), a.sxtl2_h(5, 0), a.sxtl_h(6, 1), a.sxtl2_h(7, 1),
         a.zip1_b(9, 2, 3), a.zip2_b(10, 2, 3)]
    for i, src in enumerate((9, 10)):
        s += [a.sxtl_h(2, src), a.sxtl2_h(3, src), a.sxtl_s(Z2[4 * i], 2), a.sxtl2_s(Z2[4 * i + 1], 2),
              a.sxtl_s(Z2[4 * i + 2], 3), a.sxtl2_s(Z2[4 * i + 3], 3)]
    for p in range(2):
        for i, j in enumerate((2 * p, 2 * p + 1)):
            s += [a.ldr_q(8, X, XBS + 32 * j), a.ldr_q(9, X, XBS + 32 * j + 16)]
            for r, (lo, hi) in enumerate(((4, 5), (6, 7))):
                t = 0 + 2 * i + r
                s += [a.smull_s(t, 8, lo), a.smlal2_s(t, 8, lo), a.smlal_s(t, 9, hi), a.smlal2_s(t, 9, hi)]
        s += [a.addp_s(0, 0, 1), a.addp_s(2, 2, 3), a.addp_s(IMIN[p], 0, 2)]
    return s


def q2_k_block():
    # Sub-block j (16 values) = 8n + 2sh + h: bits 2sh of qs[32n + 16h:]
    # (rows a: v0, v1; b: v2, v3), to v4 (a) and v5 (b), groups side by
    # side in v6, v7; scales v28; per pair the activations' groups, side by
    # side as stored (v8, v9), two SMMLAs into v10 and an MLA into ISUM.
    s = q2_k_scales_mins() + [a.movi_b(ISUM[0], 0), a.movi_b(ISUM[1], 0)]
    for n in range(2):
        s += [a.ldr_q(0, 0, 16 + 32 * n), a.ldr_q(1, 0, 32 + 32 * n), a.ldr_q(2, RB, 16 + 32 * n),
              a.ldr_q(3, RB, 32 + 32 * n)]
        for sh in range(4):
            for h in range(2):
                j = 8 * n + 2 * sh + h
                for t, src in ((4, h), (5, 2 + h)):
                    s += [a.ushr_b(t, src, 2 * sh), a.and16(t, t, MASK)] if sh else [a.and16(t, src, MASK)]
                s += [a.trn1_d(6, 4, 5), a.trn2_d(7, 4, 5), (a.trn2_d if j % 2 else a.trn1_d)(28, Z2[j // 2], Z2[j // 2])]
                for p in range(2):
                    s += [a.ldp_q(8, 9, X, 512 * p + 32 * j), a.movi_b(10, 0), a.smmla(10, 8, 6), a.smmla(10, 9, 7),
                          a.mla_s(ISUM[p], 10, 28)]
    return s + tail(80)


def stores(pair):
    # Per pair of activation rows: acc − accMin to v28; rows a, b of
    # activation row j at x12 (d lane 0, or s lane 0 for a last single
    # row), of j' at x12 + os (d lane 1, or s lane 2).
    s = [a.mov(12, 3)]
    for p in range(2):
        s.append(a.fsub(28, ACC[p], ACCM[p]))
        for i in range(2):
            s.append(a.st1_d_lane(28, i, 12) if pair else a.st1_s_lane(28, 2 * i, 12))
            if p < 1 or i < 1:
                s.append(a.add(12, 12, 4))
    return s


def x4_kernel(name, bs, mask, block):
    """Two weight rows (bs-byte super-blocks) by four activation rows a
    pass; block() the super-block's body, ISUM and IMIN to the tail's."""
    out = a.prologue(name, 'blockQ8_K')
    body = [a.movi_b(MASK, mask)] + a.muli(ROWB, 6, bs, 12) + [a.cbz(5, 'done'), 'pair:',
                                                                 a.add(RB, 0, ROWB), a.cmpi(5, 1), a.bne('two'),
                                                                 a.mov(RB, 0), 'two:']
    body += [a.movi_b(f, 0) for f in ACC + ACCM]
    body += [a.mov(X, 1), a.mov(11, 6)]
    body += ['block:'] + block() + [a.addi(0, 0, bs), a.addi(RB, RB, bs), a.addi(X, X, XB)]
    body += [a.subs1(11), a.bne('block')]
    body += [a.cmpi(5, 1), a.beq('last')] + stores(True)
    body += [a.add(0, 0, ROWB), a.addi(3, 3, 8), a.subsi(5, 2), a.bne('pair'), a.b('done')]
    body += ['last:'] + stores(False)
    out += a.indent(body)
    return '\n'.join(out + ['done:', '\tRET', ''])


def build():
    u = kerngen.Unit('scripts/gen-kern-i8mm-arm64.py')
    u.text(a.header('scripts/gen-kern-i8mm-arm64.py'))
    u.kernel('q4_KX4I8MM', 'Q8_K', 'Q4_K', x4_kernel('q4_KX4I8MM', 144, 0x0f, q4_k_block))
    u.kernel('q2_KX4I8MM', 'Q8_K', 'Q2_K', x4_kernel('q2_KX4I8MM', 84, 0x03, q2_k_block))
    # One activation row (decode, and the rows left over) by the dotprod
    # kernel; four by SMMLA from interleaveQ8_K's layout.
    u.set('q2_KI8MMK', 'Q2_K', 'Q8_K', 'I8MM', 'q2_KDotProd', 'q2_KX4I8MM', inter='interleaveQ8_K', doc=I8MM_DOC)
    u.set('q4_KI8MMK', 'Q4_K', 'Q8_K', 'I8MM', 'q4_KDotProd', 'q4_KX4I8MM', inter='interleaveQ8_K')
    return u


I8MM_DOC = """Q2_K and Q4_K on i8mm: four activation rows by SMMLA, two weight rows at
a time, reading the activations as interleaveQ8_K lays them out; one
activation row (decode, and the rows left over) by the dotprod kernel.
Both read the weight rows as stored."""


if __name__ == '__main__':
    kerngen.run(build)
