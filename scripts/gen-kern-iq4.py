#!/usr/bin/env python3
"""Writes compute/kern_iq4_amd64.s: the IQ4_NL panel kernels and the IQ4_XS row kernels.

Run from the repository root: python3 scripts/gen-kern-iq4.py > compute/kern_iq4_amd64.s
"""

import kerngen

# Q4_0's panel load and VNNI block dot products are shared with
# gen-kern-q.py (IQ4_NL uses Q4_0's panels).
q = kerngen.load('gen-kern-q.py')

KVALUES = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]

# The assembly's documentation (scripts/gen-kern-iq4.py points here):
#
# Kernels for IQ4_NL weights against Q8_0 activation blocks (blockQ8_0: d
# f32 at 0, corr i32 at 4, qs at 8; 40 bytes) and IQ4_XS weights against
# Q8_K activation blocks (blockQ8_K: d f32 at 0, qs at 4; 292 bytes). Every
# kernel has the signature
#
#     func k(w *byte, x *B, xs int, out *float32, os int, np, nb int)
#
# and computes outputs for one (x1), four (x4) or eight (x8) activation
# rows at x, x+xs, ... (nb blocks each), output t at out + t·os (bytes).
# The 4-bit indices become table values (kvalues_iq4nl) by one VPSHUFB.
#
# IQ4_NL (iq4_nlX*): np panels of eight rows in Q4_0's panel layout (see
# pack.go), output r of panel p at 4·(8p + r); per row acc = fma(float(
# sumi_b), d_w·d_x, acc) over the blocks b in order, sumi_b the exact block
# dot product (ggml's repacked iq4_nl_8x8 order, which is q4_0_8x8's). The
# VNNI kernels look up unsigned values u = v + 128 for VPDPBUSD and start
# each block's sum at corr = −128·Σq_x; the AVX2 kernels look up the signed
# values, keep |v| in registers and v on the stack, and multiply |v| by
# sign(v)·q_x with PMADDUBSW (whose 16-bit pair sums would saturate on u).
#
# IQ4_XS (iq4_xsRows*): np rows as stored (136-byte super-blocks: d f16,
# scales_h u16, scales_l[4], qs[128]), output r at 4r. Per sub-block of 32
# values |v| times sign(v)·q_x by PMADDUBSW, the 16-bit pair sums times the
# sub-block scale ls − 32 into eight int32 lanes (lane l: values 4l..4l+3 of
# each 32) with VPDPWSSD (VNNI) or PMADDWD + PADDD; per super-block the
# lanes times d_w·d_x are added by FMA into eight float lanes, summed at the
# end upper half onto lower, then pairs (ggml_vec_dot_iq4_xs_q8_K's order).
#
# The integers are exact, so the x1, x4 and x8 kernels and the AVX2 and
# VNNI ones agree bit for bit.
HEADER = kerngen.asm_head('scripts/gen-kern-iq4.py') + '''
''' + '\n'.join([
    kerngen.broadcast('nibmask', 0x0f0f0f0f0f0f0f0f),
    kerngen.broadcast('ones16', 0x0001000100010001),
])


table = kerngen.table
words = kerngen.words


def word_masks():
    # VPSHUFB masks broadcasting 16-bit word ib of each lane: bytes 2ib, 2ib+1.
    out = []
    for ib in range(8):
        q = sum(((2 * ib) | (2 * ib + 1) << 8) << (16 * j) for j in range(4))
        for i in range(4):
            out.append(f'DATA wbcast<>+{32 * ib + 8 * i}(SB)/8, ${q:#018x}')
    out.append('GLOBL wbcast<>(SB), RODATA|NOPTR, $256')
    return '\n'.join(out) + '\n'


epilogue = kerngen.epilogue


ACT = kerngen.ACT
ACC = ['Y9', 'Y10', 'Y11', 'Y12']


loop_start = kerngen.loop_start


# IQ4_NL panels (Q4_0's layout: 144 bytes a panel block, eight f16 scales
# then four 32-byte chunks of four bytes per row).

def load_nl(tbl, scales=None):
    # Scales to Y8; Y0..Y3 the low nibbles of chunks 0..3 (values 4c..4c+3),
    # Y4..Y7 the high nibbles (values 16+4c..16+4c+3), looked up in tbl
    # (scales: q.load_q4_0's).
    return q.load_q4_0(scales) + [f'VPSHUFB Y{c}, {tbl}, Y{c}' for c in range(8)]


dot_vnni = q.dot_vnni


