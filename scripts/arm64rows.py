"""The frame of the arm64 row kernels against Q8_K activation blocks (one
activation row, weight rows as stored), shared by scripts/gen-kern-k-arm64.py
and scripts/gen-kern-iq4-arm64.py, and their two float tails: the
sequential one (Q2_K, Q4_K: one FMA per super-block into acc s18 and one
into accMin s19, output acc − accMin) and the lane one (eight float lanes
v18, v19, hsum8 at the end).
"""
import arm64asm as a

F = [18, 19]  # float accumulators
L = [20, 21]  # integer lane sums (lanes 0-3, 4-7)


def rows_kernel(name, consts, zero, block, bs, finish):
    """consts once; per weight row zero, then per super-block block (x0 at
    the weights, x7 at the activations; both advanced after it), then
    finish (the row's output to x3, post-incremented)."""
    out = a.prologue(name, 'blockQ8_K')
    body = consts + [a.cbz(5, 'done'), 'row:'] + zero + [a.mov(7, 1), a.mov(11, 6), 'block:'] + block
    body += [a.addi(0, 0, bs), a.addi(7, 7, 292), a.subs1(11), a.bne('block')] + finish
    body += [a.subs1(5), a.bne('row')]
    return '\n'.join(out + a.indent(body) + ['done:', '\tRET', ''])


SEQ_ZERO = [a.movi_b(F[0], 0), a.movi_b(F[1], 0)]
SEQ_FINISH = [a.fsub_ss(F[0], F[0], F[1]), a.str_s_post(F[0], 3, 4)]


def seq_tail(d_off, dmin_off):
    """isum (lanes of v20, summed by ADDV) and imin (lane 0 of v14):
    acc = fma(float(isum), d_w·d_x, acc), accMin = fma(float(imin),
    dmin_w·d_x, accMin); d_w and dmin_w f16 at x0 + d_off, dmin_off."""
    return [a.ldr_s(28, 7, 0), a.ldr_h(31, 0, d_off), a.ldr_h(16, 0, dmin_off), a.fcvt_sh(31, 31),
            a.fcvt_sh(16, 16), a.fmul_ss(31, 31, 28), a.fmul_ss(16, 16, 28), a.addv_s(20, 20), a.scvtf_ss(20, 20),
            a.scvtf_ss(14, 14), a.fmadd_s(F[0], 20, 31, F[0]), a.fmadd_s(F[1], 14, 16, F[1])]


LANES_ZERO = [a.movi_b(F[0], 0), a.movi_b(F[1], 0)]
LANES_FINISH = a.hsum8_store(F[0], 3)


def lanes_tail(d_off):
    """acc_l = fma(float(lane_l), d_x·d_w, acc_l) for the lane sums v20,
    v21; d_w f16 at x0 + d_off."""
    return [a.ldr_s(28, 7, 0), a.ldr_h(31, 0, d_off), a.fcvt_sh(31, 31), a.fmul_ss(31, 31, 28),
            a.scvtf(L[0], L[0]), a.scvtf(L[1], L[1]), a.fmla_el(F[0], L[0], 31, 0), a.fmla_el(F[1], L[1], 31, 0)]


def k4_scale_words(p, s03, s47, m03, m47):
    """The 6-bit scales and mins of the Q4_K/Q5_K block at xp (scales[12]
    at xp+4), unpacked as ggml does with 32-bit words into wS03 (scales
    0-3), wS47, wM03 (mins 0-3), wM47; x12..x17 are scratch (x12, x13 may
    be s03, s47)."""
    return [a.ldrw(12, p, 4), a.ldrw(13, p, 8), a.ldrw(14, p, 12),
            a.lsrw(16, 14, 4), a.andw(16, 16, 0x0f0f0f0f), a.lsrw(17, 13, 6), a.andw(17, 17, 0x03030303),
            a.orrw_lsl(m47, 16, 17, 4),
            a.andw(m03, 13, 0x3f3f3f3f),
            a.lsrw(17, 12, 6), a.andw(17, 17, 0x03030303), a.andw(16, 14, 0x0f0f0f0f),
            a.orrw_lsl(s47, 16, 17, 4),
            a.andw(s03, 12, 0x3f3f3f3f)]
