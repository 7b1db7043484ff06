#!/usr/bin/env python3
"""Writes compute/kern_k_amd64.s: the K-quant (Q2_K..Q6_K) row kernels and the Q4_K panels.

Run from the repository root: python3 scripts/gen-kern-k.py > compute/kern_k_amd64.s
"""

import kerngen

# The assembly's documentation (scripts/gen-kern-k.py points here):
#
# Row kernels for Q2_K..Q6_K weights against Q8_K activation blocks
# (blockQ8_K: d f32 at 0, qs at 4, bsums int16[16] at 260; 292 bytes).
# Every kernel has the signature
#
#     func k(w *byte, x *blockQ8_K, xs int, out *float32, os int, np, nb int)
#
# and computes np weight rows of nb super-blocks each, one after the other
# from w, against one to four (x1..x4) or eight (x8) activation rows at x,
# x+xs, ...; output t of row r at out + t·os + 4r (bytes). The AVX2
# kernels take one row, Q4_K's and Q6_K's also two (x2). Per 32 quants
# the bytes are multiplied with PMADDUBSW into 16-bit pair sums, which are multiplied
# by the 16-bit sub-block scales and added into eight int32 lanes (lane l:
# quants 4l..4l+3 of each 32) with VPDPWSSD (VNNI) or PMADDWD + PADDD.
# The integers are exact, so every kernel of a type gives the same bits.
#
# Q4_K rows are repacked (see pack_k.go), 156 bytes a super-block: d, dmin
# (f16), the eight 6-bit scales as int16, the eight mins as bytes, then
# qs[128] as stored. Per super-block the lanes are summed to isum, the mins
# give imin = Σ m_j·(bsum_2j + bsum_2j+1), and acc = fma(isum, d·d_x, acc),
# accMin = fma(imin, dmin·d_x, accMin); the row is acc − accMin (ggml's
# repacked q4_K gemv order).
#
# Q6_K rows are read as stored (210 bytes: ql[128], qh[64], scales[16], d).
# The quants are taken unsigned (0..63) and the lanes corrected by
# −32·(bsum_2l·sc_2l + bsum_2l+1·sc_2l+1); acc_l = fma(d_x·d, lane_l,
# acc_l), and the row is the sum of the eight lanes, upper half onto lower
# then pairs (ggml_vec_dot_q6_K_q8_K's order).
#
# Q2_K rows are read as stored and take Q4_K's order per super-block (the
# sub-blocks are 16 values). Q3_K rows are repacked (114 bytes) and take
# Q6_K's lanes, with the activations made unsigned (x+128) and the lanes
# corrected by 128·Σ sc·q. Their AVX-512 kernels work on 512-bit vectors,
# two 32-value chunks at a time; see the generator for the details.
HEADER = kerngen.asm_head('scripts/gen-kern-k.py') + '''
''' + '\n'.join([
    kerngen.broadcast('mask0f', 0x0f0f0f0f0f0f0f0f),
    kerngen.broadcast('mask10', 0x1010101010101010),
    kerngen.broadcast('mask30', 0x3030303030303030),
])


def scale_masks():
    # VPSHUFB masks: chunk c of a Q6_K super-block takes scale 2c for its
    # first 16 quants and 2c+1 for the rest: bytes [2c x8, 2c+1 x8].
    out = []
    for c in range(8):
        lo = sum((2 * c) << (8 * i) for i in range(8))
        hi = sum((2 * c + 1) << (8 * i) for i in range(8))
        out += [f'DATA q6scmask<>+{16 * c}(SB)/8, ${lo:#018x}',
                f'DATA q6scmask<>+{16 * c + 8}(SB)/8, ${hi:#018x}']
    out.append('GLOBL q6scmask<>(SB), RODATA|NOPTR, $128')
    return '\n'.join(out) + '\n'


ACT = kerngen.ACT
FACC = ['Y9', 'Y10', 'Y11', 'Y12']       # float accumulators (Q6_K lanes)
XACC = ['X9', 'X10', 'X11', 'X12']       # FACC's X forms: [acc, accMin] (Q4_K), the row (Q5_K, Q6_K)
IACC = ['Y16', 'Y17', 'Y18', 'Y19']      # int32 lanes (VNNI)
TMP = ['Y20', 'Y21', 'Y22', 'Y23']       # per-activation temporaries (VNNI)
LANES = ['Y13', 'Y12']                   # int32 lanes (AVX2: x1 and x2 only, its 16 registers)


def prologue(name, frame=0):
    return kerngen.prologue(name, 'Q8_K', frame)


def row_start(rows, zero):
    return kerngen.loop_start('row', rows, zero) + ['sb:']


def chunk_step(rows, off, w, sc, vnni):
    # Lanes += scale16 · pairs(maddubs(w, x[off:off+32])) for each activation.
    s = []
    for j in range(rows):
        r = ACT[j]
        if vnni:
            t, i = TMP[j], IACC[j]
            s += [f'VMOVDQU32 {4 + off}({r}), {t}', f'VPMADDUBSW {t}, {w}, {t}', f'VPDPWSSD {sc}, {t}, {i}']
        else:
            s += [f'VMOVDQU {4 + off}({r}), Y14', f'VPMADDUBSW Y14, {w}, Y14', f'VPMADDWD {sc}, Y14, Y14',
                  f'VPADDD Y14, {LANES[j]}, {LANES[j]}']
    return s


def zero_lanes(rows, vnni):
    # The activations' int32 lanes cleared: IACC (VNNI) or LANES (AVX2).
    if vnni:
        return [f'VPXORD {i}, {i}, {i}' for i in IACC[:rows]]
    return [f'VPXOR {i}, {i}, {i}' for i in LANES[:rows]]


def advance(rows, bsz):
    return kerngen.advance(rows, bsz, 292, 'sb')


def store(rows, regs):
    return kerngen.store('VMOVSS', regs, rows) + ['ADDQ $4, DI', 'DECQ R8', 'JNZ row']


