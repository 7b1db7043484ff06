#!/usr/bin/env python3
"""Writes compute/lowrank_amd64.s: LowRank.AddCols's kernels (compute/lowrank.go).

One output row of a low-rank update, out[c] += float32((B·t)[c]·scale),
with B held as panels of 16 output columns (Bᵀ: the panel's 16 columns of
each of B's rank rows, 64 bytes apart). A panel's 16 columns are two YMM
registers: lane l of MatMul's 16-lane sum (kern_f.go's dotFloat) is, for
all 16 columns at once, a register pair accumulating B's rows l, 16+l, ...
against broadcasts of t by fused multiply-adds from zero; the 16 lane pairs
are then added in sumLanes's tree ((0+8) + (4+12)) + ((2+10) + (6+14)), then
the same for the odd lanes, and the rank mod 16 last rows added by fused
multiply-adds. No horizontal sum: each column's arithmetic is dotFloat's, in
its own lane.

lowRankF16AVX2 is the same over panels of f16 values (32 bytes a row),
each half-row widened by VCVTPH2PS before its multiply-add: f16 to float32
is exact, so its bits are those of the float32 panels of the same values.

Run from the repository root: python3 scripts/gen-lowrank.py > compute/lowrank_amd64.s
"""

import kerngen

# The assembly's documentation (scripts/gen-lowrank.py points here):
#
# func lowRankAVX2(p, t, out *float32, nb, nk, tail int, scale float32)
#
# nb panels of 16 columns: panel i at p + i·rank·64 bytes (rank = 16·nk +
# tail), its row r's 16 values at +64·r; out + 64·i its 16 outputs. DI the
# panel, SI t, DX out, CX panels left, R8 nk, R9 tail, R10 the panel
# stride; Y13 a broadcast of t, Y15 the scale; the sum in Y0:Y1.
#
# func lowRankF16AVX2(p *uint16, t, out *float32, nb, nk, tail int, scale float32)
#
# The same over f16 panels: row r's 16 values at +32·r, each half-row
# widened into Y14 (VCVTPH2PS, exact) before its multiply-add.
HEADER = kerngen.asm_head('scripts/gen-lowrank.py')


def fma(off, reg, dst, f16):
    """dst += the 8 panel values at off(reg) times Y13."""
    off = off or ''
    if f16:
        return [f'VCVTPH2PS {off}({reg}), Y14', f'VFMADD231PS Y14, Y13, {dst}']
    return [f'VFMADD231PS {off}({reg}), Y13, {dst}']


def lane(l, a, b, looped, f16):
    """Lane l of the 16 for the panel's 16 columns into the pair (a, b)."""
    rb = 32 if f16 else 64  # a panel row's bytes
    out = [f'VXORPS {a}, {a}, {a}', f'VXORPS {b}, {b}, {b}']
    if not looped:  # nk = 1
        return out + [f'VBROADCASTSS {4 * l}(SI), Y13'] + fma(rb * l, 'DI', a, f16) + fma(rb * l + rb // 2, 'DI', b, f16)
    return out + [f'LEAQ {rb * l}(DI), AX',
                  f'LEAQ {4 * l}(SI), BX',
                  'MOVQ R8, R11',
                  f'lane{l}:',
                  'VBROADCASTSS (BX), Y13'] + fma(0, 'AX', a, f16) + fma(rb // 2, 'AX', b, f16) + [
                  f'ADDQ ${16 * rb}, AX',
                  'ADDQ $64, BX',
                  'DECQ R11',
                  f'JNZ lane{l}']


# sumLanes's tree: halves (i, i+8), then (j, j+4), then (0+2) + (1+3).
TREE = (((0, 8), (4, 12)), ((2, 10), (6, 14))), (((1, 9), (5, 13)), ((3, 11), (7, 15)))


def tree(node, dst, free, looped, f16, out):
    """Evaluates node into the register pair dst, taking pairs from free."""
    if isinstance(node, int):
        out += lane(node, dst[0], dst[1], looped, f16)
        return
    tree(node[0], dst, free, looped, f16, out)
    tmp = free.pop()
    tree(node[1], tmp, free, looped, f16, out)
    out += [f'VADDPS {tmp[0]}, {dst[0]}, {dst[0]}', f'VADDPS {tmp[1]}, {dst[1]}, {dst[1]}']
    free.append(tmp)


def body(f16):
    pairs = [(f'Y{i}', f'Y{i + 1}') for i in range(2, 12, 2)][::-1]
    one, loop = [], []
    tree(TREE, ('Y0', 'Y1'), list(pairs), False, f16, one)
    tree(TREE, ('Y0', 'Y1'), list(pairs), True, f16, loop)
    shift = 5 if f16 else 6  # log2 of a panel row's bytes
    name = 'lowRankF16AVX2' if f16 else 'lowRankAVX2'
    lines = [f'TEXT ·{name}(SB), NOSPLIT, $0-52',
             'MOVQ p+0(FP), DI',
             'MOVQ t+8(FP), SI',
             'MOVQ out+16(FP), DX',
             'MOVQ nb+24(FP), CX',
             'MOVQ nk+32(FP), R8',
             'MOVQ tail+40(FP), R9',
             'VBROADCASTSS scale+48(FP), Y15',
             'MOVQ R8, R10',
             'SHLQ $4, R10',
             'ADDQ R9, R10',
             f'SHLQ ${shift}, R10',  # (16·nk + tail)·row bytes
             'MOVQ R8, R12',
             f'SHLQ ${shift + 4}, R12',  # the tail rows' offset in a panel, 16·nk·row bytes
             'TESTQ CX, CX',
             'JZ done',
             'panel:',
             'CMPQ R8, $1',
             'JEQ one',
             'JGT steps',
             'VXORPS Y0, Y0, Y0',  # nk = 0: the lanes sum to +0
             'VXORPS Y1, Y1, Y1',
             'JMP tail',
             'one:'] + one + ['JMP tail', 'steps:'] + loop + [
             'tail:',
             'MOVQ R9, R11',
             'TESTQ R11, R11',
             'JZ scale',
             'LEAQ (DI)(R12*1), AX',
             'MOVQ R8, BX',
             'SHLQ $6, BX',
             'ADDQ SI, BX',     # t + 16·nk·4
             'rows:',
             'VBROADCASTSS (BX), Y13'] + fma(0, 'AX', 'Y0', f16) + fma(16 if f16 else 32, 'AX', 'Y1', f16) + [
             f'ADDQ ${1 << shift}, AX',
             'ADDQ $4, BX',
             'DECQ R11',
             'JNZ rows',
             'scale:',
             'VMULPS Y15, Y0, Y0',  # float32(y·scale), then added
             'VMULPS Y15, Y1, Y1',
             'VADDPS (DX), Y0, Y0',
             'VADDPS 32(DX), Y1, Y1',
             'VMOVUPS Y0, (DX)',
             'VMOVUPS Y1, 32(DX)',
             'ADDQ $64, DX',
             'ADDQ R10, DI',
             'DECQ CX',
             'JNZ panel',
             'done:',
             'VZEROUPPER',
             'RET']
    return '\n'.join(l if l.endswith(':') or l.startswith('TEXT') else '\t' + l for l in lines)


def build():
    u = kerngen.Unit('scripts/gen-lowrank.py')
    u.text(HEADER)
    u.kernel('lowRankAVX2', 'lowRank', 'lowrank', body(False))
    u.text('')
    u.kernel('lowRankF16AVX2', 'lowRankF16', 'lowrank', body(True))
    return u


if __name__ == '__main__':
    kerngen.run(build)
