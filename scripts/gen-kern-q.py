#!/usr/bin/env python3
"""Writes compute/kern_q_amd64.s: the Q4_0 panel kernels and the Q8_0 row kernels.

Run from the repository root: python3 scripts/gen-kern-q.py > compute/kern_q_amd64.s
"""

import kerngen

# The assembly's documentation (scripts/gen-kern-q.py points here):
#
# Kernels for Q4_0 and Q8_0 weights against Q8_0 activation blocks
# (blockQ8_0: d f32 at 0, corr i32 at 4, qs at 8; 40 bytes). Every kernel
# has the signature
#
#     func k(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)
#
# and computes outputs for one to four (x1..x4) activation rows at x,
# x+xs, x+2xs, x+3xs (nb blocks each), output t at out + t·os (bytes).
#
# Q4_0 (q4_0x*): np panels of eight rows (see pack.go), output r of panel
# p at 4·(8p + r); per row acc = fma(float(sumi_b), d_w·d_x, acc) over the
# blocks b in order, sumi_b = corr_b + Σ_j u_j·q_j the exact block dot
# product (ggml's repacked q4_0_8x8 order).
#
# Q8_0 (q8_0Lanes*): np rows as stored, output r at 4r; per block eight
# int32 lanes (lane l sums quants 4l..4l+3) times d_w·d_x added by FMA into
# eight float lanes, summed at the end upper half onto lower, then pairs
# (ggml_vec_dot_q8_0_q8_0's order). The VNNI kernels for four and eight
# activation rows are kern_ql_amd64.s's q8_0Pair* (the same operations).
#
# x1..x4 kernels do the same float operations per output, and the AVX2
# and VNNI kernels compute the same integers, so all of them agree bit for
# bit.
HEADER = kerngen.asm_head('scripts/gen-kern-q.py') + '''
''' + kerngen.broadcast('nibmask', 0x0f0f0f0f0f0f0f0f) + '\n' + kerngen.broadcast('ones16', 0x0001000100010001)


def load_q4_0(scales=None):
    # Scales to Y8; Y0..Y3 the low nibbles of chunks 0..3 (values 4c..4c+3),
    # Y4..Y7 the high nibbles (values 16+4c..16+4c+3), as unsigned bytes.
    # scales(addr, dst), if given, loads the panel block's 16 bytes of
    # scales at addr into dst in place of eight f16 (gen-kern-mxfp4.py's).
    s = scales('(SI)', 'Y8') if scales else ['VCVTPH2PS (SI), Y8']
    s += [f'VMOVDQU {16 + 32 * c}(SI), Y{c}' for c in range(4)]
    s += [f'VPSRLW $4, Y{c}, Y{c + 4}' for c in range(4)]
    s += [f'VPAND nibmask<>(SB), Y{c}, Y{c}' for c in range(8)]
    return s


def dot_vnni(r, f, i0, i1, t):
    # One activation block at r: two int32 chains (i0 starts at corr), then
    # f += float(i0 + i1) · (d_w · d_x).
    s = [f'VPBROADCASTD 4({r}), {i0}', f'VPXORD {i1}, {i1}, {i1}']
    for g in range(8):
        s.append(f'VPDPBUSD.BCST {8 + 4 * g}({r}), Y{g}, {i0 if g % 2 == 0 else i1}')
    s += [f'VPADDD {i1}, {i0}, {i0}', f'VCVTDQ2PS {i0}, {i0}',
          f'VMULPS.BCST ({r}), Y8, {t}', f'VFMADD231PS {t}, {i0}, {f}']
    return s


def dot_avx2(r, f, i, t):
    # One activation block at r, AVX2: i += madd(maddubs(w, x), 1) per group
    # of four quants; Y15 holds ones16.
    s = [f'VPBROADCASTD 4({r}), {i}']
    for g in range(8):
        s += [f'VPBROADCASTD {8 + 4 * g}({r}), {t}', f'VPMADDUBSW {t}, Y{g}, {t}',
              f'VPMADDWD Y15, {t}, {t}', f'VPADDD {t}, {i}, {i}']
    s += [f'VCVTDQ2PS {i}, {i}', f'VBROADCASTSS ({r}), {t}', f'VMULPS Y8, {t}, {t}',
          f'VFMADD231PS {t}, {i}, {f}']
    return s


ACT = kerngen.ACT
ACC = ['Y9', 'Y10', 'Y11', 'Y12']


def prologue(name, ones, sig='Q8_0'):
    # The kernel's header and argument loads (see HEADER for the registers);
    # ones: Y15 gets the 16-bit ones PMADDWD sums pairs with.
    return kerngen.prologue(name, sig, setup=['VMOVDQU ones16<>(SB), Y15'] if ones else [])