def dot_avx2(r, f, i, t):
    # One activation block at r, AVX2: |v| in Y0..Y7, v at 32g(SP);
    # i += madd(maddubs(|v|, sign(v)·x), 1) per group of four quants.
    s = [f'VPXOR {i}, {i}, {i}']
    for g in range(8):
        s += [f'VPBROADCASTD {8 + 4 * g}({r}), {t}', f'VPSIGNB {32 * g}(SP), {t}, {t}',
              f'VPMADDUBSW {t}, Y{g}, {t}', f'VPMADDWD Y15, {t}, {t}', f'VPADDD {t}, {i}, {i}']
    s += [f'VCVTDQ2PS {i}, {i}', f'VBROADCASTSS ({r}), {t}', f'VMULPS Y8, {t}, {t}',
          f'VFMADD231PS {t}, {i}, {f}']
    return s


def nl_kernel(name, rows, avx2, tables=('iq4s', 'iq4u'), scales=None):
    # tables: the signed and unsigned (v + 128) lookup tables; scales:
    # q.load_q4_0's (gen-kern-mxfp4.py's panels).
    out, body = kerngen.args(name, 'Q8_0', 256 if avx2 else 0)
    if avx2:
        body.append('VMOVDQU ones16<>(SB), Y15')
    else:
        body.append(f'VMOVDQU {tables[1]}<>(SB), Y13')
    body += ['TESTQ R8, R8', 'JZ done']
    out += ['\t' + x for x in body]
    out += loop_start('panel', rows, ACC[:rows])
    out.append('block:')
    if avx2:
        body = [f'VMOVDQU {tables[0]}<>(SB), Y13'] + load_nl('Y13', scales)
        body += [f'VMOVDQU Y{c}, {32 * c}(SP)' for c in range(8)]
        body += [f'VPABSB Y{c}, Y{c}' for c in range(8)]
        for j in range(rows):
            body += dot_avx2(ACT[j], ACC[j], 'Y13', 'Y14')
    else:
        body = load_nl('Y13', scales)
        for j in range(rows):
            body += dot_vnni(ACT[j], ACC[j], f'Y{16 + 2 * j}', f'Y{17 + 2 * j}', f'Y{24 + j}')
    out += ['\t' + x for x in body + q.panel_end(rows, 144)]
    return '\n'.join(out + epilogue())


dot_vnni1 = q.dot_vnni1


# Eight activation rows (VNNI only): rows 0..4 at BX, R12, R13, R14, AX;
# 5 and 6 at AX plus one and two strides, 7 at R14 plus four.
ADDRS8 = [lambda o, r=r: f'{o}({r})' for r in ['BX', 'R12', 'R13', 'R14', 'AX']]
ADDRS8 += [lambda o: f'{o}(AX)(R10*1)', lambda o: f'{o}(AX)(R10*2)', lambda o: f'{o}(R14)(R10*4)']
ACCS8 = ['Y9', 'Y10', 'Y11', 'Y12', 'Y13', 'Y14', 'Y15', 'Y28']


# IQ4_XS rows. Registers: Y0 v, Y1 |v|, Y2 the sub-block's scale16 (then
# d_w), Y3 the signed table, Y4 the eight scales ls − 32 as int16 in both
# lanes, Y5..Y8 float lanes, Y9..Y12 int32 lanes, Y13/Y14 temporaries, Y15
# nibmask.

XS_FACC = ['Y5', 'Y6', 'Y7', 'Y8']
XS_IACC = ['Y9', 'Y10', 'Y11', 'Y12']


def xs_scales():
    # Y4 = [ls_0 − 32 … ls_7 − 32] (int16) in both lanes, from d (2 bytes),
    # scales_h (2) and scales_l (4) at (SI): the low nibbles of scales_l
    # interleaved with the high ones, then bits 2ib..2ib+1 of scales_h
    # (shifted to the top of word ib by a multiply, then down by 14).
    return ['VMOVQ (SI), X13', 'VPSRLW $4, X13, X14', 'VPAND X15, X13, X2', 'VPAND X15, X14, X14',
            'VPUNPCKLBW X14, X2, X2', 'VPSRLDQ $8, X2, X2', 'VPMOVZXBW X2, X2',
            'VPBROADCASTW 2(SI), X13', 'VPMULLW shmul<>(SB), X13, X13', 'VPSRLW $14, X13, X13',
            'VPSLLW $4, X13, X13', 'VPOR X13, X2, X2', 'VPSUBW w32<>(SB), X2, X2',
            'VINSERTI128 $1, X2, Y2, Y4']