epilogue = kerngen.epilogue


def finish(out, body, rows, bsz, tail, regs):
    # The kernel's text: out, then body and the step to the next super-block;
    # after the row's last, tail and the stores of regs.
    out = out + ['\t' + b for b in body + advance(rows, bsz)] + ['\t' + b for b in tail + store(rows, regs)]
    return '\n'.join(out + epilogue())


def hsum_float(f):
    # f's X form, lane 0 = the sum of the eight float lanes of f (a Y register).
    x = 'X' + f[1:]
    return [f'VEXTRACTF128 $1, {f}, X15', f'VADDPS X15, {x}, {x}', f'VMOVHLPS {x}, {x}, X15',
            f'VADDPS X15, {x}, {x}', f'VMOVSHDUP {x}, X15', f'VADDSS X15, {x}, {x}']


# Where the Q4_K and Q5_K kernels find a super-block's parts: the frame
# size, the block size, the offset of qh (Q5_K) and qs, the address of
# sub-block k's int16 scale, the mask constants' prefix, what unpacks the
# scales (before the chunks) and the mins (after them) into Y4 as
# [m0 m0 m1 m1 ...] int16. These are the repacked rows (pack_k.go), 156
# bytes a Q4_K super-block, 188 a Q5_K one: d, dmin (f16), scales as
# int16[8], mins as bytes[8], (qh[32],) qs[128]; gen-kern-inplace.py has
# ggml's own.
MINS = ['VPMOVZXBW 20(SI), X4', 'VPUNPCKHWD X4, X4, X3', 'VPUNPCKLWD X4, X4, X4', 'VINSERTI128 $1, X3, Y4, Y4']
REPACKED_Q4_K = dict(frame=0, size=156, qs=28, scale=lambda k: f'{4 + 2 * k}(SI)', mask='mask',
                     scales=[], mins=MINS)
REPACKED_Q5_K = dict(REPACKED_Q4_K, size=188, qh=28, qs=60)


def q4k_kernel(name, rows, vnni, lay=REPACKED_Q4_K):
    # Registers: Y0 raw qs, Y1/Y2 low/high nibbles, Y3 scale, Y4 mins
    # expanded [m0 m0 m1 m1 ...] int16, X5 [d, dmin] · d_x, X6/X7 sums
    # (X6..X8 the scales' unpacking first, in place).
    out = prologue(name, lay['frame'])
    out += row_start(rows, XACC[:rows])
    body = zero_lanes(rows, vnni)
    body += lay['scales']
    m = lay['mask']
    for j in range(4):
        body += [f'VMOVDQU {lay["qs"] + 32 * j}(SI), Y0', f'VPAND {m}0f<>(SB), Y0, Y1', 'VPSRLW $4, Y0, Y2',
                 f'VPAND {m}0f<>(SB), Y2, Y2']
        body.append(f'VPBROADCASTW {lay["scale"](2 * j)}, Y3')
        body += chunk_step(rows, 64 * j, 'Y1', 'Y3', vnni)
        body.append(f'VPBROADCASTW {lay["scale"](2 * j + 1)}, Y3')
        body += chunk_step(rows, 64 * j + 32, 'Y2', 'Y3', vnni)
    body += lay['mins'] + ['VCVTPH2PS (SI), X5']
    for j in range(rows):
        r, acc = ACT[j], XACC[j]
        lanes = IACC[j] if vnni else LANES[j]
        if vnni:  # VPHADDD has no EVEX form: move to Y13/Y14 first
            body += [f'VMOVDQU32 {lanes}, Y13', f'VPMADDWD 260({r}), Y4, Y14']
        else:
            if lanes != 'Y13':
                body.append(f'VMOVDQU {lanes}, Y13')
            body.append(f'VPMADDWD 260({r}), Y4, Y14')  # the mins' lanes
        body += ['VPHADDD Y14, Y13, Y14',                 # [i01 i23 m01 m23 | i45 i67 m45 m67]
                 'VPHADDD Y14, Y14, Y14',                 # [i0..3 m0..3 . . | i4..7 m4..7 . .]
                 'VEXTRACTI128 $1, Y14, X15',
                 'VPADDD X15, X14, X14',                  # [isum, imin, ., .]
                 'VCVTDQ2PS X14, X14',
                 f'VBROADCASTSS ({r}), X15',
                 'VMULPS X15, X5, X15',                   # [d·d_x, dmin·d_x]
                 f'VFMADD231PS X15, X14, {acc}']
        if not vnni:
            body.append('VPXOR Y13, Y13, Y13')
    tail = [i for acc in XACC[:rows] for i in [f'VMOVSHDUP {acc}, X15', f'VSUBSS X15, {acc}, {acc}']]
    return finish(out, body, rows, lay['size'], tail, XACC)


def hsum_int(src, dst_x):
    # dst_x[0] = the sum of the eight int32 lanes of src (a Y register below
    # Y16; dst_x its X form may be the same register).
    x = 'X' + src[1:]
    return [f'VEXTRACTI128 $1, {src}, X15', f'VPADDD X15, {x}, {dst_x}', f'VPSHUFD $0x4e, {dst_x}, X15',
            f'VPADDD X15, {dst_x}, {dst_x}', f'VPSHUFD $0xb1, {dst_x}, X15', f'VPADDD X15, {dst_x}, {dst_x}']