def loop_start(label, rows):
    return kerngen.loop_start(label, rows, ACC[:rows])


def kernel(name, rows, load, dot, bsz, avx2):
    out = prologue(name, avx2) + loop_start('panel', rows)
    out.append('block:')
    body = load()
    for j in range(rows):
        body += dot(j)
    return '\n'.join(out + ['\t' + x for x in body + panel_end(rows, bsz)] + kerngen.epilogue())


def panel_end(rows, bsz):
    # The end of a panel kernel's block loop (weight blocks of bsz bytes)
    # and of its panel loop: the accumulators stored.
    return kerngen.advance(rows, bsz, 40, 'block') + kerngen.store('VMOVUPS', ACC, rows) + [
        'ADDQ $32, DI', 'DECQ R8', 'JNZ panel']


def lanes_kernel(name, rows, vnni):
    # Q8_0 rows as stored (34-byte blocks: d f16, qs[32]), one row after the
    # other, against rows activation rows: ggml_vec_dot_q8_0_q8_0's order.
    # Per block, eight int32 lanes (lane l sums quants 4l..4l+3) times
    # d_w·d_x added by FMA into eight float lanes; at the end the lanes are
    # summed upper half onto lower, then pairs. np counts weight rows.
    # A fifth activation row (AVX2, x5) is at AX, its accumulator Y13.
    r4 = min(rows, 4)
    start = loop_start('row', r4)
    if rows == 5:
        start[-1:-1] = ['\tVXORPS Y13, Y13, Y13', '\tLEAQ (R14)(R10*1), AX']
    out = prologue(name, not vnni) + start
    out.append('block:')
    body = ['VPBROADCASTW (SI), X8', 'VCVTPH2PS X8, Y8', 'VMOVDQU 2(SI), Y0', 'VPABSB Y0, Y1']
    for j in range(rows):
        r, f = (ACT + ['AX'])[j], (ACC + ['Y13'])[j]
        body += [f'VMOVDQU 8({r}), Y2', 'VPSIGNB Y0, Y2, Y2']
        if vnni:
            body += ['VPXOR Y3, Y3, Y3', 'VPDPBUSD Y2, Y1, Y3']
        else:
            body += ['VPMADDUBSW Y2, Y1, Y3', 'VPMADDWD Y15, Y3, Y3']
        # d_w·d_x: one VMULPS with an embedded broadcast where EVEX is allowed.
        scale = [f'VMULPS.BCST ({r}), Y8, Y4'] if vnni else [f'VBROADCASTSS ({r}), Y4', 'VMULPS Y8, Y4, Y4']
        body += ['VCVTDQ2PS Y3, Y3'] + scale + [f'VFMADD231PS Y4, Y3, {f}']
    adv = kerngen.advance(r4, 34, 40, 'block')
    if rows == 5:
        adv[-2:-2] = ['ADDQ $40, AX']
    body += adv
    # hsum_float_8 of each accumulator, stored at out + t·os.
    for j in range(rows):
        f = (ACC + ['Y13'])[j]
        x = 'X' + f[1:]
        body += [f'VEXTRACTF128 $1, {f}, X5', f'VADDPS X5, {x}, {x}', f'VMOVHLPS {x}, {x}, X5',
                 f'VADDPS X5, {x}, {x}', f'VMOVSHDUP {x}, X5', f'VADDSS X5, {x}, {x}']
    body += kerngen.store('VMOVSS', ['X9', 'X10', 'X11', 'X12'], r4)
    if rows == 5:
        body += ['LEAQ (AX)(R11*2), AX', 'VMOVSS X13, (AX)']
    body += ['ADDQ $4, DI', 'DECQ R8', 'JNZ row']
    out += ['\t' + x for x in body]
    return '\n'.join(out + kerngen.epilogue())


def dot_vnni1(addr, f, i, t):
    # One activation block (addr(off) its operand at byte off): one int32
    # chain from corr, then f += float(i) · (d_w · d_x). Eight activation
    # rows give eight independent chains.
    s = [f'VPBROADCASTD {addr(4)}, {i}']
    for g in range(8):
        s.append(f'VPDPBUSD.BCST {addr(8 + 4 * g)}, Y{g}, {i}')
    s += [f'VCVTDQ2PS {i}, {i}', f'VMULPS.BCST {addr(0)}, Y8, {t}', f'VFMADD231PS {t}, {i}, {f}']
    return s