def xs_kernel(name, rows, vnni):
    out, body = kerngen.args(name, 'Q8_K')
    body += ['VMOVDQU iq4s<>(SB), Y3', 'VMOVDQU nibmask<>(SB), Y15', 'TESTQ R8, R8', 'JZ done']
    out += ['\t' + x for x in body]
    out += loop_start('row', rows, XS_FACC[:rows])
    out.append('sb:')
    body = [f'VPXOR {i}, {i}, {i}' for i in XS_IACC[:rows]]
    body += xs_scales()
    for ib in range(8):
        body += [f'VMOVDQU {8 + 16 * ib}(SI), X0', 'VPSRLW $4, X0, X1', 'VINSERTI128 $1, X1, Y0, Y0',
                 'VPAND Y15, Y0, Y0', 'VPSHUFB Y0, Y3, Y0', 'VPABSB Y0, Y1',
                 f'VPSHUFB wbcast<>+{32 * ib}(SB), Y4, Y2']
        for j in range(rows):
            r, i = ACT[j], XS_IACC[j]
            t = 'Y13' if j % 2 == 0 else 'Y14'
            body += [f'VMOVDQU {4 + 32 * ib}({r}), {t}', f'VPSIGNB Y0, {t}, {t}', f'VPMADDUBSW {t}, Y1, {t}']
            if vnni:
                body.append(f'VPDPWSSD Y2, {t}, {i}')
            else:
                body += [f'VPMADDWD Y2, {t}, {t}', f'VPADDD {t}, {i}, {i}']
    body += ['VPBROADCASTW (SI), X2', 'VCVTPH2PS X2, Y2']
    for j in range(rows):
        r, i, f = ACT[j], XS_IACC[j], XS_FACC[j]
        body += [f'VCVTDQ2PS {i}, {i}', f'VBROADCASTSS ({r}), Y13', 'VMULPS Y2, Y13, Y13',
                 f'VFMADD231PS Y13, {i}, {f}']
    body += kerngen.advance(rows, 136, 292, 'sb')
    # hsum_float_8 of each accumulator, stored at out + t·os.
    for j in range(rows):
        f = XS_FACC[j]
        x = 'X' + f[1:]
        body += [f'VEXTRACTF128 $1, {f}, X14', f'VADDPS X14, {x}, {x}', f'VMOVHLPS {x}, {x}, X14',
                 f'VADDPS X14, {x}, {x}', f'VMOVSHDUP {x}, X14', f'VADDSS X14, {x}, {x}']
    body += kerngen.store('VMOVSS', ['X5', 'X6', 'X7', 'X8'], rows)
    body += ['ADDQ $4, DI', 'DECQ R8', 'JNZ row']
    out += ['\t' + x for x in body]
    return '\n'.join(out + epilogue())


def xs_kernel8(name):
    # xs_kernel for eight activation rows (VNNI only; addressing as
    # nl_kernel8): float lanes in Y16..Y23, int32 lanes in Y24..Y31,
    # temporaries Y5..Y12 (VPSIGNB has no EVEX form).
    facc = [f'Y{16 + j}' for j in range(8)]
    iacc = [f'Y{24 + j}' for j in range(8)]
    out, body = kerngen.args(name, 'Q8_K')
    body += ['VMOVDQU iq4s<>(SB), Y3', 'VMOVDQU nibmask<>(SB), Y15', 'TESTQ R8, R8', 'JZ done']
    out += ['\t' + x for x in body]
    out.append('row:')
    body = [f'VPXORD {a}, {a}, {a}' for a in facc]
    body += ['MOVQ DX, BX', 'LEAQ (BX)(R10*1), R12', 'LEAQ (R12)(R10*1), R13', 'LEAQ (R13)(R10*1), R14',
             'LEAQ (R14)(R10*1), AX', 'MOVQ R9, CX']
    out += ['\t' + x for x in body] + ['sb:']
    body = [f'VPXORD {i}, {i}, {i}' for i in iacc]
    body += xs_scales()
    for ib in range(8):
        body += [f'VMOVDQU {8 + 16 * ib}(SI), X0', 'VPSRLW $4, X0, X1', 'VINSERTI128 $1, X1, Y0, Y0',
                 'VPAND Y15, Y0, Y0', 'VPSHUFB Y0, Y3, Y0', 'VPABSB Y0, Y1',
                 f'VPSHUFB wbcast<>+{32 * ib}(SB), Y4, Y2']
        for j in range(8):
            t = f'Y{5 + j}'
            body += [f'VMOVDQU {ADDRS8[j](4 + 32 * ib)}, {t}', f'VPSIGNB Y0, {t}, {t}', f'VPMADDUBSW {t}, Y1, {t}',
                     f'VPDPWSSD Y2, {t}, {iacc[j]}']
    body += ['VPBROADCASTW (SI), X2', 'VCVTPH2PS X2, Y2']
    for j in range(8):
        i, t = iacc[j], f'Y{5 + j}'
        body += [f'VCVTDQ2PS {i}, {i}', f'VMULPS.BCST {ADDRS8[j](0)}, Y2, {t}', f'VFMADD231PS {t}, {i}, {facc[j]}']
    body += ['ADDQ $136, SI'] + [f'ADDQ $292, {r}' for r in ['BX', 'R12', 'R13', 'R14', 'AX']]
    body += ['DECQ CX', 'JNZ sb', 'MOVQ DI, AX']
    for j, f in enumerate(facc):
        x = 'X' + f[1:]
        body += [f'VEXTRACTF32X4 $1, {f}, X5', f'VADDPS X5, {x}, {x}', f'VMOVHLPS {x}, {x}, X5',
                 f'VADDPS X5, {x}, {x}', f'VMOVSHDUP {x}, X5', f'VADDSS X5, {x}, {x}', f'VMOVSS {x}, (AX)']
        if j < 7:
            body.append('ADDQ R11, AX')
    body += ['ADDQ $4, DI', 'DECQ R8', 'JNZ row']
    out += ['\t' + x for x in body]
    return '\n'.join(out + epilogue())


