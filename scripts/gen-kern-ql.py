#!/usr/bin/env python3
"""Writes compute/kern_ql_amd64.s: row kernels for Q5_0, Q4_1 and Q5_1 weights.

Run from the repository root: python3 scripts/gen-kern-ql.py > compute/kern_ql_amd64.s
"""

import kerngen

q = kerngen.load('gen-kern-q.py')

# The assembly's documentation (scripts/gen-kern-ql.py points here):
#
# Row kernels for the legacy 32-value weight types with a fifth bit or a
# min, and 512-bit forms of the Q8_0 row kernels of kern_q_amd64.s: Q5_0
# and Q8_0 against Q8_0 activation blocks (blockQ8_0: d f32 at 0, corr
# i32 at 4, qs at 8; 40 bytes), Q4_1 and Q5_1 against Q8_1 activation
# blocks (blockQ8_1: d f32 at 0, s f32 at 4, qs at 8; 40 bytes). Every
# kernel has the signature
#
#     func k(w *byte, x *B, xs int, out *float32, os int, np, nb int)
#
# and computes np weight rows as stored (nb blocks each; output r at 4r)
# against one to four (x1..x4) or eight (x8, VNNI only) activation rows at
# x, x+xs, ... (output t at out + t·os bytes).
#
# The order is ggml_vec_dot_q5_0_q8_0's, _q4_1_q8_1's and _q5_1_q8_1's on
# x86, as in vecdot.go: per block eight int32 lanes (lane l sums quants
# 4l..4l+3) times d_w·d_x added by FMA into eight float lanes, summed at the
# end upper half onto lower, then pairs; Q4_1 and Q5_1 add m_w·s_x per block
# by FMA into a scalar, added to that sum at the end. Q5_0 weights are
# signed (q − 16) and multiply |w| by x with w's sign (x8: x + 128 by w,
# less 128·Σw); Q4_1 and Q5_1 quants are unsigned and multiply x directly.
#
# The VNNI x4 and x8 kernels take two weight rows at a time in 512-bit
# vectors, one output's eight lanes in each half. x1, x4 and x8 kernels do
# the same float operations per output lane, and the AVX2 and VNNI kernels
# compute the same integers, so all of them agree bit for bit.
HEADER = kerngen.asm_head('scripts/gen-kern-ql.py') + '''
''' + '\n'.join([
    kerngen.broadcast('nibmask', 0x0f0f0f0f0f0f0f0f),
    kerngen.broadcast('ones16', 0x0001000100010001),
]) + '''
// bitshuf, bitmask, allones: ggml's bytes_from_bits_32 (byte j is 0xff
// where bit j of qh is set).
''' + '\n'.join([
    kerngen.data('bitshuf', [0x0000000000000000, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303]),
    kerngen.broadcast('bitmask', 0x7fbfdfeff7fbfdfe),
    kerngen.broadcast('allones', 0xffffffffffffffff),
]) + '''
// bit4: the fifth bit's value (and 0x80 >> 3); hi4: 0xf0 (a nibble minus
// 16, as a byte).
''' + '\n'.join([
    kerngen.broadcast('bit4', 0x1010101010101010),
    kerngen.broadcast('hi4', 0xf0f0f0f0f0f0f0f0),
])

# Weight block layouts: size in bytes; offsets of qh (fifth bits), qs and m
# (the f16 min); signed: values are q − 16 (Q5_0), else unsigned quants
# with a min.
TYPES = {
    'q5_0': dict(size=22, qh=2, qs=6, m=None, signed=True),
    'q4_1': dict(size=20, qh=None, qs=4, m=2, signed=False),
    'q5_1': dict(size=24, qh=4, qs=8, m=2, signed=False),
}
# Q8_0 (d f16, qs int8[32]): only its 512-bit kernels are here (the rest
# are gen-kern-q.py's q8_0Lanes*, the same operations).
Q8_0 = dict(size=34, qh=None, qs=2, m=None, signed=True, q8=True)


