"""Shared helpers for the arm64 kernel generators (scripts/gen-*-arm64.py).

Go's arm64 assembler lacks most of the Advanced SIMD instructions the
kernels use (SDOT, SMMLA, SCVTF, FCVTL, by-element FMUL/FMLA, SMULL,
SADDLP, ...), so every vector instruction is written as a WORD with its
GNU spelling in a comment, and the few scalar instructions in Go syntax
with their GNU spelling beside them. Every emitted instruction line thus
ends in "// gnu: <instruction>": bench/arm64-mca-quant.sh assembles those
with aarch64-linux-gnu-as to check the encodings and feeds the loop bodies
to llvm-mca.

The encodings are in scripts/arm64enc.py (re-exported here); this module
adds the scalar instructions in Go syntax, the kernel frame and the dot
product and hsum steps the generators share.

Registers: vector registers are ints 0..31; general registers are ints
0..30 (x0..x30, Go's R0..R30; kernels use R0..R17 only).
"""
from arm64enc import *  # noqa: F401,F403 (the instruction encodings)
from arm64enc import go, word  # noqa: F401

import kerngen

# kvalues_mxfp4 as bytes: the TBL table of the MXFP4 kernels (mxfp4tab<>),
# as the end of their files' header.
MXFP4_TABLE = '// kvalues_mxfp4 as bytes.\n' + kerngen.data(
    'mxfp4tab', kerngen.packed([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], 8)).rstrip('\n')


def mov(d, n):
    return go(f'MOVD R{n}, R{d}', f'mov x{d}, x{n}')


def add(d, n, m):
    return go(f'ADD R{m}, R{n}, R{d}', f'add x{d}, x{n}, x{m}')


def addi(d, n, imm):
    return go(f'ADD ${imm}, R{n}, R{d}', f'add x{d}, x{n}, #{imm}')


def subs1(d):
    return go(f'SUBS $1, R{d}, R{d}', f'subs x{d}, x{d}, #1')


def subsi(d, imm):
    return go(f'SUBS ${imm}, R{d}, R{d}', f'subs x{d}, x{d}, #{imm}')


def cmpi(n, imm):
    return go(f'CMP ${imm}, R{n}', f'cmp x{n}, #{imm}')


def bne(label):
    return go(f'BNE {label}', f'b.ne {label}')


def blt(label):
    return go(f'BLT {label}', f'b.lt {label}')


def beq(label):
    return go(f'BEQ {label}', f'b.eq {label}')


def b(label):
    return go(f'B {label}', f'b {label}')


def cbz(n, label):
    return go(f'CBZ R{n}, {label}', f'cbz x{n}, {label}')


def muli(d, n, imm, tmp):
    """d = n·imm, through tmp."""
    return [go(f'MOVD ${imm}, R{tmp}', f'mov x{tmp}, #{imm}'), go(f'MUL R{tmp}, R{n}, R{d}', f'mul x{d}, x{n}, x{tmp}')]


SIG = 'w *byte, x *{act}, xs int, out *float32, os int, np, nb int'


ARGS = ['w', 'x', 'xs', 'out', 'os', 'np', 'nb']


def prologue(name, act):
    """The kernel's header, loading the arguments into R0..R6 (w, x, xs,
    out, os, np, nb)."""
    out = [f'// func {name}({SIG.format(act=act)})', f'TEXT ·{name}(SB), NOSPLIT, $0-56']
    out += ['\t' + go(f'MOVD {a}+{8 * i}(FP), R{i}', f'ldr x{i}, [sp, #{8 * i + 8}]') for i, a in enumerate(ARGS)]
    return out


def indent(lines):
    return ['\t' + x if not x.endswith(':') else x for x in lines]


def header(script, data=''):
    """The head of a generated assembly file (kerngen.asm_head), then its
    read-only data."""
    return kerngen.asm_head(script) + (f'\n{data}\n' if data else '')


def hsum8(f):
    """hsum8 of the float lanes f (0-3) and f+1 (4-7) into lane 0 of f, as
    ggml's hsum_float_8: (f + f+1) = r0..r3, then (r0+r2) + (r1+r3).
    Clobbers f+1."""
    return [fadd(f, f, f + 1), ext16(f + 1, f, f, 8), fadd2(f, f, f + 1), faddp_s(f, f)]


def hsum8_store(f, ptr):
    """hsum8(f) stored at ptr, post-incremented by 4."""
    return hsum8(f) + [str_s_post(f, ptr, 4)]


def ldrw(t, n, off):
    return go(f'MOVWU {off}(R{n}), R{t}', f'ldr w{t}, [x{n}, #{off}]')


def lsrw(d, n, s):
    return go(f'LSRW ${s}, R{n}, R{d}', f'lsr w{d}, w{n}, #{s}')


def andw(d, n, imm):
    return go(f'ANDW ${imm:#x}, R{n}, R{d}', f'and w{d}, w{n}, #{imm:#x}')


def orrw_lsl(d, n, m, s):
    """d = n | m<<s."""
    return go(f'ORRW R{m}<<{s}, R{n}, R{d}', f'orr w{d}, w{n}, w{m}, lsl #{s}')


def dot16(i, w, x, neon):
    """i (4 int32 lanes) = the four-byte dot products of 16 weight bytes w
    with 16 activation bytes x (lane l: bytes 4l..4l+3): one SDOT, or
    without dotprod SMULL and SMULL2 (w is clobbered), ADDP of the 16-bit
    products in pairs (|w·x| <= 128·127 each, so a pair fits) and SADDLP."""
    if not neon:
        return [movi_b(i, 0), sdot(i, w, x)]
    return [smull(i, w, x), smull2(w, w, x), addp_h(i, i, w), saddlp(i, i)]


def dot32(i, w0, w1, x0, x1, neon):
    """i (4 int32 lanes) summing to the dot product of 32 weight bytes
    (w0, w1) with 32 activation bytes (x0, x1), lanes in no particular
    order (only their sum is defined): two SDOTs, or without
    dotprod four SMULL/SMLAL into 16-bit lanes (each at most four products
    of |w| < 16 and |x| <= 128) and SADDLP."""
    if not neon:
        return [movi_b(i, 0), sdot(i, w0, x0), sdot(i, w1, x1)]
    return [smull(i, w0, x0), smlal2(i, w0, x0), smlal(i, w1, x1), smlal2(i, w1, x1), saddlp(i, i)]