def q5k_kernel(name, rows, vnni, lay=REPACKED_Q5_K):
    # Q5_K rows (lay: REPACKED_Q5_K's comment). The quant of chunk c (32
    # values) is its nibble plus bit c of qh's byte as 16.
    # ggml_vec_dot_q5_K_q8_K's order: eight lanes, acc_l = fma(d_x·d,
    # lane_l, acc_l); the mins in a scalar, summs = fma(−d_x·dmin, imin,
    # summs); the row is hsum(acc) + summs.
    # Registers: Y0 raw qs, Y1/Y2 quants, Y3 scale, Y4 mins as int16 pairs,
    # X5 [d, dmin], Y6 qh, Y7 fifth bits (X6..X8 the scales' unpacking
    # first); float lanes Y9.., summs X24.. (VNNI) or X10 (AVX2).
    summs = [f'X{24 + a}' for a in range(rows)] if vnni else ['X10']
    out = prologue(name, lay['frame'])
    out += row_start(rows, FACC[:rows] + [f'Y{24 + a}' if vnni else 'Y10' for a in range(rows)])
    body = []
    if vnni:
        body += [f'VPXORD {i}, {i}, {i}' for i in IACC[:rows]]
    else:
        body.append('VPXOR Y13, Y13, Y13')
    body += lay['scales']
    body.append(f'VMOVDQU {lay["qh"]}(SI), Y6')
    m = lay['mask']
    for j in range(4):
        body += [f'VMOVDQU {lay["qs"] + 32 * j}(SI), Y0', f'VPAND {m}0f<>(SB), Y0, Y1', 'VPSRLW $4, Y0, Y2',
                 f'VPAND {m}0f<>(SB), Y2, Y2']
        for quant, bit in (('Y1', 2 * j), ('Y2', 2 * j + 1)):
            if bit < 4:
                body.append(f'VPSLLW ${4 - bit}, Y6, Y7')
            elif bit == 4:
                body.append('VMOVDQU Y6, Y7')
            else:
                body.append(f'VPSRLW ${bit - 4}, Y6, Y7')
            body += [f'VPAND {m}10<>(SB), Y7, Y7', f'VPOR Y7, {quant}, {quant}']
        body.append(f'VPBROADCASTW {lay["scale"](2 * j)}, Y3')
        body += chunk_step(rows, 64 * j, 'Y1', 'Y3', vnni)
        body.append(f'VPBROADCASTW {lay["scale"](2 * j + 1)}, Y3')
        body += chunk_step(rows, 64 * j + 32, 'Y2', 'Y3', vnni)
    body += lay['mins'] + ['VCVTPH2PS (SI), X5', 'VMOVSHDUP X5, X7']  # X7[0] = dmin
    for a in range(rows):
        r = ACT[a]
        lanes = IACC[a] if vnni else 'Y13'
        body.append(f'VPMADDWD 260({r}), Y4, Y14')
        body += hsum_int('Y14', 'X14')
        body += ['VCVTDQ2PS X14, X14', f'VMULSS ({r}), X7, X15',       # d_x·dmin
                 f'VFNMADD231SS X15, X14, {summs[a]}',                  # summs −= (d_x·dmin)·imin
                 f'VCVTDQ2PS {lanes}, {lanes}', f'VBROADCASTSS ({r}), Y15', 'VPBROADCASTD X5, Y14',
                 'VMULPS Y14, Y15, Y15',                                # d_x·d
                 f'VFMADD231PS {lanes}, Y15, {FACC[a]}']
        if not vnni:
            body.append('VPXOR Y13, Y13, Y13')
    tail = []
    for f, sm in zip(FACC[:rows], summs):
        tail += hsum_float(f) + [f'VADDSS {sm}, X{f[1:]}, X{f[1:]}']
    return finish(out, body, rows, lay['size'], tail, XACC)


def q6k_kernel(name, rows, vnni):
    # Registers: Y0/Y1 ql halves, Y2 qh, Y3..Y6 the four chunks of a half,
    # X7 the 16 scales, Y8 a chunk's scale16, Y15 d_w broadcast.
    out = prologue(name)
    out += row_start(rows, FACC[:rows])
    body = zero_lanes(rows, vnni)
    body.append('VMOVDQU 192(SI), X7')
    for n in range(2):
        body += [f'VMOVDQU {64 * n}(SI), Y0', f'VMOVDQU {64 * n + 32}(SI), Y1', f'VMOVDQU {128 + 32 * n}(SI), Y2',
                 # chunk 0: ql0 & 0f | (qh << 4) & 30
                 'VPAND mask0f<>(SB), Y0, Y3', 'VPSLLW $4, Y2, Y8', 'VPAND mask30<>(SB), Y8, Y8', 'VPOR Y8, Y3, Y3',
                 # chunk 1: ql1 & 0f | (qh << 2) & 30
                 'VPAND mask0f<>(SB), Y1, Y4', 'VPSLLW $2, Y2, Y8', 'VPAND mask30<>(SB), Y8, Y8', 'VPOR Y8, Y4, Y4',
                 # chunk 2: ql0 >> 4 | qh & 30
                 'VPSRLW $4, Y0, Y5', 'VPAND mask0f<>(SB), Y5, Y5', 'VPAND mask30<>(SB), Y2, Y8', 'VPOR Y8, Y5, Y5',
                 # chunk 3: ql1 >> 4 | (qh >> 2) & 30
                 'VPSRLW $4, Y1, Y6', 'VPAND mask0f<>(SB), Y6, Y6', 'VPSRLW $2, Y2, Y8', 'VPAND mask30<>(SB), Y8, Y8',
                 'VPOR Y8, Y6, Y6']
        for k in range(4):
            c = 4 * n + k
            body += [f'VPSHUFB q6scmask<>+{16 * c}(SB), X7, X8', 'VPMOVSXBW X8, Y8']
            body += chunk_step(rows, 32 * c, f'Y{3 + k}', 'Y8', vnni)
    body += ['VPMOVSXBW X7, Y8', 'VPBROADCASTW 208(SI), X15', 'VCVTPH2PS X15, Y15']
    for j in range(rows):
        r = ACT[j]
        lanes = IACC[j] if vnni else LANES[j]
        t = TMP[j] if vnni else 'Y14'
        body += [f'VPMADDWD 260({r}), Y8, {t}', f'VPSLLD $5, {t}, {t}', f'VPSUBD {t}, {lanes}, {lanes}',
                 f'VCVTDQ2PS {lanes}, {lanes}', f'VBROADCASTSS ({r}), {t}', f'VMULPS Y15, {t}, {t}',
                 f'VFMADD231PS {lanes}, {t}, {FACC[j]}']
        if not vnni:
            body.append('VPXOR Y13, Y13, Y13')
    tail = [i for f in FACC[:rows] for i in hsum_float(f)]
    return finish(out, body, rows, 210, tail, XACC)


