#!/usr/bin/env python3
"""Writes compute/kern_mxfp4_amd64.s: the MXFP4 panel and in-place kernels.

Run from the repository root: python3 scripts/gen-kern-mxfp4.py > compute/kern_mxfp4_amd64.s

MXFP4 is IQ4_NL with another table (kvalues_mxfp4) and a power-of-two
scale per block (E8M0) in place of an f16 one, so the panel kernels are
gen-kern-iq4.py's IQ4_NL panel kernels (and gen-kern-q.py's eight-row
one) with that table and bf16 scales; the in-place kernels read the rows
as stored.
"""

import kerngen

q = kerngen.load('gen-kern-q.py')
iq4 = kerngen.load('gen-kern-iq4.py')

KVALUES = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12]

# A panel block is Q4_0's (144 bytes) with the eight rows' scales 2^(e−128)
# as bf16 in place of f16 (the float32 has no low bits, so bf16 holds it
# exactly, subnormals included; see packMXFP4).

# The assembly's documentation (scripts/gen-kern-mxfp4.py points here):
#
# Kernels for MXFP4 weights against Q8_0 activation blocks (blockQ8_0: d
# f32 at 0, corr i32 at 4, qs at 8; 40 bytes), with the signature
#
#     func k(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)
#
# computing outputs for one (x1), four (x4) or eight (x8) activation rows at
# x, x+xs, ... (nb blocks each), output t at out + t·os (bytes). The
# weights are np panels of eight rows (packMXFP4: a 144-byte panel block is
# the eight rows' scales d_w = 2^(e−128) as bf16, exact, then four 32-byte
# chunks of four quant bytes per row, as Q4_0's panels), output r of panel
# p at 4·(8p + r); per row acc = fma(float(sumi_b), d_w·d_x, acc) over the
# blocks b in order, sumi_b the exact block dot product (ggml's repacked
# mxfp4_8x8 order, which is q4_0_8x8's). The 4-bit codes become table
# values (kvalues_mxfp4) by one VPSHUFB, as IQ4_NL's do (gen-kern-iq4.py).
# The in-place kernels (mxfp4InPlace*) read the rows as stored (17-byte
# blocks: e, qs[16]) and build d_w from e's bits: (e − 1)<<23, or
# (e + 1)<<21 for the subnormal e < 2 (ggml_e8m0_to_fp32_half). The VNNI
# kernels look up u = v + 128 and start each block's sum at corr =
# −128·Σq_x; the AVX2 ones multiply |v| by sign(v)·q_x with PMADDUBSW.
#
# The integers are exact, so the x1, x4 and x8 kernels and the AVX2 and
# VNNI ones agree bit for bit.
HEADER = kerngen.asm_head('scripts/gen-kern-mxfp4.py') + '''
''' + '\n'.join([
    kerngen.broadcast('nibmask', 0x0f0f0f0f0f0f0f0f),
    kerngen.broadcast('ones16', 0x0001000100010001),
    kerngen.broadcast('ones32', 0x0000000100000001),
    kerngen.broadcast('exp1', 0x0080000000800000),
])


def bf16_scales(addr, dst):
    # The eight bf16 scales at addr as float32 into dst.
    return [f'VPMOVZXWD {addr}, {dst}', f'VPSLLD $16, {dst}, {dst}']


def e8m0_lanes(dst):
    # e8m0 on the eight exponents already in dst's int32 lanes.
    return [f'VPSLLD $23, {dst}, Y0', 'VPSUBD exp1<>(SB), Y0, Y0',
            f'VPADDD ones32<>(SB), {dst}, Y1', 'VPSLLD $21, Y1, Y1',
            f'VPCMPGTD ones32<>(SB), {dst}, {dst}', f'VPBLENDVB {dst}, Y0, Y1, {dst}']


# In-place kernels: the rows as the file stores them (17-byte blocks),
# eight at a time. Each block's eight exponents are gathered by VPINSRB and
# its quant bytes transposed into the panel layout in registers (two rows a
# vector, then a 4×4 dword transpose per 128-bit lane), after which the
# arithmetic is the panel kernels'. Row k of the eight at ROWS[k](offset):
# R13, R14, R15 point at rows 0, 3 and 6's current block, AX is the row
# stride (nb·17). A last group of fewer than eight rows runs one row at a
# time with AX = 0 (all eight lanes the same row) and stores lane 0.
ROWS = [lambda o, b=b, i=i: f'{o}({b})' + (f'(AX*{i})' if i else '')
        for b in ('R13', 'R14', 'R15') for i in (0, 1, 2)][:8]
# Activation rows: BX, BX + xs, BX + 2xs, R12 = BX + 3xs, and for eight
# rows (VNNI) R12 + xs, R12 + 2xs, DX = BX + 6xs, DX + xs (the x argument
# is reloaded from the frame).
XROWS = [lambda o: f'{o}(BX)', lambda o: f'{o}(BX)(R10*1)', lambda o: f'{o}(BX)(R10*2)', lambda o: f'{o}(R12)',
         lambda o: f'{o}(R12)(R10*1)', lambda o: f'{o}(R12)(R10*2)', lambda o: f'{o}(DX)', lambda o: f'{o}(DX)(R10*1)']


