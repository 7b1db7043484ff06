#!/usr/bin/env python3
"""Writes compute/attn512_amd64.s: AVX-512 attention kernels for a group of
query heads that share one KV head (grouped-query attention).

Run from the repository root: python3 scripts/gen-attn.py > compute/attn512_amd64.s
"""

import kerngen

# The assembly's documentation (scripts/gen-attn.py points here):
#
# Attention kernels for G query heads that read the same key and value rows
# (one KV head of grouped-query attention), head_dim = 64·C. The rows hold
# f16 values (the KV cache), converted to float32 once per row (VCVTPH2PS,
# exact) for all G heads. One pass over the rows serves all G heads; the
# heads' chains are independent, so the latency of one head's FMA and f16
# conversions hides behind the others'.
# Per head the operations are exactly those of the one-head AVX2 kernels
# in attn_amd64.s (dotRows64AVX2, vkqRowsF16AVX2), so the results are the
# same bit for bit (TestAttnGroupKernels).
#
#     func dotRowsG{G}C{C}(q *float32, k *uint16, kstride, n int, out *float32, ostride int)
#
# q holds the G heads' (f16-rounded) queries one after the other; for each
# row j < n at k + j·kstride (bytes) it stores head g's dot product at
# out + g·ostride + 4j: four 16-lane products (FMA over the C chunks),
# reduced in ggml_vec_dot_f16's tree.
#
#     func vkqRowsG{G}C{C}(out *float32, v *uint16, vstride, n int, ms, vs *float32, sstride int)
#
# out holds the G heads' f16-valued accumulators one after the other; for
# each row j, head g: where ms_g[j] != 1, out_g = f16(out_g·ms_g[j]); then
# out_g = f16(fma(v_j, vs_g[j], out_g)), with ms_g = ms + g·sstride and
# vs_g = vs + g·sstride (bytes).
HEADER = kerngen.asm_head('scripts/gen-attn.py') + '''
DATA attnOne<>+0(SB)/4, $1.0
GLOBL attnOne<>(SB), RODATA|NOPTR, $4
'''

# Kernels generated: (G heads, C chunks of 64 values).
SHAPES = [(2, 1), (3, 1), (4, 1), (2, 2)]


# The heads' pointers for heads 0..3: the outputs of the dot kernels, the
# ms and vs of the vkq kernels.
OUT_PTRS = ['DI', 'R12', 'R13', 'R8']
MS_PTRS = ['R8', 'R12', 'SI', 'R14']
VS_PTRS = ['R9', 'R13', 'DX', 'AX']


def group_start(name, sig, regs, setup=()):
    """A group kernel's header, its argument loads into regs, the jump to
    done when there are no rows (CX), then setup."""
    head, body = kerngen.header(name, sig, regs)
    return [''] + head + ['\t' + b for b in body + ['TESTQ CX, CX', f'JZ {name}done'] + list(setup)]


def load_heads(G, C, base):
    """Loads the G heads' 4C 16-value chunks at base into
    Z((g·C + c)·4 + a), head g's chunk 4c + a."""
    return [f'\tVMOVUPS {((g * C + c) * 4 + a) * 64}({base}), Z{(g * C + c) * 4 + a}'
            for g in range(G) for c in range(C) for a in range(4)]


def head_ptrs(G, *ptrs):
    """Points each list of ptrs' entry g at entry g − 1 + R11 (the heads'
    stride), for heads 1..G−1."""
    return [f'\tLEAQ ({p[g - 1]})(R11*1), {p[g]}' for g in range(1, G) for p in ptrs]


def dot(G, C):
    name = f'dotRowsG{G}C{C}'
    out = group_start(name, 'dotGroup', ['SI', 'BX', 'R10', 'CX', 'DI', 'R11'])
    # query registers: head g, chunk c, quarter a -> Z(16 g C + 4 c + a)... kept below Z24
    qreg = lambda g, c, a: f'Z{(g * C + c) * 4 + a}'
    out += load_heads(G, C, 'SI')
    # output pointers: DI (head 0), R12, R13, R8 for heads 1..3
    optr = OUT_PTRS[:G]
    out += head_ptrs(G, optr)
    # the row's values as float32: chunk c, quarter a -> Z(16 + 4c + a)
    kreg = lambda c, a: f'Z{16 + c * 4 + a}'
    out.append(f'{name}row:')
    for c in range(C):
        for a in range(4):
            out.append(f'\tVCVTPH2PS {(c * 4 + a) * 32}(BX), {kreg(c, a)}')
    for g in range(G):
        s = [f'Z{28 + a}' for a in range(4)]
        # fma(k, q, 0) as the AVX2 kernel does (a plain product would give
        # -0 where it gives +0)
        out += [f'\tVPXORD {r}, {r}, {r}' for r in s]
        for c in range(C):
            for a in range(4):
                out.append(f'\tVFMADD231PS {kreg(c, a)}, {qreg(g, c, a)}, {s[a]}')
        out += [
            '\tVADDPS Z30, Z28, Z28',
            '\tVADDPS Z31, Z29, Z29',
            '\tVADDPS Z29, Z28, Z28',
            '\tVEXTRACTF64X4 $1, Z28, Y29',
            '\tVADDPS Y29, Y28, Y28',
            '\tVEXTRACTF32X4 $1, Y28, X29',
            '\tVADDPS X29, X28, X28',
            '\tVMOVHLPS X28, X28, X29',
            '\tVADDPS X29, X28, X28',
            '\tVMOVSHDUP X28, X29',
            '\tVADDSS X29, X28, X28',
            f'\tVMOVSS X28, ({optr[g]})',
        ]
    for g in range(G):
        out.append(f'\tADDQ $4, {optr[g]}')
    out += [
        '\tADDQ R10, BX',
        '\tDECQ CX',
        f'\tJNZ {name}row',
        f'{name}done:',
        '\tVZEROUPPER',
        '\tRET',
    ]
    return '\n'.join(out)