def q4k_panel_kernel(name, rows):
    # Q4_K panels of eight rows (see pack_k.go), VNNI. A panel super-block
    # is 1184 bytes: d[8], dmin[8] (f16), scales[8][8] and mins[8][8]
    # (sub-block major, bytes), then for each pair of sub-blocks p and each
    # group g of four positions a 32-byte chunk: qs[32p+4g : 32p+4g+4] of
    # each row (low nibbles sub-block 2p, high nibbles 2p+1). Lane r of every
    # vector is row r: isum_r and imin_r are exact per super-block, then
    # acc_r = fma(isum_r, d_r·d_x, acc_r), min_r = fma(imin_r, dmin_r·d_x,
    # min_r), out_r = acc_r − min_r: ggml's repacked q4_K order.
    # Registers: Y0 raw chunk, Y1/Y2 nibbles, Y3 scales, Y4 d, Y5 dmin, Y6
    # mins as int16 pairs, Y7 float scale; per activation a (8..31):
    # lo, hi, isum, imin, acc, min.
    lo = [f'Y{8 + 6 * a}' for a in range(rows)]
    hi = [f'Y{9 + 6 * a}' for a in range(rows)]
    isum = [f'Y{10 + 6 * a}' for a in range(rows)]
    imin = [f'Y{11 + 6 * a}' for a in range(rows)]
    acc = [f'Y{12 + 6 * a}' for a in range(rows)]
    mn = [f'Y{13 + 6 * a}' for a in range(rows)]
    out = prologue(name)
    out.append('panel:')
    body = kerngen.zero(acc + mn)
    body.append('MOVQ DX, BX')
    for j in range(1, rows):
        body.append(f'LEAQ ({ACT[j - 1]})(R10*1), {ACT[j]}')
    body.append('MOVQ R9, CX')
    out += ['\t' + b for b in body] + ['sb:']
    body = ['VCVTPH2PS (SI), Y4', 'VCVTPH2PS 16(SI), Y5']
    body += [f'VPXORD {r}, {r}, {r}' for r in isum + imin]
    for p in range(4):
        body += [f'VPXORD {r}, {r}, {r}' for r in lo + hi]
        for g in range(8):
            body += [f'VMOVDQU {160 + 256 * p + 32 * g}(SI), Y0', 'VPAND mask0f<>(SB), Y0, Y1', 'VPSRLW $4, Y0, Y2',
                     'VPAND mask0f<>(SB), Y2, Y2']
            for a in range(rows):
                r = ACT[a]
                body += [f'VPDPBUSD.BCST {4 + 64 * p + 4 * g}({r}), Y1, {lo[a]}',
                         f'VPDPBUSD.BCST {4 + 64 * p + 32 + 4 * g}({r}), Y2, {hi[a]}']
        for h, part in ((0, lo), (1, hi)):
            j = 2 * p + h
            body.append(f'VPMOVZXBD {32 + 8 * j}(SI), Y3')
            for a in range(rows):
                body += [f'VPMULLD Y3, {part[a]}, {part[a]}', f'VPADDD {part[a]}, {isum[a]}, {isum[a]}']
    for j in range(8):
        body += [f'VPMOVZXBD {96 + 8 * j}(SI), Y6', 'VPMULLD pairs16<>(SB), Y6, Y6']
        for a in range(rows):
            body.append(f'VPDPWSSD.BCST {260 + 4 * j}({ACT[a]}), Y6, {imin[a]}')
    for a in range(rows):
        r = ACT[a]
        body += [f'VCVTDQ2PS {isum[a]}, {isum[a]}', f'VMULPS.BCST ({r}), Y4, Y7', f'VFMADD231PS Y7, {isum[a]}, {acc[a]}',
                 f'VCVTDQ2PS {imin[a]}, {imin[a]}', f'VMULPS.BCST ({r}), Y5, Y7', f'VFMADD231PS Y7, {imin[a]}, {mn[a]}']
    body.append('ADDQ $1184, SI')
    body += [f'ADDQ $292, {a}' for a in ACT[:rows]]
    body += ['DECQ CX', 'JNZ sb']
    for a in range(rows):
        body.append(f'VSUBPS {mn[a]}, {acc[a]}, {acc[a]}')
    body += kerngen.store('VMOVUPS', acc, rows) + ['ADDQ $32, DI', 'DECQ R8', 'JNZ panel']
    out += ['\t' + b for b in body]
    return '\n'.join(out + epilogue())


def low2(n_reg, s, dst):
    # dst = the 2-bit field at bits 2s..2s+1 of each byte of n_reg.
    if s == 0:
        return [f'VPAND mask03<>(SB), {n_reg}, {dst}']
    return [f'VPSRLW ${2 * s}, {n_reg}, {dst}', f'VPAND mask03<>(SB), {dst}, {dst}']