# Eight activation rows (VNNI only): rows 0..4 at BX, R12, R13, R14, AX;
# 5 and 6 at AX plus one and two strides, 7 at R14 plus four; their
# accumulators.
ADDRS8 = [lambda o, r=r: f'{o}({r})' for r in ['BX', 'R12', 'R13', 'R14', 'AX']]
ADDRS8 += [lambda o: f'{o}(AX)(R10*1)', lambda o: f'{o}(AX)(R10*2)', lambda o: f'{o}(R14)(R10*4)']
ACCS8 = ['Y9', 'Y10', 'Y11', 'Y12', 'Y13', 'Y14', 'Y15', 'Y28']


def start8(name, label):
    # An eight-row kernel's header and loop start: zeroed accumulators, the
    # activation row pointers, the block count.
    out = prologue(name, False)
    out.append(f'{label}:')
    body = kerngen.zero(ACCS8)
    body += ['MOVQ DX, BX', 'LEAQ (BX)(R10*1), R12', 'LEAQ (R12)(R10*1), R13', 'LEAQ (R13)(R10*1), R14',
             'LEAQ (R14)(R10*1), AX', 'MOVQ R9, CX']
    return out + ['\t' + x for x in body] + ['block:']


def kernel8z(name, table=None, scales=None):
    # Eight activation rows on 512-bit vectors: two panels a step, panel p
    # in the low half of each vector and panel p+1 in the high half, so
    # every output lane takes the operations of the 256-bit kernels (the
    # same bits); their sixteen outputs are contiguous. An odd last panel
    # takes a 256-bit loop. R15 holds a panel's bytes (nb·144). With table
    # (a 32-byte symbol, IQ4_NL's), each nibble is looked up in it (VPSHUFB,
    # Z31) as gen-kern-iq4.py's panels are; scales is load_q4_0's.
    addrs = ADDRS8
    accs = ['Z' + a[1:] for a in ACCS8]
    out = prologue(name, False)
    out += ['\tVBROADCASTI64X4 nibmask<>(SB), Z29', '\tIMUL3Q $144, R9, R15']
    if table:
        out.append(f'\tVBROADCASTI64X4 {table}, Z31')
    out.append('pair:')
    body = ['CMPQ R8, $2', 'JB single']
    body += [f'VPXORD {a}, {a}, {a}' for a in accs]
    body += ['MOVQ DX, BX', 'LEAQ (BX)(R10*1), R12', 'LEAQ (R12)(R10*1), R13', 'LEAQ (R13)(R10*1), R14',
             'LEAQ (R14)(R10*1), AX', 'MOVQ R9, CX']
    out += ['\t' + x for x in body]
    out.append('pblock:')
    if scales:
        body = scales('(SI)', 'Y8') + scales('(SI)(R15*1)', 'Y30') + ['VINSERTF64X4 $1, Y30, Z8, Z8']
    else:
        body = ['VCVTPH2PS (SI), Y8', 'VCVTPH2PS (SI)(R15*1), Y30', 'VINSERTF64X4 $1, Y30, Z8, Z8']
    for c in range(4):
        body += [f'VMOVDQU {16 + 32 * c}(SI), Y{c}', f'VINSERTI64X4 $1, {16 + 32 * c}(SI)(R15*1), Z{c}, Z{c}']
    body += [f'VPSRLW $4, Z{c}, Z{c + 4}' for c in range(4)]
    body += [f'VPANDD Z29, Z{c}, Z{c}' for c in range(8)]
    if table:
        body += [f'VPSHUFB Z{c}, Z31, Z{c}' for c in range(8)]
    for j in range(8):
        i, t = f'Z{16 + j}', f'Z{24 + j % 4}'
        body.append(f'VPBROADCASTD {addrs[j](4)}, {i}')
        for g in range(8):
            body.append(f'VPDPBUSD.BCST {addrs[j](8 + 4 * g)}, Z{g}, {i}')
        body += [f'VCVTDQ2PS {i}, {i}', f'VMULPS.BCST {addrs[j](0)}, Z8, {t}', f'VFMADD231PS {t}, {i}, {accs[j]}']
    body.append('ADDQ $144, SI')
    body += [f'ADDQ $40, {r}' for r in ['BX', 'R12', 'R13', 'R14', 'AX']]
    body += ['DECQ CX', 'JNZ pblock']
    body += ['ADDQ R15, SI', 'MOVQ DI, AX']
    for j in range(8):
        body.append(f'VMOVUPS {accs[j]}, (AX)')
        if j < 7:
            body.append('ADDQ R11, AX')
    body += ['ADDQ $64, DI', 'SUBQ $2, R8', 'JMP pair']
    out += ['\t' + x for x in body]
    # The odd panel, on 256-bit vectors.
    out.append('single:')
    body = ['TESTQ R8, R8', 'JZ done']
    body += [f'VXORPS {a}, {a}, {a}' if int(a[1:]) < 16 else f'VPXORD {a}, {a}, {a}' for a in ACCS8]
    body += ['MOVQ DX, BX', 'LEAQ (BX)(R10*1), R12', 'LEAQ (R12)(R10*1), R13', 'LEAQ (R13)(R10*1), R14',
             'LEAQ (R14)(R10*1), AX', 'MOVQ R9, CX']
    out += ['\t' + x for x in body]
    out.append('sblock:')
    body = load_q4_0(scales)
    if table:
        body += [f'VPSHUFB Y{c}, Y31, Y{c}' for c in range(8)]
    for j in range(8):
        body += dot_vnni1(addrs[j], ACCS8[j], f'Y{16 + j}', f'Y{24 + j % 4}')
    body.append('ADDQ $144, SI')
    body += [f'ADDQ $40, {r}' for r in ['BX', 'R12', 'R13', 'R14', 'AX']]
    body += ['DECQ CX', 'JNZ sblock']
    body += ['MOVQ DI, AX']
    for j in range(8):
        body.append(f'VMOVUPS {ACCS8[j]}, (AX)')
        if j < 7:
            body.append('ADDQ R11, AX')
    out += ['\t' + x for x in body]
    return '\n'.join(out + kerngen.epilogue())