def load_inplace(tbl):
    # Scales to Y8, then the panel kernels' Y0..Y7 (see q.load_q4_0),
    # looked up in tbl.
    s = [f'VPINSRB ${k}, {ROWS[k](0)}, X8, X8' for k in range(8)] + ['VPMOVZXBD X8, Y8'] + e8m0_lanes('Y8')
    for k in range(4):
        s += [f'VMOVDQU {ROWS[k](1)}, X{k}', f'VINSERTI128 $1, {ROWS[k + 4](1)}, Y{k}, Y{k}']
    s += ['VPUNPCKLDQ Y1, Y0, Y4', 'VPUNPCKHDQ Y1, Y0, Y5', 'VPUNPCKLDQ Y3, Y2, Y6', 'VPUNPCKHDQ Y3, Y2, Y7',
          'VPUNPCKLQDQ Y6, Y4, Y0', 'VPUNPCKHQDQ Y6, Y4, Y1', 'VPUNPCKLQDQ Y7, Y5, Y2', 'VPUNPCKHQDQ Y7, Y5, Y3']
    s += [f'VPSRLW $4, Y{c}, Y{c + 4}' for c in range(4)]
    s += [f'VPAND nibmask<>(SB), Y{c}, Y{c}' for c in range(8)]
    return s + [f'VPSHUFB Y{c}, {tbl}, Y{c}' for c in range(8)]


def dot_vnni(addr, f, i0, i1, t):
    # q.dot_vnni with the activation block at addr(offset).
    s = [f'VPBROADCASTD {addr(4)}, {i0}', f'VPXORD {i1}, {i1}, {i1}']
    for g in range(8):
        s.append(f'VPDPBUSD.BCST {addr(8 + 4 * g)}, Y{g}, {i0 if g % 2 == 0 else i1}')
    return s + [f'VPADDD {i1}, {i0}, {i0}', f'VCVTDQ2PS {i0}, {i0}',
                f'VMULPS.BCST {addr(0)}, Y8, {t}', f'VFMADD231PS {t}, {i0}, {f}']


def dot_avx2(addr, f, i, t):
    # iq4.dot_avx2 with the activation block at addr(offset).
    s = [f'VPXOR {i}, {i}, {i}']
    for g in range(8):
        s += [f'VPBROADCASTD {addr(8 + 4 * g)}, {t}', f'VPSIGNB {32 * g}(SP), {t}, {t}',
              f'VPMADDUBSW {t}, Y{g}, {t}', f'VPMADDWD Y15, {t}, {t}', f'VPADDD {t}, {i}, {i}']
    return s + [f'VCVTDQ2PS {i}, {i}', f'VBROADCASTSS {addr(0)}, {t}', f'VMULPS Y8, {t}, {t}',
                f'VFMADD231PS {t}, {i}, {f}']