def q2k_kernel(name):
    # Q2_K rows read as stored (84 bytes: scales[16], qs[64], d, dmin f16),
    # AVX2, one activation. The quants (0..3) are multiplied unsigned with
    # PMADDUBSW; chunk c (32 values) takes scale 2c for its first 16 and
    # 2c+1 for the rest. Per super-block isum = Σ sc_j·Σ q·x and imin =
    # Σ m_j·bsum_j are exact, then acc = fma(isum, d·d_x, acc), accMin =
    # fma(imin, dmin·d_x, accMin); the row is acc − accMin: ggml's repacked
    # q2_K gemv order (vecDotQ2_K).
    # Registers: Y0 raw qs, Y1 quants, Y4 mins int16[16], X5 [d, dmin],
    # Y6 the scales as int16, even sub-blocks in the low half and odd ones in
    # the high half, so that one VPSHUFB makes a chunk's scale16 in Y8; Y13
    # the int32 lanes.
    out = prologue(name)
    out += row_start(1, ['Y9'])
    body = ['VPXOR Y13, Y13, Y13']
    body += ['VMOVDQU (SI), X7', 'VPAND mask0f<>(SB), X7, X6', 'VPSHUFB evenodd<>(SB), X6, X6', 'VPMOVZXBW X6, Y6',
             'VPSRLW $4, X7, X7', 'VPAND mask0f<>(SB), X7, X7', 'VPMOVZXBW X7, Y4', 'VMOVD 80(SI), X5',
             'VCVTPH2PS X5, X5']
    for n in range(2):
        body.append(f'VMOVDQU {16 + 32 * n}(SI), Y0')
        for s in range(4):
            c = 4 * n + s
            body += low2('Y0', s, 'Y1')
            body += [f'VPSHUFB wordsel<>+{32 * c}(SB), Y6, Y8', f'VPMADDUBSW {4 + 32 * c}(BX), Y1, Y14',
                     'VPMADDWD Y8, Y14, Y14', 'VPADDD Y14, Y13, Y13']
    # isum (the lanes) and imin (Y14) summed exactly, then [acc, accMin] +=
    # [isum, imin]·[d, dmin]·d_x.
    body += ['VPMADDWD 260(BX), Y4, Y14', 'VPHADDD Y14, Y13, Y14', 'VPHADDD Y14, Y14, Y14',
             'VEXTRACTI128 $1, Y14, X15', 'VPADDD X15, X14, X14', 'VCVTDQ2PS X14, X14',
             'VBROADCASTSS (BX), X15', 'VMULPS X15, X5, X15', 'VFMADD231PS X15, X14, X9']
    out += ['\t' + b for b in body + advance(1, 84)]
    out += ['\t' + b for b in ['VMOVSHDUP X9, X15', 'VSUBSS X15, X9, X9'] + store(1, ['X9'])]
    return '\n'.join(out + epilogue())


def q3k_kernel(name):
    # Q3_K rows repacked (pack_k.go), 114 bytes a super-block: hmask[32],
    # qs[64] as stored, the sixteen scales as int8 (less 32; the even
    # sub-blocks' first, see q2k_kernel for why), d f16. AVX2, one
    # activation. The quant of chunk c (32 values) is its two bits of qs,
    # less 4 where bit c of hmask is clear (−4..3). The activations are made
    # unsigned (x+128, XOR 0x80) for PMADDUBSW, and lane l loses
    # corr_l = Σ_c sc·128·(its four quants of chunk c) per super-block,
    # made alongside by PMADDUBSW of 0x80s and the quants; that leaves
    # ggml_vec_dot_q3_K_q8_K's exact lanes; acc_l = fma(d_x·d, lane_l,
    # acc_l), and the row is the sum of the eight lanes as for Q6_K.
    # Registers: Y0 raw qs, Y1 quants, Y2 temp, Y3 zero, Y4 0x80s, Y5 corr,
    # Y6 hmask, Y7 scales as int16, Y8 a chunk's scale16, Y13 the lanes.
    out = prologue(name)
    out.insert(-2, '\tVMOVDQU mask80<>(SB), Y4')  # before the np test
    out += row_start(1, ['Y9'])
    body = ['VPXOR Y13, Y13, Y13', 'VPXOR Y3, Y3, Y3', 'VPMOVSXBW 96(SI), Y7', 'VMOVDQU (SI), Y6', 'VPXOR Y5, Y5, Y5']
    for n in range(2):
        body.append(f'VMOVDQU {32 + 32 * n}(SI), Y0')
        for s in range(4):
            c = 4 * n + s
            body += low2('Y0', s, 'Y1')
            body += [f'VPAND hbit<>+{32 * c}(SB), Y6, Y2', 'VPCMPEQB Y3, Y2, Y2', 'VPAND maskfc<>(SB), Y2, Y2',
                     'VPOR Y2, Y1, Y1']
            body += [f'VPSHUFB wordsel<>+{32 * c}(SB), Y7, Y8', 'VPMADDUBSW Y1, Y4, Y2', 'VPMADDWD Y8, Y2, Y2',
                     'VPADDD Y2, Y5, Y5']
            body += [f'VPXOR {4 + 32 * c}(BX), Y4, Y14', 'VPMADDUBSW Y1, Y14, Y14', 'VPMADDWD Y8, Y14, Y14',
                     'VPADDD Y14, Y13, Y13']
    body += ['VPBROADCASTW 112(SI), X15', 'VCVTPH2PS X15, Y15', 'VPSUBD Y5, Y13, Y13', 'VCVTDQ2PS Y13, Y13',
             'VBROADCASTSS (BX), Y14', 'VMULPS Y15, Y14, Y14', 'VFMADD231PS Y13, Y14, Y9']
    out += ['\t' + b for b in body + advance(1, 114)]
    tail = ['VEXTRACTF128 $1, Y9, X15', 'VADDPS X15, X9, X9', 'VMOVHLPS X9, X9, X15', 'VADDPS X15, X9, X9',
            'VMOVSHDUP X9, X15', 'VADDSS X15, X9, X9']
    out += ['\t' + b for b in tail + store(1, ['X9'])]
    return '\n'.join(out + epilogue())


def const32(name, byte):
    v = int.from_bytes(bytes([byte] * 8), 'little')
    return [f'DATA {name}<>+{8 * i}(SB)/8, ${v:#018x}' for i in range(4)] + [f'GLOBL {name}<>(SB), RODATA|NOPTR, $32']


