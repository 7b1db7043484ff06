#!/usr/bin/env python3
"""Writes compute/kern_inplace_amd64.s: row kernels that read weights as the file stores them.

The kernels of kern_k_amd64.s read Q4_K and Q5_K rows repacked (the 6-bit
scales and mins unpacked, or eight Q4_K rows interleaved in panels), which
costs a copy of every weight in memory. These read ggml's own blocks
straight from the mapped file, unpacking a block's scales in registers, with
the same arithmetic as the repacked kernels: the outputs are the same bits.

Run from the repository root: python3 scripts/gen-kern-inplace.py > compute/kern_inplace_amd64.s
"""

import kerngen

# The assembly's documentation (scripts/gen-kern-inplace.py points here):
#
# Q4_K and Q5_K row kernels that read ggml's blocks as stored (Q4_K 144
# bytes: d, dmin (f16), scales[12] with the eight 6-bit scales and mins,
# qs[128]; Q5_K 176: the same with qh[32] before qs), against
# Q8_K activation blocks (d f32 at 0, qs at 4, bsums int16[16] at 260; 292
# bytes). The signature is the row kernels' of kern_k_amd64.s:
#
#     func k(w *byte, x *blockQ8_K, xs int, out *float32, os int, np, nb int)
#
# np rows of nb super-blocks from w, against one (x1) or four (x4, VNNI)
# activation rows at x, x+xs, ...; output t of row r at out + t·os + 4r.
# Per super-block the scales and mins are unpacked as ggml's
# ggml_vec_dot_q4_K_q8_K does (the kmask trick, here on two 32-bit lanes at
# once): the scales as int16 to the frame, the mins as int16 pairs in Y4.
# The rest is kern_k_amd64.s's row kernel of the type. Q4_K: isum and imin
# exact per super-block, acc = fma(isum, d·d_x, acc), accMin = fma(imin,
# dmin·d_x, accMin), the row acc − accMin (ggml's repacked q4_K gemv
# order). Q5_K: ggml_vec_dot_q5_K_q8_K's eight float lanes, acc_l =
# fma(d_x·d, lane_l, acc_l), the mins in summs = fma(−d_x·dmin, imin,
# summs), the row hsum(acc) + summs.
HEADER = kerngen.asm_head('scripts/gen-kern-inplace.py') + '''
''' + '\n'.join([
    kerngen.broadcast('ipmask0f', 0x0f0f0f0f0f0f0f0f),
    kerngen.broadcast('ipmask10', 0x1010101010101010),
    kerngen.broadcast('ipmask30', 0x3030303030303030, 16),
    kerngen.broadcast('ipmask3f', 0x3f3f3f3f3f3f3f3f, 16),
])

k = kerngen.load('gen-kern-k.py')


def unpack_scales():
    # u0, u1, u2 are the three 32-bit words of scales[12] (bytes 4..15).
    # Scales 0..3: u0 & 3f, mins 0..3: u1 & 3f; scales 4..7: u2 & 0f |
    # (u0 >> 6 & 03) << 4, mins 4..7: u2 >> 4 & 0f | (u1 >> 6 & 03) << 4,
    # where (u >> 6 & 03) << 4 is u >> 2 & 30 per byte.
    return ['VMOVQ 4(SI), X6',                    # [u0, u1]
            'VMOVD 12(SI), X7',                   # [u2]
            'VPSRLD $4, X7, X8',
            'VPUNPCKLDQ X8, X7, X7',              # [u2, u2 >> 4]
            'VPAND ipmask0f<>(SB), X7, X7',
            'VPSRLD $2, X6, X8',
            'VPAND ipmask30<>(SB), X8, X8',
            'VPOR X8, X7, X7',                    # [scales 4..7, mins 4..7]
            'VPAND ipmask3f<>(SB), X6, X6',       # [scales 0..3, mins 0..3]
            'VPUNPCKLDQ X7, X6, X6',              # [scales 0..7, mins 0..7] as bytes
            'VPMOVZXBW X6, X8',
            'VMOVDQU X8, 0(SP)',                  # scales as int16
            'VPSRLDQ $8, X6, X6',
            'VPMOVZXBW X6, X4',                   # mins as int16
            'VPUNPCKHWD X4, X4, X3', 'VPUNPCKLWD X4, X4, X4',
            'VINSERTI128 $1, X3, Y4, Y4']         # [m0 m0 m1 m1 ...]


# ggml's blocks (HEADER): the scales unpacked to the frame, the mins in
# unpack_scales's Y4.
INPLACE_Q4_K = dict(frame=16, size=144, qs=16, scale=lambda n: f'{2 * n}(SP)', mask='ipmask',
                    scales=unpack_scales(), mins=[])
INPLACE_Q5_K = dict(INPLACE_Q4_K, size=176, qh=16, qs=48)


def build():
    u = kerngen.Unit('scripts/gen-kern-inplace.py')
    u.text(HEADER)
    # x2 and x3: a batch's last rows (AVX2: Q4_K's x2 only, as gen-kern-k.py's).
    for rows, vnni in ((1, True), (2, True), (3, True), (4, True), (1, False), (2, False)):
        isa = 'VNNI' if vnni else 'AVX2'
        u.kernel(f'q4_KInPlaceX{rows}{isa}', 'Q8_K', 'Q4_K',
                 k.q4k_kernel(f'q4_KInPlaceX{rows}{isa}', rows, vnni, INPLACE_Q4_K))
        if vnni or rows == 1:
            u.kernel(f'q5_KInPlaceX{rows}{isa}', 'Q8_K', 'Q5_K',
                     k.q5k_kernel(f'q5_KInPlaceX{rows}{isa}', rows, vnni, INPLACE_Q5_K))
    for t in ('q4_K', 'q5_K'):
        u.set(f'{t}InPlaceVNNI', t.upper(), 'Q8_K', 'VNNI', f'{t}InPlaceX1VNNI', f'{t}InPlaceX4VNNI', table='inplace',
              x2=f'{t}InPlaceX2VNNI', x3=f'{t}InPlaceX3VNNI',
              doc=f'{t.upper()} rows read as the file stores them, with the bits of its packed kernels.')
        u.set(f'{t}InPlaceAVX2', t.upper(), 'Q8_K', 'AVX2', f'{t}InPlaceX1AVX2', table='inplace',
              x2='q4_KInPlaceX2AVX2' if t == 'q4_K' else None)
    return u


if __name__ == '__main__':
    kerngen.run(build)