def vkq_heads(name, G, C, ms, vs, f16):
    """A vkq kernel's work once the row stands in Z16..Z(16 + 4C − 1): per
    head g (accumulators Z(4Cg)..), where ms_g[j] != 1 the accumulators times
    ms_g[j], then fma(row, vs_g[j], acc), each result rounded to f16 where
    f16 (the F16 cache's kernels); then the next row, and the stores."""
    acc = lambda g, i: f'Z{g * 4 * C + i}'
    rnd = (lambda r: [f'\tVCVTPS2PH $0, {r}, Y30', f'\tVCVTPH2PS Y30, {r}']) if f16 else (lambda r: [])
    out = []
    for g in range(G):
        out += [f'\tVMOVSS ({ms[g]}), X31', '\tVUCOMISS X27, X31', f'\tJEQ {name}s{g}', '\tVBROADCASTSS X31, Z31']
        for i in range(4 * C):
            out += [f'\tVMULPS Z31, {acc(g, i)}, {acc(g, i)}'] + rnd(acc(g, i))
        out.append(f'{name}s{g}:')
    for g in range(G):
        out.append(f'\tVBROADCASTSS ({vs[g]}), Z31')
        for i in range(4 * C):
            out += [f'\tVFMADD231PS Z{16 + i}, Z31, {acc(g, i)}'] + rnd(acc(g, i))
    for g in range(G):
        out += [f'\tADDQ $4, {ms[g]}', f'\tADDQ $4, {vs[g]}']
    out += ['\tADDQ R10, BX', '\tDECQ CX', f'\tJNZ {name}row']
    out += [f'\tVMOVUPS {acc(g, i)}, {(g * 4 * C + i) * 64}(DI)' for g in range(G) for i in range(4 * C)]
    return out + [f'{name}done:', '\tVZEROUPPER', '\tRET']


def vkq(G, C):
    name = f'vkqRowsG{G}C{C}'
    out = group_start(name, 'vkqGroup', ['DI', 'BX', 'R10', 'CX', 'R8', 'R9', 'R11'], ['VMOVSS attnOne<>(SB), X27'])
    out += load_heads(G, C, 'DI')
    # ms_g and vs_g: R8/R9 for head 0, then R12/R13, SI/DX, R14/AX.
    ms, vs = MS_PTRS[:G], VS_PTRS[:G]
    out += head_ptrs(G, ms, vs)
    vreg = lambda c, a: f'Z{16 + c * 4 + a}'  # the row as float32
    out.append(f'{name}row:')
    for c in range(C):
        for a in range(4):
            out.append(f'\tVCVTPH2PS {(c * 4 + a) * 32}(BX), {vreg(c, a)}')
    return '\n'.join(out + vkq_heads(name, G, C, ms, vs, f16=True))


# The Q8_0 kernels (the .s says they are described here):
#
# The same for a Q8_0 cache (rows of Q8_0 blocks, 34 bytes each: an f16
# scale and 32 int8), per head the operations of DotRowsQ8_0 and
# VKQRowsQ8_0 (TestAttnGroupQ8_0Kernels):
#
#     func dotRowsQ8G{G}C{C}(q *blockQ8_0, k *byte, kstride, n int, out *float32, ostride int)
#
# q holds the G heads' queries as 2C blockQ8_0 each (40 bytes: d float32,
# corr, qs); each score is ggml_vec_dot_q8_0_q8_0: per block the int8
# products summed by VPDPBUSD in eight lanes, times d_k·d_q, by FMA into
# eight float32 lanes, reduced as hsum_float_8. The row's block is loaded
# once for all G heads.
#
#     func vkqRowsQ8G{G}C{C}(out *float32, v *byte, vstride, n int, ms, vs *float32, sstride int)
#
# out holds the G heads' float32 accumulators; each row is dequantized
# once (d·q, exact), then per head: where ms_g[j] != 1, out_g = out_g·ms_g[j];
# out_g = fma(v_j, vs_g[j], out_g).