def q3k_consts():
    out = []
    for name, b in (('mask03', 0x03), ('mask04', 0x04), ('maskfc', 0xfc), ('mask80', 0x80)):
        out += const32(name, b)
    # hbit<>+32c: bit c in every byte (the hmask bit of chunk c).
    v = [int.from_bytes(bytes([1 << c] * 8), 'little') for c in range(8)]
    for c in range(8):
        out += [f'DATA hbit<>+{32 * c + 8 * i}(SB)/8, ${v[c]:#018x}' for i in range(4)]
    out.append('GLOBL hbit<>(SB), RODATA|NOPTR, $256')
    # wordsel<>+32c: VPSHUFB mask repeating word c of each 128-bit half.
    for c in range(8):
        v = int.from_bytes(bytes([2 * c, 2 * c + 1] * 4), 'little')
        out += [f'DATA wordsel<>+{32 * c + 8 * i}(SB)/8, ${v:#018x}' for i in range(4)]
    out.append('GLOBL wordsel<>(SB), RODATA|NOPTR, $256')
    # evenodd<>: VPSHUFB mask taking the even bytes, then the odd ones.
    lo = int.from_bytes(bytes(range(0, 16, 2)), 'little')
    hi = int.from_bytes(bytes(range(1, 16, 2)), 'little')
    out += [f'DATA evenodd<>+0(SB)/8, ${lo:#018x}', f'DATA evenodd<>+8(SB)/8, ${hi:#018x}',
            'GLOBL evenodd<>(SB), RODATA|NOPTR, $16']
    return '\n'.join(out) + '\n'


ZACC = ['Z16', 'Z17', 'Z18', 'Z19']      # int32 lanes of two chunks (512-bit kernels)
ZTMP = ['Z20', 'Z21', 'Z22', 'Z23']


def fold512(a):
    # Y13 = the two 256-bit halves of ZACC[a] added: the eight lanes.
    return [f'VEXTRACTI64X4 $1, {ZACC[a]}, Y13', f'VPADDD {IACC[a]}, Y13, Y13']


def zpair(n_reg, q, dst):
    # dst = the 2-bit fields of chunks 2q and 2q+1 of a qs vector broadcast
    # to both halves of n_reg (low half bits 4q.., high half bits 4q+2..).
    return [f'VPSRLVW shv<>+{64 * q}(SB), {n_reg}, {dst}', f'VPANDD Z2, {dst}, {dst}']


Z8ACC = [f'Z{16 + a}' for a in range(8)]   # int32 lanes of two chunks, per activation
Y8ACC = [f'Y{16 + a}' for a in range(8)]


def xaddr(a, off):
    # Activation a's byte off: a < 4 through ACT[a], a ≥ 4 four rows on.
    if a < 4:
        return f'{off}({ACT[a]})'
    return f'{off}({ACT[a - 4]})(R10*4)'


def store8(rows, xregs, extract=False):
    # Stores the outputs of rows activations (X registers; with extract,
    # pairs of outputs at element 0 and 2 of each register) and moves on.
    s = []
    outs = []
    for x in xregs:
        outs += [(x, 0), (x, 2)] if extract else [(x, 0)]
    outs = outs[:rows]
    for a, (x, e) in enumerate(outs):
        base = '(DI)' if a < 4 else '(CX)'
        if a == 4:
            s.append('LEAQ (DI)(R11*4), CX')
        k = a % 4
        addr = {0: base, 1: f'{base}(R11*1)', 2: f'{base}(R11*2)', 3: '(AX)'}[k]
        if k == 3:
            s.append(f'LEAQ {base}(R11*2), AX')
            addr = '(AX)(R11*1)'
        s.append(f'VMOVSS {x}, {addr}' if e == 0 else f'VEXTRACTPS $2, {x}, {addr}')
    return s + ['ADDQ $4, DI', 'DECQ R8', 'JNZ row']