def build():
    u = kerngen.Unit('scripts/gen-kern-q.py')
    u.text(HEADER)
    for rows in (1, 2, 3, 4):
        u.kernel(f'q4_0x{rows}VNNI', 'Q8_0', 'Q4_0', kernel(
            f'q4_0x{rows}VNNI', rows, load_q4_0,
            lambda j: dot_vnni(ACT[j], ACC[j], f'Y{16 + 2 * j}', f'Y{17 + 2 * j}', f'Y{24 + j}'), 144, False))
        u.kernel(f'q4_0x{rows}AVX2', 'Q8_0', 'Q4_0', kernel(
            f'q4_0x{rows}AVX2', rows, load_q4_0, lambda j: dot_avx2(ACT[j], ACC[j], 'Y13', 'Y14'), 144, True))
    u.kernel('q4_0x8ZVNNI', 'Q8_0', 'Q4_0', kernel8z('q4_0x8ZVNNI'))
    # The VNNI kernels for four and eight activation rows are
    # gen-kern-ql.py's q8_0Pair* (512-bit vectors).
    for rows in (1, 2, 3):
        u.kernel(f'q8_0LanesX{rows}VNNI', 'Q8_0', 'Q8_0', lanes_kernel(f'q8_0LanesX{rows}VNNI', rows, True))
    for rows in (1, 2, 3, 4, 5):
        u.kernel(f'q8_0LanesX{rows}AVX2', 'Q8_0', 'Q8_0', lanes_kernel(f'q8_0LanesX{rows}AVX2', rows, False))
    u.set('q4_0VNNI', 'Q4_0', 'Q8_0', 'VNNI', 'q4_0x1VNNI', 'q4_0x4VNNI', 'q4_0x8ZVNNI',
          pack='packQ4_0', panel=True, corr=-8, x2='q4_0x2VNNI', x3='q4_0x3VNNI')
    u.set('q4_0AVX2', 'Q4_0', 'Q8_0', 'AVX2', 'q4_0x1AVX2', 'q4_0x4AVX2', pack='packQ4_0', panel=True, corr=-8,
          x2='q4_0x2AVX2', x3='q4_0x3AVX2')
    # x4 and x8 on VNNI are gen-kern-ql.py's.
    u.set('q8_0VNNI', 'Q8_0', 'Q8_0', 'VNNI', 'q8_0LanesX1VNNI', 'q8_0PairX4VNNI', 'q8_0PairX8VNNI',
          doc=Q8_0_DOC, x2='q8_0LanesX2VNNI', x3='q8_0LanesX3VNNI')
    # x5: five rows, a k = 4 speculative verification, in one pass over the
    # weights (nine rows as x4 then x5).
    u.set('q8_0AVX2', 'Q8_0', 'Q8_0', 'AVX2', 'q8_0LanesX1AVX2', 'q8_0LanesX4AVX2',
          x2='q8_0LanesX2AVX2', x3='q8_0LanesX3AVX2', x5='q8_0LanesX5AVX2')
    return u


Q8_0_DOC = """Q8_0 keeps ggml's vec_dot order (eight position lanes per row, then a
horizontal sum) rather than a panel's one accumulator per row: the
reference logits were computed that way, and through the f16 accumulator
of flash attention a last-bit difference grows to several percent of a
small model's logit spread."""


if __name__ == '__main__':
    kerngen.run(build)
