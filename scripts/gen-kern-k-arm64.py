#!/usr/bin/env python3
"""Writes compute/kern_k_arm64.s: the K-quant row kernels for arm64 (Q2_K to Q6_K; SDOT where the CPU has dotprod).

Run from the repository root: python3 scripts/gen-kern-k-arm64.py > compute/kern_k_arm64.s
"""
import sys

sys.dont_write_bytecode = True
import arm64asm as a  # noqa: E402
import kerngen  # noqa: E402
import arm64rows as rows  # noqa: E402

# The assembly's documentation (scripts/gen-kern-k-arm64.py points here):
#
# K-quant kernels against Q8_K activation blocks on arm64 (blockQ8_K: d
# f32 at 0, qs[256] at 4, bsums int16[16] at 260; 292 bytes), with the
# signature of kern_k_amd64.s's
#
#     func k(w *byte, x *blockQ8_K, xs int, out *float32, os int, np, nb int)
#
# np weight rows as stored, output r at 4r, one activation row.
#
# Q2_K (q2_K*, 84-byte blocks: scales[16], qs[64], d f16, dmin f16): the
# repacked q2_K_8x8 gemv's sequential order, as vecDotQ2_K: isum = Σ_j
# sc_j·(sub-block j's dot) and imin = Σ_j min_j·bsums[j] per super-block,
# acc = fma(float(isum), d_w·d_x, acc), accMin = fma(float(imin),
# dmin_w·d_x, accMin); output acc − accMin.
#
# Q3_K (q3_K*, 110-byte blocks: hmask[32], qs[64], scales[12], d f16):
# ggml_vec_dot_q3_K_q8_K's x86 lanes, as vecDotQ3_K (lane l sums
# sc_j·w·x over the sub-blocks j and positions (p mod 32)/4 = l).
#
# Q4_K (q4_K*, 144-byte blocks: d f16, dmin f16, scales[12], qs[128]):
# the repacked q4_K_8x8 gemv's sequential order, as vecDotQ4_K: per
# super-block isum = Σ_j sc_j·Σ(sub-block j of u·x) and imin = Σ_j
# mins_j·(bsums[2j] + bsums[2j+1]), exact; acc = fma(float(isum), d_w·d_x,
# acc), accMin = fma(float(imin), dmin_w·d_x, accMin); output acc − accMin.
#
# Q5_K (q5_K*, 176-byte blocks: d, dmin, scales[12], qh[32], qs[128]):
# ggml_vec_dot_q5_K_q8_K's x86 lanes, as vecDotQ5_K: lane l sums
# sc_j·w·x over sub-blocks j and positions (p mod 32)/4 = l; acc_l =
# fma(float(lane_l), d_x·d_w, acc_l); summs = fma(−d_x·dmin_w,
# float(imin), summs); output hsum8(acc) + summs.
#
# Q6_K (q6_K*, 210-byte blocks: ql[128], qh[64], scales int8[16], d f16):
# ggml_vec_dot_q6_K_q8_K's x86 lanes, as vecDotQ6_K. Lane l (0..7) of a
# super-block is Σ sc[p/16]·u_p·x_p over the positions p with
# (p mod 32)/4 = l (u the unsigned 6-bit quant), minus
# 32·(bsums[2l]·sc[2l] + bsums[2l+1]·sc[2l+1]): one SDOT per sixteen
# quants (they share a scale) and an MLA by the scale; then
# acc_l = fma(float(lane_l), d_x·d_w, acc_l) and at the end hsum8. The
# integers are exact, so the float operations are the reference's.
#
# Every instruction carries its GNU spelling ("// gnu: ..."; see
# scripts/arm64asm.py).

M0F, M30 = 30, 29
S = [24, 25, 26, 27]  # sixteen scales as int32
SC16 = [22, 23]  # the scales as int16
L = rows.L  # lane sums 0-3, 4-7
F = rows.F  # float lanes
Q = [0, 1, 2, 3]  # ql of a half
H = [4, 5]  # qh of a half
X = [6, 7]  # a group's activations
LO, HI, W, I = 8, 9, 10, 11


def correction():
    # L = −32·(bsums·sc summed in pairs): lanes 0-3 from bsums 0..7, 4-7
    # from 8..15; activation pointer x7 at the block.
    s = [a.ldr_q(31, 0, 192), a.sxtl_h(SC16[0], 31), a.sxtl2_h(SC16[1], 31),
         a.sxtl_s(S[0], SC16[0]), a.sxtl2_s(S[1], SC16[0]), a.sxtl_s(S[2], SC16[1]), a.sxtl2_s(S[3], SC16[1]),
         a.addi(10, 7, 260), a.ld1(12, 2, 10, post=False),
         a.smull_s(14, 12, SC16[0]), a.smull2_s(15, 12, SC16[0]), a.smull_s(16, 13, SC16[1]),
         a.smull2_s(17, 13, SC16[1]), a.addp_s(14, 14, 15), a.addp_s(16, 16, 17)]
    s += [a.shl_s(14, 14, 5), a.shl_s(16, 16, 5), a.neg_s(L[0], 14), a.neg_s(L[1], 16)]
    return s