def q2k_kernel512(name, rows):
    # q2k_kernel with 512-bit vectors (AVX-512 VNNI): two chunks a step, the
    # low half of every vector chunk c and the high half chunk c+1; the
    # int32 lanes of both halves are added per super-block, exactly. With
    # four or eight activations, each four have their sums made by one tree
    # into S = [isum_0, imin_0, ..., isum_3, imin_3], and a vector of
    # [acc_0, accMin_0, ..., acc_3, accMin_3] += S · [d, dmin]·d_x_a.
    # Registers: Z0 raw qs in both halves, Z1 quants, Z2 0x03s, Y4 mins,
    # Y5 [d, dmin] four times, Z6 scales16 in both halves, Z8 two chunks'
    # scale16, Y9 (Y10) the float sums, Z16.. the lanes, Z24.. temporaries.
    out = prologue(name)
    out.insert(-2, '\tVBROADCASTI64X4 mask03<>(SB), Z2')
    out += row_start(min(rows, 4), ['Y9', 'Y10'][:max(1, rows // 4)])
    body = [f'VPXORD {z}, {z}, {z}' for z in Z8ACC[:rows]]
    body += ['VMOVDQU (SI), X7', 'VPAND mask0f<>(SB), X7, X6', 'VPSHUFB evenodd<>(SB), X6, X6', 'VPMOVZXBW X6, Y6',
             'VINSERTI64X4 $1, Y6, Z6, Z6', 'VPSRLW $4, X7, X7', 'VPAND mask0f<>(SB), X7, X7', 'VPMOVZXBW X7, Y4',
             'VPBROADCASTD 80(SI), X5', 'VCVTPH2PS X5, Y5']  # [d, dmin] four times
    for n in range(2):
        body.append(f'VBROADCASTI64X4 {16 + 32 * n}(SI), Z0')
        for q in range(2):
            c = 4 * n + 2 * q
            body += zpair('Z0', q, 'Z1')
            body.append(f'VPSHUFB wsel2<>+{32 * c}(SB), Z6, Z8')
            for a in range(rows):
                t = f'Z{24 + a % 8}'
                body += [f'VPMADDUBSW {xaddr(a, 4 + 32 * c)}, Z1, {t}', f'VPDPWSSD Z8, {t}, {Z8ACC[a]}']
    if rows == 1:
        body += fold512(0)
        body += ['VPMADDWD 260(BX), Y4, Y14', 'VPHADDD Y14, Y13, Y14', 'VPHADDD Y14, Y14, Y14',
                 'VEXTRACTI128 $1, Y14, X15', 'VPADDD X15, X14, X14', 'VCVTDQ2PS X14, X14',
                 'VBROADCASTSS (BX), X15', 'VMULPS X15, X5, X15', 'VFMADD231PS X15, X14, X9']
        out += ['\t' + b for b in body + advance(min(rows, 4), 84)]
        out += ['\t' + b for b in ['VMOVSHDUP X9, X15', 'VSUBSS X15, X9, X9'] + store(rows, XACC)]
        return '\n'.join(out + epilogue())
    L, M = ['Y0', 'Y1', 'Y3', 'Y6'], ['Y7', 'Y8', 'Y13', 'Y14']
    for g in range(rows // 4):
        acts = range(4 * g, 4 * g + 4)
        for i, a in enumerate(acts):
            body += [f'VEXTRACTI64X4 $1, {Z8ACC[a]}, Y15', f'VPADDD {Y8ACC[a]}, Y15, {L[i]}']
        for i, a in enumerate(acts):
            body += [f'VPMADDWD {xaddr(a, 260)}, Y4, {M[i]}', f'VPHADDD {M[i]}, {L[i]}, {L[i]}']
        body += ['VPHADDD Y1, Y0, Y0', 'VPHADDD Y6, Y3, Y3',    # [L0 M0 L1 M1] per 128-bit half, then L2..M3
                 'VPERM2I128 $0x20, Y3, Y0, Y7', 'VPERM2I128 $0x31, Y3, Y0, Y8', 'VPADDD Y8, Y7, Y7',
                 'VCVTDQ2PS Y7, Y7',
                 f'VMOVSS {xaddr(4 * g, 0)}, X13', f'VINSERTPS $0x10, {xaddr(4 * g + 1, 0)}, X13, X13',
                 f'VINSERTPS $0x20, {xaddr(4 * g + 2, 0)}, X13, X13',
                 f'VINSERTPS $0x30, {xaddr(4 * g + 3, 0)}, X13, X13', 'VPMOVZXDQ X13, Y13', 'VMOVSLDUP Y13, Y13',
                 'VMULPS Y5, Y13, Y13', f'VFMADD231PS Y13, Y7, Y{9 + g}']
    out += ['\t' + b for b in body + advance(min(rows, 4), 84)]
    tail = []
    for g in range(rows // 4):
        y, x = f'Y{9 + g}', f'X{9 + g}'
        tail += [f'VMOVSHDUP {y}, Y13', f'VSUBPS Y13, {y}, {y}', f'VEXTRACTF128 $1, {y}, X{11 + g}']
    xs = [f'X{9 + g}' if h == 0 else f'X{11 + g}' for g in range(rows // 4) for h in range(2)]
    out += ['\t' + b for b in tail + store8(rows, xs, extract=True)]
    return '\n'.join(out + epilogue())


def q3k_kernel512(name, rows):
    # q3k_kernel with 512-bit vectors (AVX-512 VNNI), two chunks a step as in
    # q2k_kernel512. Registers: Z0 raw qs in both halves, Z1 quants, Z2
    # 0x03s, Z3 0x04s, Z4 0x80s, Z5 corr, Z6 hmask in both halves, Z7
    # scales16 in both halves, Z8 two chunks' scale16, Y9..Y12 and Y24..Y27
    # the float lanes, Z16.. the int32 lanes, Z28.. temporaries.
    facc = (FACC + ['Y24', 'Y25', 'Y26', 'Y27'])[:rows]
    out = prologue(name)
    out[-2:-2] = ['\tVBROADCASTI64X4 mask03<>(SB), Z2', '\tVBROADCASTI64X4 mask04<>(SB), Z3',
                  '\tVBROADCASTI64X4 mask80<>(SB), Z4']
    out += row_start(min(rows, 4), facc)
    # The lanes start at −128·corr (low half; the high half at 0).
    body = ['VPXORD Z5, Z5, Z5'] + [f'VPXORD {z}, {z}, {z}' for z in Z8ACC[:rows]]
    body += ['VPMOVSXBW 96(SI), Y7', 'VINSERTI64X4 $1, Y7, Z7, Z7', 'VBROADCASTI64X4 (SI), Z6']
    for n in range(2):
        body.append(f'VBROADCASTI64X4 {32 + 32 * n}(SI), Z0')
        for q in range(2):
            c = 4 * n + 2 * q
            body += zpair('Z0', q, 'Z1')
            body += [f'VPTESTNMB hbit<>+{32 * c}(SB), Z6, K1', 'VPSUBB Z3, Z1, K1, Z1',
                     f'VPSHUFB wsel2<>+{32 * c}(SB), Z7, Z8', 'VPMADDUBSW Z1, Z4, Z14', 'VPDPWSSD Z8, Z14, Z5']
            for a in range(rows):
                t = f'Z{28 + a % 4}'
                body += [f'VPXORD {xaddr(a, 4 + 32 * c)}, Z4, {t}', f'VPMADDUBSW Z1, {t}, {t}',
                         f'VPDPWSSD Z8, {t}, {Z8ACC[a]}']
    body += ['VPBROADCASTW 112(SI), X15', 'VCVTPH2PS X15, Y15', 'VEXTRACTI64X4 $1, Z5, Y14', 'VPADDD Y14, Y5, Y5']
    for a in range(rows):
        body += [f'VEXTRACTI64X4 $1, {Z8ACC[a]}, Y13', f'VPADDD {Y8ACC[a]}, Y13, Y13', 'VPSUBD Y5, Y13, Y13',
                 'VCVTDQ2PS Y13, Y13',
                 f'VMULPS.BCST {xaddr(a, 0)}, Y15, Y14', f'VFMADD231PS Y13, Y14, {facc[a]}']
    out += ['\t' + b for b in body + advance(min(rows, 4), 114)]
    tail = []
    for f in facc:
        x = 'X' + f[1:]
        tail += [f'VEXTRACTF32X4 $1, {f}, X15', f'VADDPS X15, {x}, {x}', f'VMOVHLPS {x}, {x}, X15',
                 f'VADDPS X15, {x}, {x}', f'VMOVSHDUP {x}, X15', f'VADDSS X15, {x}, {x}']
    out += ['\t' + b for b in tail + store8(rows, ['X' + f[1:] for f in facc])]
    return '\n'.join(out + epilogue())


def consts512():
    out = []
    # shv<>+64q: VPSRLVW counts, 4q in the low half and 4q+2 in the high.
    for q in range(2):
        for h in range(2):
            v = int.from_bytes(bytes([4 * q + 2 * h, 0] * 4), 'little')
            out += [f'DATA shv<>+{64 * q + 32 * h + 8 * i}(SB)/8, ${v:#018x}' for i in range(4)]
    out.append('GLOBL shv<>(SB), RODATA|NOPTR, $128')
    # wsel2<>+32c (c even): word c of each 128-bit lane in the low half, word
    # c+1 in the high half (VPSHUFB on scales16 in both halves).
    for c in range(0, 8, 2):
        for h in range(2):
            v = int.from_bytes(bytes([2 * (c + h), 2 * (c + h) + 1] * 4), 'little')
            out += [f'DATA wsel2<>+{32 * c + 32 * h + 8 * i}(SB)/8, ${v:#018x}' for i in range(4)]
    out.append('GLOBL wsel2<>(SB), RODATA|NOPTR, $256')
    return '\n'.join(out) + '\n'


def build():
    u = kerngen.Unit('scripts/gen-kern-k.py')
    u.text(HEADER)
    u.text(scale_masks())
    u.text(kerngen.broadcast('pairs16', 0x0001000100010001))
    u.text(q3k_consts())
    u.text(consts512())

    def emit(wtype, name, body):
        u.kernel(name, 'Q8_K', wtype, body)

    for rows in (1, 2, 3, 4):
        emit('Q4_K', f'q4_KPanelX{rows}VNNI', q4k_panel_kernel(f'q4_KPanelX{rows}VNNI', rows))
    # x2 and x3 take a batch's last rows after its x8 and x4 (AVX2: x2, in
    # pairs, as far as its registers go; Q5_K's AVX2 kernel has none free).
    for rows, vnni in ((1, True), (2, True), (3, True), (4, True), (1, False), (2, False)):
        isa = 'VNNI' if vnni else 'AVX2'
        emit('Q4_K', f'q4_KRowsX{rows}{isa}', q4k_kernel(f'q4_KRowsX{rows}{isa}', rows, vnni))
        emit('Q6_K', f'q6_KRowsX{rows}{isa}', q6k_kernel(f'q6_KRowsX{rows}{isa}', rows, vnni))
        if vnni or rows == 1:
            emit('Q5_K', f'q5_KRowsX{rows}{isa}', q5k_kernel(f'q5_KRowsX{rows}{isa}', rows, vnni))
        if rows in (2, 3):
            continue
        if vnni:
            emit('Q2_K', f'q2_KRowsX{rows}{isa}', q2k_kernel512(f'q2_KRowsX{rows}{isa}', rows))
            emit('Q3_K', f'q3_KRowsX{rows}{isa}', q3k_kernel512(f'q3_KRowsX{rows}{isa}', rows))
            if rows == 4:
                emit('Q2_K', 'q2_KRowsX8VNNI', q2k_kernel512('q2_KRowsX8VNNI', 8))
                emit('Q3_K', 'q3_KRowsX8VNNI', q3k_kernel512('q3_KRowsX8VNNI', 8))
        else:
            emit('Q2_K', f'q2_KRowsX{rows}{isa}', q2k_kernel(f'q2_KRowsX{rows}{isa}'))
            emit('Q3_K', f'q3_KRowsX{rows}{isa}', q3k_kernel(f'q3_KRowsX{rows}{isa}'))
    u.set('q4_KVNNI', 'Q4_K', 'Q8_K', 'VNNI', 'q4_KPanelX1VNNI', 'q4_KPanelX4VNNI', pack='packQ4_KPanels', panel=True,
          x2='q4_KPanelX2VNNI', x3='q4_KPanelX3VNNI')
    u.set('q4_KAVX2', 'Q4_K', 'Q8_K', 'AVX2', 'q4_KRowsX1AVX2', pack='packQ4_K', x2='q4_KRowsX2AVX2')
    u.set('q4_KRowsVNNI', 'Q4_K', 'Q8_K', 'VNNI', 'q4_KRowsX1VNNI', 'q4_KRowsX4VNNI', pack='packQ4_K', table=None,
          x2='q4_KRowsX2VNNI', x3='q4_KRowsX3VNNI',
          doc='The VNNI row kernels, kept for comparison in tests.')
    for t, pack in (('q5_K', 'packQ5_K'), ('q6_K', None), ('q2_K', None), ('q3_K', 'packQ3_K')):
        x8 = f'{t}RowsX8VNNI' if t in ('q2_K', 'q3_K') else None
        x2, x3 = (f'{t}RowsX2VNNI', f'{t}RowsX3VNNI') if t in ('q5_K', 'q6_K') else (None, None)
        u.set(f'{t}VNNI', t.upper(), 'Q8_K', 'VNNI', f'{t}RowsX1VNNI', f'{t}RowsX4VNNI', x8, pack=pack, x2=x2, x3=x3)
        u.set(f'{t}AVX2', t.upper(), 'Q8_K', 'AVX2', f'{t}RowsX1AVX2', pack=pack,
              x2='q6_KRowsX2AVX2' if t == 'q6_K' else None)
    return u


if __name__ == '__main__':
    kerngen.run(build)