def build():
    u = kerngen.Unit('scripts/gen-kern-iq4.py')
    u.text(HEADER)
    u.text(table('iq4s', KVALUES))
    u.text(table('iq4u', [v + 128 for v in KVALUES]))
    u.text(words('shmul', [1 << (14 - 2 * i) for i in range(8)]))
    u.text(words('w32', [32] * 8))
    u.text(word_masks())
    for rows in (1, 2, 3, 4):
        u.kernel(f'iq4_nlX{rows}VNNI', 'Q8_0', 'IQ4_NL', nl_kernel(f'iq4_nlX{rows}VNNI', rows, False))
        u.kernel(f'iq4_nlX{rows}AVX2', 'Q8_0', 'IQ4_NL', nl_kernel(f'iq4_nlX{rows}AVX2', rows, True))
    u.kernel('iq4_nlX8VNNI', 'Q8_0', 'IQ4_NL', q.kernel8z('iq4_nlX8VNNI', table='iq4u<>(SB)'))
    for rows in (1, 2, 3, 4):
        u.kernel(f'iq4_xsRowsX{rows}VNNI', 'Q8_K', 'IQ4_XS', xs_kernel(f'iq4_xsRowsX{rows}VNNI', rows, True))
        u.kernel(f'iq4_xsRowsX{rows}AVX2', 'Q8_K', 'IQ4_XS', xs_kernel(f'iq4_xsRowsX{rows}AVX2', rows, False))
    u.kernel('iq4_xsRowsX8VNNI', 'Q8_K', 'IQ4_XS', xs_kernel8('iq4_xsRowsX8VNNI'))
    u.set('iq4_nlVNNI', 'IQ4_NL', 'Q8_0', 'VNNI', 'iq4_nlX1VNNI', 'iq4_nlX4VNNI', 'iq4_nlX8VNNI',
          pack='packQ4_0', panel=True, corr=-128, x2='iq4_nlX2VNNI', x3='iq4_nlX3VNNI',
          doc="IQ4_NL shares Q4_0's block layout, so its panels are Q4_0's. The VNNI\n"
              "kernels read unsigned table values v + 128 (corr −128); the AVX2 ones\n"
              "signed values and need no correction.")
    u.set('iq4_nlAVX2', 'IQ4_NL', 'Q8_0', 'AVX2', 'iq4_nlX1AVX2', 'iq4_nlX4AVX2', pack='packQ4_0', panel=True,
          x2='iq4_nlX2AVX2', x3='iq4_nlX3AVX2')
    u.set('iq4_xsVNNI', 'IQ4_XS', 'Q8_K', 'VNNI', 'iq4_xsRowsX1VNNI', 'iq4_xsRowsX4VNNI', 'iq4_xsRowsX8VNNI',
          x2='iq4_xsRowsX2VNNI', x3='iq4_xsRowsX3VNNI', doc='IQ4_XS rows are read as stored.')
    u.set('iq4_xsAVX2', 'IQ4_XS', 'Q8_K', 'AVX2', 'iq4_xsRowsX1AVX2', 'iq4_xsRowsX4AVX2',
          x2='iq4_xsRowsX2AVX2', x3='iq4_xsRowsX3AVX2')
    return u


if __name__ == '__main__':
    kerngen.run(build)