def unpack(t, vnni, one=False):
    # One weight block at SI: d_w in all lanes of Y8, or with one (a single
    # activation row) in X8's lane 0 only; m_w in X7's lane 0 (Q4_1, Q5_1);
    # the 32 values in Y0 in order, as signed q − 16 (Q5_0, with
    # |w| in Y1) or unsigned quants. Y2 is scratch.
    if one:  # d_w, then m_w if any, from one conversion
        s = ['VCVTPH2PS (SI), X8'] + (['VMOVSHDUP X8, X7'] if t['m'] is not None else [])
    else:
        s = ['VPBROADCASTW (SI), X8', 'VCVTPH2PS X8, Y8']
    if t['m'] is not None and not one:
        s += [f'VPBROADCASTW {t["m"]}(SI), X7', 'VCVTPH2PS X7, X7']
    if t.get('q8'):
        s.append(f'VMOVDQU {t["qs"]}(SI), Y0')
    else:  # low nibbles are values 0..15, high nibbles 16..31
        s += [f'VMOVDQU {t["qs"]}(SI), X0', 'VPSRLW $4, X0, X2', 'VINSERTI128 $1, X2, Y0, Y0',
              'VPAND nibmask<>(SB), Y0, Y0']
    if t['qh'] is not None:
        if vnni:  # bit j of qh masks byte j
            s.append(f'KMOVD {t["qh"]}(SI), K1')
            if t['signed']:  # nibble − 16 where the bit is clear
                s += ['KNOTD K1, K1', 'VPADDB hi4<>(SB), Y0, K1, Y0']
            else:
                s.append('VPADDB bit4<>(SB), Y0, K1, Y0')
        else:
            s += [f'VPBROADCASTD {t["qh"]}(SI), Y2', 'VPSHUFB bitshuf<>(SB), Y2, Y2',
                  'VPOR bitmask<>(SB), Y2, Y2', 'VPCMPEQB allones<>(SB), Y2, Y2']
            if t['signed']:  # nibble | 0xf0 where the bit is clear (ggml's q5_0)
                s.append('VPANDN hi4<>(SB), Y2, Y2')
            else:
                s.append('VPAND bit4<>(SB), Y2, Y2')
            s.append('VPOR Y2, Y0, Y0')
    if t['signed']:
        s.append('VPABSB Y0, Y1')
    return s


def dot(t, vnni, a, f, s, x, i, tmp, one=False):
    # One activation row's block (a(off) its operand at byte off): lanes i
    # (x scratch for Q5_0's signed activations), f += float(i)·(d_w·d_x);
    # for Q4_1 and Q5_1 also s += m_w·s_x. one: d_w is in X8's lane 0 (see
    # unpack), and the product is a scalar one, then broadcast.
    if t['signed']:
        body = [f'VMOVDQU {a(8)}, {x}', f'VPSIGNB Y0, {x}, {x}']
        src, u = x, 'Y1'
    else:
        body, src, u = [], a(8), 'Y0'
    if vnni:
        body += [f'VPXORD {i}, {i}, {i}', f'VPDPBUSD {src}, {u}, {i}']
        scale = [f'VMULPS.BCST {a(0)}, Y8, {tmp}']
    else:
        body += [f'VPMADDUBSW {src}, {u}, {i}', f'VPMADDWD Y15, {i}, {i}']
        scale = [f'VBROADCASTSS {a(0)}, {tmp}', f'VMULPS Y8, {tmp}, {tmp}']
    if one:
        scale = [f'VMULSS {a(0)}, X8, X{tmp[1:]}', f'VBROADCASTSS X{tmp[1:]}, {tmp}']
    body += [f'VCVTDQ2PS {i}, {i}'] + scale + [f'VFMADD231PS {tmp}, {i}, {f}']
    if not t['signed']:
        body.append(f'VFMADD231SS {a(4)}, X7, {s}')
    return body


def finish(t, accs, sums):
    # hsum_float_8 of each accumulator (plus its min sum), stored at
    # out + t·os; AX walks the outputs.
    body = ['MOVQ DI, AX']
    for j, f in enumerate(accs):
        x = 'X' + f[1:]
        body += [f'VEXTRACTF128 $1, {f}, X5' if int(f[1:]) < 16 else f'VEXTRACTF32X4 $1, {f}, X5',
                 f'VADDPS X5, {x}, {x}', f'VMOVHLPS {x}, {x}, X5',
                 f'VADDPS X5, {x}, {x}', f'VMOVSHDUP {x}, X5', f'VADDSS X5, {x}, {x}']
        if not t['signed']:
            body.append(f'VADDSS {sums[j]}, {x}, {x}')
        body.append(f'VMOVSS {x}, (AX)')
        if j < len(accs) - 1:
            body.append('ADDQ R11, AX')
    return body