def inplace_kernel(name, rows, avx2):
    accs = ['Y9', 'Y10', 'Y11', 'Y12', 'Y14', 'Y15', 'Y30', 'Y31'][:rows]
    out = kerngen.prologue(name, 'Q8_0', 256 if avx2 else 0,
                           ['IMUL3Q $17, R9, AX', 'VMOVDQU ones16<>(SB), Y15' if avx2 else 'VMOVDQU mxfp4u<>(SB), Y13'])

    def blocks(label):
        # One pass over the blocks of the eight rows at R13, R14, R15.
        b = kerngen.zero(accs)
        b.append('MOVQ x+8(FP), BX' if rows == 8 else 'MOVQ DX, BX')
        if rows >= 4:
            b += ['LEAQ (BX)(R10*2), R12', 'ADDQ R10, R12']
        if rows == 8:
            b += ['LEAQ (R12)(R10*2), DX', 'ADDQ R10, DX']
        b.append('MOVQ R9, CX')
        o = ['\t' + x for x in b] + [f'{label}:']
        if avx2:
            b = ['VMOVDQU mxfp4s<>(SB), Y13'] + load_inplace('Y13')
            b += [f'VMOVDQU Y{c}, {32 * c}(SP)' for c in range(8)]
            b += [f'VPABSB Y{c}, Y{c}' for c in range(8)]
            for j in range(rows):
                b += dot_avx2(XROWS[j], accs[j], 'Y13', 'Y14')
        else:
            b = load_inplace('Y13')
            for j in range(rows):
                b += dot_vnni(XROWS[j], accs[j], f'Y{16 + 2 * (j % 4)}', f'Y{17 + 2 * (j % 4)}', f'Y{24 + j % 4}')
        b += ['ADDQ $17, R13', 'ADDQ $17, R14', 'ADDQ $17, R15', 'ADDQ $40, BX']
        if rows >= 4:
            b.append('ADDQ $40, R12')
        if rows == 8:
            b.append('ADDQ $40, DX')
        b += ['DECQ CX', f'JNZ {label}']
        return o + ['\t' + x for x in b]

    def store(op):
        # accumulator j at out + j·os (R13 is free once the blocks are done).
        x = accs if op == 'VMOVUPS' else ['X' + a[1:] for a in accs]
        s = [f'{op} {x[0]}, (DI)']
        if rows >= 4:
            s += [f'{op} {x[1]}, (DI)(R11*1)', f'{op} {x[2]}, (DI)(R11*2)', 'LEAQ (DI)(R11*2), R13',
                  f'{op} {x[3]}, (R13)(R11*1)']
        if rows == 8:
            s += [f'{op} {x[4]}, (DI)(R11*4)', 'ADDQ R11, R13', f'{op} {x[5]}, (R13)(R11*2)',
                  'LEAQ (R13)(R11*2), R13', 'ADDQ R11, R13', f'{op} {x[6]}, (R13)', f'{op} {x[7]}, (R13)(R11*1)']
        return s

    out.append('group:')
    body = ['CMPQ R8, $8', 'JB tail', 'MOVQ SI, R13', 'LEAQ (SI)(AX*2), R14', 'ADDQ AX, R14',
            'LEAQ (R14)(AX*2), R15', 'ADDQ AX, R15']
    out += ['\t' + x for x in body] + blocks('gblock')
    body = store('VMOVUPS') + ['ADDQ $32, DI', 'LEAQ (SI)(AX*8), SI', 'SUBQ $8, R8', 'JMP group']
    out += ['\t' + x for x in body]
    out.append('tail:')
    body = ['TESTQ R8, R8', 'JZ done', 'XORQ AX, AX', 'MOVQ SI, R13', 'MOVQ SI, R14', 'MOVQ SI, R15']
    out += ['\t' + x for x in body] + blocks('tblock')
    body = store('VMOVSS') + ['ADDQ $4, DI', 'IMUL3Q $17, R9, AX', 'ADDQ AX, SI', 'DECQ R8', 'JMP tail']
    out += ['\t' + x for x in body]
    return '\n'.join(out + kerngen.epilogue())


def build():
    u = kerngen.Unit('scripts/gen-kern-mxfp4.py')
    u.text(HEADER)
    u.text(kerngen.table('mxfp4s', KVALUES))
    u.text(kerngen.table('mxfp4u', [v + 128 for v in KVALUES]))
    for rows in (1, 2, 3, 4):
        for isa, avx2 in (('VNNI', False), ('AVX2', True)):
            name = f'mxfp4X{rows}{isa}'
            u.kernel(name, 'Q8_0', 'MXFP4', iq4.nl_kernel(name, rows, avx2, ('mxfp4s', 'mxfp4u'), bf16_scales))
    u.kernel('mxfp4X8VNNI', 'Q8_0', 'MXFP4', q.kernel8z('mxfp4X8VNNI', table='mxfp4u<>(SB)', scales=bf16_scales))
    for rows in (1, 4):
        for isa, avx2 in (('VNNI', False), ('AVX2', True)):
            name = f'mxfp4InPlaceX{rows}{isa}'
            u.kernel(name, 'Q8_0', 'MXFP4', inplace_kernel(name, rows, avx2))
    u.kernel('mxfp4InPlaceX8VNNI', 'Q8_0', 'MXFP4', inplace_kernel('mxfp4InPlaceX8VNNI', 8, False))
    u.set('mxfp4VNNI', 'MXFP4', 'Q8_0', 'VNNI', 'mxfp4X1VNNI', 'mxfp4X4VNNI', 'mxfp4X8VNNI',
          pack='packMXFP4', panel=True, corr=-128, x2='mxfp4X2VNNI', x3='mxfp4X3VNNI',
          doc='The VNNI kernels read unsigned table values v + 128 (corr −128); the\n'
              'AVX2 ones signed values and need no correction.')
    u.set('mxfp4AVX2', 'MXFP4', 'Q8_0', 'AVX2', 'mxfp4X1AVX2', 'mxfp4X4AVX2', pack='packMXFP4', panel=True,
          x2='mxfp4X2AVX2', x3='mxfp4X3AVX2')
    u.set('mxfp4InPlaceVNNI', 'MXFP4', 'Q8_0', 'VNNI', 'mxfp4InPlaceX1VNNI', 'mxfp4InPlaceX4VNNI',
          'mxfp4InPlaceX8VNNI', corr=-128, table='inplace',
          doc="The in-place kernels: rows read as the file stores them, the panel\n"
              "kernels' arithmetic (np counts rows, output r at 4r).")
    u.set('mxfp4InPlaceAVX2', 'MXFP4', 'Q8_0', 'AVX2', 'mxfp4InPlaceX1AVX2', 'mxfp4InPlaceX4AVX2',
          table='inplace')
    return u


if __name__ == '__main__':
    kerngen.run(build)