def group(g, k, h, neon):
    # The sixteen quants h of group g (the half's part k): unpacked into W,
    # multiplied with the activations X[h] into I, added to lane sums L[h]
    # times scale 2g+h.
    q = Q[h] if k in (0, 2) else Q[2 + h]
    s = []
    if k < 2:
        s.append(a.and16(LO, q, M0F))
    else:
        s.append(a.ushr_b(LO, q, 4))
    if k == 0:
        s += [a.shl_b(HI, H[h], 4), a.and16(HI, HI, M30)]
    elif k == 1:
        s += [a.shl_b(HI, H[h], 2), a.and16(HI, HI, M30)]
    elif k == 2:
        s += [a.and16(HI, H[h], M30)]
    else:
        s += [a.ushr_b(HI, H[h], 2), a.and16(HI, HI, M30)]
    j = 2 * g + h
    s += [a.orr16(W, LO, HI)] + a.dot16(I, W, X[h], neon) + [a.mla_s_el(L[h], I, S[j // 4], j % 4)]
    return s


def q6_k_kernel(name, neon):
    block = correction() + [a.addi(9, 7, 4)]
    for n in range(2):
        block += [a.ldr_q(Q[i], 0, 64 * n + 16 * i) for i in range(4)]
        block += [a.ldr_q(H[i], 0, 128 + 32 * n + 16 * i) for i in range(2)]
        for k in range(4):
            g = 4 * n + k
            block.append(a.ld1(X[0], 2, 9))
            for h in range(2):
                block += group(g, k, h, neon)
    return rows.rows_kernel(name, [a.movi_b(M0F, 0x0f), a.movi_b(M30, 0x30)], rows.LANES_ZERO,
                            block + rows.lanes_tail(208), 210, rows.LANES_FINISH)


def q4_k_scales():
    # The block's eight 6-bit scales and mins (scales[12] at x0+4), unpacked
    # as ggml does with 32-bit words: scales to v26's low eight bytes, mins
    # to v27's; then the scales as int16 (v22) and int32 (v24: 0-3, v25:
    # 4-7), the mins as int16 (v23).
    s = rows.k4_scale_words(0, 12, 13, 9, 15) + [
         a.ins_s(26, 0, 12), a.ins_s(26, 1, 13), a.ins_s(27, 0, 9), a.ins_s(27, 1, 15),
         a.sxtl_h(22, 26), a.sxtl_h(23, 27), a.sxtl_s(24, 22), a.sxtl2_s(25, 22)]
    return s


def q4_k_mins():
    # imin = Σ mins[j]·(bsums[2j] + bsums[2j+1]) in lane 0 of v14.
    return [a.addi(10, 7, 260), a.ld1(12, 2, 10, post=False), a.addp_h(12, 12, 13),
            a.smull_s(14, 12, 23), a.smull2_s(15, 12, 23), a.add_s(14, 14, 15), a.addv_s(14, 14)]


def q4_k_kernel(name, neon):
    # Q4_K rows as stored: isum = Σ_j sc_j·(sub-block j's dot), one SDOT
    # pair per sub-block and an MLA by its scale into v20, summed by ADDV;
    # then acc = fma(float(isum), d_w·d_x, acc) and accMin =
    # fma(float(imin), dmin_w·d_x, accMin) (scalars s18, s19), output
    # acc − accMin (vecDotQ4_K's order).
    block = q4_k_scales() + q4_k_mins() + [a.addi(9, 7, 4), a.movi_b(20, 0)]
    for c in range(4):
        block += [a.ldr_q(0, 0, 16 + 32 * c), a.ldr_q(1, 0, 32 + 32 * c), a.and16(2, 0, M0F), a.and16(3, 1, M0F),
                  a.ushr_b(4, 0, 4), a.ushr_b(5, 1, 4)]
        for h in range(2):
            j = 2 * c + h
            block += [a.ld1(6, 2, 9)] + a.dot32(11, 2 + 2 * h, 3 + 2 * h, 6, 7, neon)
            block.append(a.mla_s_el(20, 11, 24 + j // 4, j % 4))
    return rows.rows_kernel(name, [a.movi_b(M0F, 0x0f)], rows.SEQ_ZERO, block + rows.seq_tail(0, 2), 144,
                            rows.SEQ_FINISH)


def q2_k_kernel(name, neon):
    # Q2_K rows as stored (84-byte blocks: scales[16] (scale | min<<4),
    # qs[64], d f16, dmin f16): vecDotQ2_K's sequential order, one FMA per
    # super-block. Sub-block j (16 values) is qs half j/8 (32 bytes), its
    # 16-byte part j%2, bits 2·((j%8)/2); dot16 gives four lanes, added to
    # v20 times scale j (v24..v27 as int32) and summed by ADDV at the end.
    # imin = Σ_j min_j·bsums[j] (v14).
    # Scales (low nibbles) to v24..v27 as int32, mins (high) to v22, v23 as
    # int16; imin from the bsums (v12, v13).
    block = [a.ldr_q(31, 0, 0), a.and16(21, 31, M0F), a.ushr_b(31, 31, 4),
             a.sxtl_h(22, 31), a.sxtl2_h(23, 31), a.sxtl_h(16, 21), a.sxtl2_h(17, 21),
             a.sxtl_s(24, 16), a.sxtl2_s(25, 16), a.sxtl_s(26, 17), a.sxtl2_s(27, 17),
             a.addi(10, 7, 260), a.ld1(12, 2, 10, post=False),
             a.smull_s(14, 12, 22), a.smull2_s(15, 12, 22), a.smull_s(16, 13, 23), a.smull2_s(17, 13, 23),
             a.add_s(14, 14, 15), a.add_s(16, 16, 17), a.add_s(14, 14, 16), a.addv_s(14, 14),
             a.addi(9, 7, 4), a.movi_b(20, 0)]
    for n in range(2):
        block += [a.ldr_q(0, 0, 16 + 32 * n), a.ldr_q(1, 0, 32 + 32 * n)]
        for sh in range(4):
            block.append(a.ld1(6, 2, 9))
            for h in range(2):
                j = 8 * n + 2 * sh + h
                if sh:
                    block += [a.ushr_b(2, h, 2 * sh), a.and16(2, 2, M30)]
                else:
                    block.append(a.and16(2, h, M30))
                block += a.dot16(11, 2, 6 + h, neon) + [a.mla_s_el(20, 11, 24 + j // 4, j % 4)]
    return rows.rows_kernel(name, [a.movi_b(M0F, 0x0f), a.movi_b(M30, 0x03)], rows.SEQ_ZERO,
                            block + rows.seq_tail(80, 82), 84, rows.SEQ_FINISH)


def q3_k_kernel(name, neon):
    # Q3_K rows as stored (110-byte blocks: hmask[32], qs[64], scales[12],
    # d f16): vecDotQ3_K's lanes. Sixteen 6-bit scales − 32 as int32 in
    # v24..v27 (low four bits: the nibbles of bytes 0-7, ZIP1; high two:
    # bytes of the last word shifted by USHL with q3shift); sub-block j (16
    # values) is Q2_K's two bits minus 4 where hmask bit (j/2) of its byte
    # is clear (CMTST, BIC, SUB); dot16 and an MLA by scale j into the lane
    # sums v20 (lanes 0-3) and v21 (4-7); acc_l = fma(float(lane_l),
    # d_x·d_w, acc_l); hsum8 at the end.
    consts = [a.go('MOVD $q3shift<>(SB), R17', 'adr x17, q3shift'), a.ldr_q(10, 17, 0), a.movi_b(M0F, 0x0f),
              a.movi_b(29, 0x03), a.movi_b(9, 4), a.movi_b(12, 32)]
    block = [a.ldr_d(13, 0, 96), a.and16(14, 13, M0F), a.ushr_b(13, 13, 4), a.zip1_d(14, 14, 13),
             a.ldr_s(15, 0, 104), a.dup_s(15, 15, 0), a.ushl_b(15, 15, 10), a.and16(15, 15, 29), a.shl_b(15, 15, 4),
             a.orr16(14, 14, 15), a.sub_b(14, 14, 12), a.sxtl_h(16, 14), a.sxtl2_h(17, 14),
             a.sxtl_s(24, 16), a.sxtl2_s(25, 16), a.sxtl_s(26, 17), a.sxtl2_s(27, 17),
             a.ldr_q(4, 0, 0), a.ldr_q(5, 0, 16), a.addi(9, 7, 4), a.movi_b(L[0], 0), a.movi_b(L[1], 0)]
    for n in range(2):
        block += [a.ldr_q(0, 0, 32 + 32 * n), a.ldr_q(1, 0, 48 + 32 * n)]
        for sh in range(4):
            block += [a.ld1(6, 2, 9), a.movi_b(8, 1 << (4 * n + sh))]
            for h in range(2):
                j = 8 * n + 2 * sh + h
                if sh:
                    block += [a.ushr_b(2, h, 2 * sh), a.and16(2, 2, 29)]
                else:
                    block.append(a.and16(2, h, 29))
                block += [a.cmtst(3, 4 + h, 8), a.bic16(3, 9, 3), a.sub_b(2, 2, 3)]
                block += a.dot16(11, 2, 6 + h, neon) + [a.mla_s_el(L[h], 11, 24 + j // 4, j % 4)]
    return rows.rows_kernel(name, consts, rows.LANES_ZERO, block + rows.lanes_tail(108), 110, rows.LANES_FINISH)


def fifth_bit(t, h, b):
    # t = 0x10 where bit b of the qh bytes h is set (v16 holds 0x10s).
    if b < 4:
        s = [a.shl_b(t, h, 4 - b)]
    elif b > 4:
        s = [a.ushr_b(t, h, b - 4)]
    else:
        return [a.and16(t, h, 16)]
    return s + [a.and16(t, t, 16)]


def q5_k_kernel(name, neon):
    # Q5_K rows as stored: vecDotQ5_K's lanes. Sub-block j (32 positions)
    # is chunk j/2's low (j even) or high nibbles plus 16 where bit j of qh
    # is set; each sixteen quants give four lanes (dot16) added to the lane
    # sums v20 (lanes 0-3) and v21 (4-7) times scale j. The mins' term
    # fma(−d_x·dmin_w, float(imin), summs) goes to s17.
    block = q4_k_scales() + q4_k_mins() + [a.addi(9, 7, 4), a.movi_b(L[0], 0), a.movi_b(L[1], 0),
                                            a.ldr_q(4, 0, 16), a.ldr_q(5, 0, 32)]
    for c in range(4):
        block += [a.ldr_q(0, 0, 48 + 32 * c), a.ldr_q(1, 0, 64 + 32 * c)]
        for hi in range(2):
            j = 2 * c + hi
            block.append(a.ld1(6, 2, 9))
            for h in range(2):
                w = 2 + h
                block.append(a.ushr_b(w, h, 4) if hi else a.and16(w, h, M0F))
                block += fifth_bit(10, 4 + h, j) + [a.orr16(w, w, 10)]
                block += a.dot16(11, w, 6 + h, neon) + [a.mla_s_el(L[h], 11, 24 + j // 4, j % 4)]
    # The mins' term: summs (s17) = fma(−d_x·dmin_w, float(imin), summs).
    block += [a.ldr_s(28, 7, 0), a.ldr_h(31, 0, 2), a.fcvt_sh(31, 31), a.fnmul_ss(31, 28, 31), a.scvtf_ss(14, 14),
              a.fmadd_s(17, 31, 14, 17)] + rows.lanes_tail(0)
    return rows.rows_kernel(name, [a.movi_b(M0F, 0x0f), a.movi_b(16, 0x10)], rows.LANES_ZERO + [a.movi_b(17, 0)],
                            block, 176, a.hsum8(F[0]) + [a.fadd_ss(F[0], F[0], 17), a.str_s_post(F[0], 3, 4)])


Q3_SHIFT = '''// Per byte of a 16-byte vector holding Q3_K's last scale word four times:
// the shift (0, −2, −4, −6) that brings scale j's two high bits down.
DATA q3shift<>+0(SB)/8, $0xfefefefe00000000
DATA q3shift<>+8(SB)/8, $0xfafafafafcfcfcfc
GLOBL q3shift<>(SB), RODATA|NOPTR, $16
'''


def build():
    u = kerngen.Unit('scripts/gen-kern-k-arm64.py')
    u.text(a.header('scripts/gen-kern-k-arm64.py'))
    u.text(Q3_SHIFT)
    kinds = (('Q2_K', q2_k_kernel), ('Q3_K', q3_k_kernel), ('Q4_K', q4_k_kernel), ('Q5_K', q5_k_kernel),
             ('Q6_K', q6_k_kernel))
    for level, neon in (('DotProd', False), ('NEON', True)):
        for t, kernel in kinds:
            u.kernel(f'{t.lower()[:2]}_K{level}', 'Q8_K', t, kernel(f'{t.lower()[:2]}_K{level}', neon))
    # Rows as stored (no packing), one activation row at a time; the
    # values carry a K to differ from the kernels' names.
    for t, _ in kinds:
        for level in ('NEON', 'DotProd'):
            name = f'{t.lower()[:2]}_K{level}'
            u.set(name + 'K', t, 'Q8_K', level, name)
    return u


if __name__ == '__main__':
    kerngen.run(build)