# Min sums of the x1 and x4 kernels (Y1 is free without Q5_0's |w|).
SUMS4 = ['X1', 'X6', 'X13', 'X14']
# Eight activation rows: accumulators and addressing as gen-kern-q.py's
# eight-row kernels; min sums.
SUMS8 = ['X16', 'X17', 'X18', 'X19', 'X29', 'X30', 'X31', 'X1']


def header(name, t, ones):
    # q.prologue with the activation block type of t.
    return q.prologue(name, ones, sig(t))


def sig(t):
    # The kernel signature of weight type t.
    return 'Q8_0' if t['signed'] else 'Q8_1'


def kernel(name, t, rows, vnni):
    # x1..x4 kernels (x4 AVX2 only): activation rows at BX, R12, R13, R14.
    out = header(name, t, not vnni) + q.loop_start('row', rows)
    sums = SUMS4[:rows] if not t['signed'] else []
    out += ['\t' + x for x in kerngen.zero(sums)]
    out.append('block:')
    body = unpack(t, vnni, rows == 1)
    for j in range(rows):
        r = q.ACT[j]
        body += dot(t, vnni, lambda o, r=r: f'{o}({r})', q.ACC[j], SUMS4[j], 'Y2', 'Y3', 'Y4', rows == 1)
    body.append(f'ADDQ ${t["size"]}, SI')
    body += [f'ADDQ $40, {a}' for a in q.ACT[:rows]]
    body += ['DECQ CX', 'JNZ block']
    body += finish(t, q.ACC[:rows], SUMS4)
    body += ['ADDQ $4, DI', 'DECQ R8', 'JNZ row']
    out += ['\t' + x for x in body]
    out += kerngen.epilogue()
    return '\n'.join(out)


def kernel8(name, t):
    # Eight activation rows (VNNI only): the weight block's unpacking is
    # shared by twice as many rows as x4's.
    #
    # Q5_0 does without the sign trick (a VPSIGNB per row): its lanes are
    # those of (x + 128)·w, each product in VPDPBUSD's range, from a start
    # at −128·Σw, made once per weight block in Y1 (Y29 holds 0x80 bytes,
    # Y30 zero). The integers are the same.
    out = q.start8(name, 'row')[:-1]  # up to 'block:'
    if t['signed']:
        out += ['\tVPBROADCASTD bit4<>(SB), Y29', '\tVPSLLW $3, Y29, Y29', '\tVPXORD Y30, Y30, Y30']
    else:
        out[0] = out[0].replace('blockQ8_0', 'blockQ8_1')
        out += ['\t' + x for x in kerngen.zero(SUMS8)]
    out.append('block:')
    body = unpack(t, True)
    if t['signed']:
        assert body[-1] == 'VPABSB Y0, Y1'
        body[-1:] = ['VPXORD Y1, Y1, Y1', 'VPDPBUSD Y0, Y29, Y1', 'VPSUBD Y1, Y30, Y1']
    for j in range(8):
        a, f, i, tmp = q.ADDRS8[j], q.ACCS8[j], f'Y{20 + j % 4}', f'Y{24 + j % 4}'
        if t['signed']:
            x = f'Y{2 + j % 4}'
            body += [f'VPXORD {a(8)}, Y29, {x}', f'VMOVDQA32 Y1, {i}', f'VPDPBUSD Y0, {x}, {i}',
                     f'VCVTDQ2PS {i}, {i}', f'VMULPS.BCST {a(0)}, Y8, {tmp}', f'VFMADD231PS {tmp}, {i}, {f}']
        else:
            body += dot(t, True, a, f, SUMS8[j], None, i, tmp)
    body.append(f'ADDQ ${t["size"]}, SI')
    body += [f'ADDQ $40, {r}' for r in ['BX', 'R12', 'R13', 'R14', 'AX']]
    body += ['DECQ CX', 'JNZ block']
    body += finish(t, q.ACCS8, SUMS8)
    body += ['ADDQ $4, DI', 'DECQ R8', 'JNZ row']
    out += ['\t' + x for x in body]
    out += kerngen.epilogue()
    return '\n'.join(out)