Q8_HEADER = '''
// The same for a Q8_0 cache: scripts/gen-attn.py describes them.
'''


def dot_q8(G, C):
    name = f'dotRowsQ8G{G}C{C}'
    NB = 2 * C
    out = group_start(name, 'dotGroupQ8', ['SI', 'BX', 'R10', 'CX', 'DI', 'R11'])
    optr = OUT_PTRS[:G]
    out += head_ptrs(G, optr)
    out.append(f'{name}row:')
    # VPSIGNB has no EVEX form: everything stays in Y0..Y15. Y0..Y3 the
    # heads' lanes, Y4 d_k, Y5 k, Y6 |k|, Y7..Y12 per-head temporaries.
    for g in range(G):
        out.append(f'\tVXORPS Y{g}, Y{g}, Y{g}')
    for b in range(NB):
        out += [
            f'\tVPBROADCASTW {b * 34}(BX), X4',
            '\tVCVTPH2PS X4, Y4',
            f'\tVMOVDQU {b * 34 + 2}(BX), Y5',
            '\tVPABSB Y5, Y6',
        ]
        for g in range(G):
            t0, t1, t2 = (['Y7', 'Y8', 'Y9'], ['Y10', 'Y11', 'Y12'])[g % 2]
            qo = (g * NB + b) * 40
            out += [
                f'\tVMOVDQU {qo + 8}(SI), {t0}',
                f'\tVPSIGNB Y5, {t0}, {t0}',
                f'\tVPXOR {t1}, {t1}, {t1}',
                f'\tVPDPBUSD {t0}, Y6, {t1}',
                f'\tVCVTDQ2PS {t1}, {t1}',
                f'\tVMULPS.BCST {qo}(SI), Y4, {t2}',
                f'\tVFMADD231PS {t2}, {t1}, Y{g}',
            ]
    for g in range(G):
        out += [
            f'\tVEXTRACTF128 $1, Y{g}, X13',
            f'\tVADDPS X13, X{g}, X{g}',
            f'\tVMOVHLPS X{g}, X{g}, X13',
            f'\tVADDPS X13, X{g}, X{g}',
            f'\tVMOVSHDUP X{g}, X13',
            f'\tVADDSS X13, X{g}, X{g}',
            f'\tVMOVSS X{g}, ({optr[g]})',
            f'\tADDQ $4, {optr[g]}',
        ]
    out += ['\tADDQ R10, BX', '\tDECQ CX', f'\tJNZ {name}row', f'{name}done:', '\tVZEROUPPER', '\tRET']
    return '\n'.join(out)


def vkq_q8(G, C):
    name = f'vkqRowsQ8G{G}C{C}'
    NB = 2 * C
    out = group_start(name, 'vkqGroupQ8', ['DI', 'BX', 'R10', 'CX', 'R8', 'R9', 'R11'], ['VMOVSS attnOne<>(SB), X27'])
    out += load_heads(G, C, 'DI')
    ms, vs = MS_PTRS[:G], VS_PTRS[:G]
    out += head_ptrs(G, ms, vs)
    vreg = lambda i: f'Z{16 + i}'  # the row dequantized
    out.append(f'{name}row:')
    for b in range(NB):
        out += [
            f'\tVPBROADCASTW {b * 34}(BX), Y24',
            '\tVCVTPH2PS Y24, Z24',
            f'\tVPMOVSXBD {b * 34 + 2}(BX), Z25',
            f'\tVPMOVSXBD {b * 34 + 18}(BX), Z26',
            '\tVCVTDQ2PS Z25, Z25',
            '\tVCVTDQ2PS Z26, Z26',
            f'\tVMULPS Z24, Z25, {vreg(2 * b)}',
            f'\tVMULPS Z24, Z26, {vreg(2 * b + 1)}',
        ]
    return '\n'.join(out + vkq_heads(name, G, C, ms, vs, f16=False))


def build():
    u = kerngen.Unit('scripts/gen-attn.py')
    u.text(HEADER, end='')
    for G, C in SHAPES:
        u.kernel(f'dotRowsG{G}C{C}', 'dotGroup', 'attention', dot(G, C))
        u.kernel(f'vkqRowsG{G}C{C}', 'vkqGroup', 'attention', vkq(G, C))
    u.text(Q8_HEADER, end='')
    for G, C in SHAPES:
        u.kernel(f'dotRowsQ8G{G}C{C}', 'dotGroupQ8', 'attention', dot_q8(G, C))
        u.kernel(f'vkqRowsQ8G{G}C{C}', 'vkqGroupQ8', 'attention', vkq_q8(G, C))
    return u


if __name__ == '__main__':
    kerngen.run(build)