def unpack2(t):
    # Two weight rows' blocks at SI and SI+R9, in the two 256-bit halves of
    # Z0 (values as unpack's), Z8 (d_w of each half's row) and Z7 (m_w).
    # Z2..Z5 are scratch; Z6 holds bit4 broadcast (Q5_1) or hi4 (Q5_0).
    # Q5_0: Z1 gets −128·Σw per lane (see kernel8), from Z29 (0x80 bytes)
    # and Z30 (zero).
    s = []
    for reg, off in [('8', 0)] + ([('7', t['m'])] if t['m'] is not None else []):
        s += [f'VPBROADCASTW {off}(SI), X{reg}', f'VCVTPH2PS X{reg}, Y{reg}',
              f'VPBROADCASTW {off}(SI)(R9*1), X2', 'VCVTPH2PS X2, Y2', f'VINSERTF64X4 $1, Y2, Z{reg}, Z{reg}']
    if t.get('q8'):
        s += [f'VMOVDQU {t["qs"]}(SI), Y0', f'VINSERTI64X4 $1, {t["qs"]}(SI)(R9*1), Z0, Z0']
    else:
        # [qs_r, qs_r+1] and its nibbles shifted down, then the 128-bit
        # lanes in the order low r, high r, low r+1, high r+1.
        s += [f'VMOVDQU {t["qs"]}(SI), X0', f'VINSERTI128 $1, {t["qs"]}(SI)(R9*1), Y0, Y0', 'VPSRLW $4, Y0, Y2',
              'VINSERTI64X4 $1, Y2, Z0, Z3', 'VSHUFI64X2 $0xd8, Z3, Z3, Z0', 'VPANDD.BCST nibmask<>(SB), Z0, Z0']
    if t['qh'] is not None:
        s += [f'KMOVD {t["qh"]}(SI), K1', f'KMOVD {t["qh"]}(SI)(R9*1), K2', 'KUNPCKDQ K1, K2, K3']
        if t['signed']:  # nibble − 16 where the bit is clear
            s.append('KNOTQ K3, K3')
        s.append('VPADDB Z6, Z0, K3, Z0')
    if t['signed']:
        s += ['VPXORD Z1, Z1, Z1', 'VPDPBUSD Z0, Z29, Z1', 'VPSUBD Z1, Z30, Z1']
    return s


def kernelz(name, t, rows):
    # Four or eight activation rows against two weight rows at a time
    # (VNNI only): each 512-bit vector holds an output's eight lanes for
    # each of the two weight rows, so every instruction after the unpacking
    # serves two outputs, with the same operations per lane as the 256-bit
    # kernels. An odd last weight row takes the 256-bit loop. R9 is the row
    # stride (nb is reloaded from the frame).
    out = header(name, t, False)
    out.append(f'\tIMULQ ${t["size"]}, R9')
    if t['signed']:
        out += ['\tVPBROADCASTD hi4<>(SB), Z6', '\tVPBROADCASTD bit4<>(SB), Z29', '\tVPSLLW $3, Z29, Z29',
                '\tVPXORD Z30, Z30, Z30']
    else:
        out.append('\tVPBROADCASTD bit4<>(SB), Z6')
    out.append('pair:')
    body = ['CMPQ R8, $2', 'JLT one']
    accs, sums, ptrs = q.ACCS8[:rows], SUMS8[:rows], ['BX', 'R12', 'R13', 'R14', 'AX'][:min(rows, 5)]
    body += kerngen.zero(accs + ([] if t['signed'] else sums))
    body += ['MOVQ DX, BX'] + [f'LEAQ ({ptrs[j - 1]})(R10*1), {ptrs[j]}' for j in range(1, len(ptrs))]
    body.append('MOVQ nb+48(FP), CX')
    out += ['\t' + x for x in body] + ['pblock:']
    body = unpack2(t)
    for j in range(rows):
        a, f, sm, i, tmp = q.ADDRS8[j], q.ACCS8[j], SUMS8[j], f'Z{20 + j % 4}', f'Z{24 + j % 4}'
        f, sm = 'Z' + f[1:], 'Z' + sm[1:]
        x = f'Z{2 + j % 4}'
        body.append(f'VBROADCASTI64X4 {a(8)}, {x}')
        if t['signed']:
            body += [f'VPXORD Z29, {x}, {x}', f'VMOVDQA32 Z1, {i}', f'VPDPBUSD Z0, {x}, {i}']
        else:
            body += [f'VPXORD {i}, {i}, {i}', f'VPDPBUSD {x}, Z0, {i}']
        body += [f'VCVTDQ2PS {i}, {i}', f'VMULPS.BCST {a(0)}, Z8, {tmp}', f'VFMADD231PS {tmp}, {i}, {f}']
        if not t['signed']:
            body.append(f'VFMADD231PS.BCST {a(4)}, Z7, {sm}')
    body.append(f'ADDQ ${t["size"]}, SI')
    body += [f'ADDQ $40, {r}' for r in ptrs]
    body += ['DECQ CX', 'JNZ pblock', 'ADDQ R9, SI']
    # Row r: the low halves, copied out (a VEX instruction on an X register
    # clears the rest of its Z); row r+1: the high ones, moved down.
    low = [f'Y{20 + j}' for j in range(rows)]
    body += [f'VMOVAPS {f}, {c}' for f, c in zip(accs, low)]
    body += finish(t, low, sums)
    body.append('ADDQ $4, DI')
    for f, sm in zip(accs, sums):
        body.append(f'VEXTRACTF64X4 $1, Z{f[1:]}, {f}')
        if not t['signed']:
            body.append(f'VEXTRACTF32X4 $2, Z{sm[1:]}, {sm}')
    body += finish(t, accs, sums)
    body += ['ADDQ $4, DI', 'SUBQ $2, R8', 'JMP pair']
    out += ['\t' + x for x in body]
    # The last row, if any: the 256-bit kernel's loop.
    one = (kernel8(name, t) if rows == 8 else kernel(name, t, rows, True)).split('\n')
    start = one.index('row:')
    out += ['one:', '\tTESTQ R8, R8', '\tJZ done', '\tMOVQ nb+48(FP), R9'] + one[start:]
    return '\n'.join(out)


def build():
    u = kerngen.Unit('scripts/gen-kern-ql.py')
    u.text(HEADER)
    for typ, t in TYPES.items():
        wt, acts = typ.upper(), sig(t)
        # One activation row gains nothing from 512-bit vectors here.
        u.kernel(f'{typ}x1VNNI', acts, wt, kernel(f'{typ}x1VNNI', t, 1, True))
        u.kernel(f'{typ}x1AVX2', acts, wt, kernel(f'{typ}x1AVX2', t, 1, False))
        for rows in (2, 3):  # a batch's last rows, after its x8 and x4
            for isa, vnni in (('VNNI', True), ('AVX2', False)):
                u.kernel(f'{typ}x{rows}{isa}', acts, wt, kernel(f'{typ}x{rows}{isa}', t, rows, vnni))
        u.kernel(f'{typ}x4VNNI', acts, wt, kernelz(f'{typ}x4VNNI', t, 4))
        u.kernel(f'{typ}x4AVX2', acts, wt, kernel(f'{typ}x4AVX2', t, 4, False))
        u.kernel(f'{typ}x8VNNI', acts, wt, kernelz(f'{typ}x8VNNI', t, 8))
        u.set(f'{typ}VNNI', wt, acts, 'VNNI', f'{typ}x1VNNI', f'{typ}x4VNNI', f'{typ}x8VNNI',
              x2=f'{typ}x2VNNI', x3=f'{typ}x3VNNI')
        u.set(f'{typ}AVX2', wt, acts, 'AVX2', f'{typ}x1AVX2', f'{typ}x4AVX2', x2=f'{typ}x2AVX2', x3=f'{typ}x3AVX2')
    u.kernel('q8_0PairX4VNNI', 'Q8_0', 'Q8_0', kernelz('q8_0PairX4VNNI', Q8_0, 4))
    u.kernel('q8_0PairX8VNNI', 'Q8_0', 'Q8_0', kernelz('q8_0PairX8VNNI', Q8_0, 8))
    return u


if __name__ == '__main__':
    kerngen.run(build)
