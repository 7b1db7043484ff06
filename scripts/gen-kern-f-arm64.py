#!/usr/bin/env python3
"""Writes compute/kern_f_arm64.s: the F32, F16 and BF16 weight kernels for NEON.

Run from the repository root:
    python3 scripts/gen-kern-f-arm64.py > compute/kern_f_arm64.s
With --mca it prints instead each kernel's step loop in GNU syntax, one
block per kernel between "# kernel NAME" lines, for scripts/arm64-mca.sh.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import arm64enc as a  # noqa: E402
import kerngen  # noqa: E402

WHAT = '''// Kernels for float weights (F32, F16, BF16, read as stored) against
// float32 activations, for arm64's Advanced SIMD. The signature, the
// arithmetic and the order are kern_f_amd64.s's (see kern_f.go):
//
//	func k(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)
//
// ng groups of RM weight rows (row i of group g at w + (g·RM + i)·ws)
// against RN activation rows (row j at x + j·xs); output (i, j) of group g
// at out + 4·(g·RM + i) + j·os. The first npf steps of each group prefetch
// a cache line each into L2, from pf on. The name says RM and RN:
// f16x3r2NEON is F16, three weight rows, two activation rows.
//
// Each output's 16 lanes are four V registers (lanes 4q..4q+3 in the q-th);
// lane l accumulates by FMLA (one rounding, as VFMADD231PS) and the lanes
// are summed as on amd64: (q0 + q2) + (q1 + q3), then (l0 + l2) + (l1 + l3).
//
//   - F32: a step is 16 elements, 64 bytes of weights.
//   - F16: a step is 16 elements, 32 bytes of weights widened by FCVTL and
//     FCVTL2 (exact), against activations rounded to f16 and held as float32.
//   - BF16: a step is 32 elements; lane l takes element 2l+1 (the dword
//     masked with 0xffff0000), then 2l (the dword shifted left 16), against
//     the activations split per step into 16 odd then 16 even elements.
//
// Go's assembler lacks these vector instructions: they are WORDs, each with
// its GNU spelling (scripts/arm64enc.py encodes them).'''
HEADER = kerngen.asm_header('scripts/gen-kern-f-arm64.py', WHAT)

# General registers (Go's Rn is Xn).
W, WS, X, XS, OUT, OS, NG, NK, PF, NPF = range(10)
WROW = [10, 11, 12, 13]  # weight row pointers of the group
XROW = [14, 15, 16]      # activation row pointers
OROW = [19, 20, 21]      # output pointers, one per activation row
GADV, KCNT = 22, 25      # bytes from one group to the next; steps left
MASK = 31                # BF16: 0xffff0000 in every lane

ARGS = ['w', 'ws', 'x', 'xs', 'out', 'os', 'ng', 'nk', 'pf', 'npf']


class Kind:
    """A weight type: bytes per step of weights and of activations."""

    def __init__(self, name, sw, sx):
        self.name, self.sw, self.sx = name, sw, sx


F32, F16, BF16 = Kind('f32', 64, 64), Kind('f16', 32, 64), Kind('bf16', 64, 128)
KINDS = [F32, F16, BF16]

# Activation rows per call, and the weight rows per group of each: 4·RM·RN
# accumulators, at most 24 of the 32 V registers.
RM = {1: 4, 2: 3, 3: 2}


def acc(rn, i, j, q):
    return 4 * (i * rn + j) + q


def step_body(kind, rm, rn):
    """The instructions of one step: loads, conversions, FMLAs."""
    free = list(range(4 * rm * rn, MASK if kind is BF16 else 32))
    xr, free = free[:rn], free[rn:]
    body = []
    if kind is F32:
        tmp = free
        for q in range(4):
            body += [a.ldr_q(xr[j], XROW[j], 16 * q) for j in range(rn)]
            for i in range(rm):
                t = tmp[(q * rm + i) % len(tmp)]
                body.append(a.ldr_q(t, WROW[i], 16 * q))
                body += [a.fmla(acc(rn, i, j, q), t, xr[j]) for j in range(rn)]
        return body
    raw, tmp = free[:rm], free[rm:]
    if kind is F16:
        for h in range(2):
            body += [a.ldr_q(raw[i], WROW[i], 16 * h) for i in range(rm)]
            for q in (2 * h, 2 * h + 1):
                body += [a.ldr_q(xr[j], XROW[j], 16 * q) for j in range(rn)]
                for i in range(rm):
                    t = tmp[(q * rm + i) % len(tmp)]
                    body.append((a.fcvtl2 if q % 2 else a.fcvtl)(t, raw[i]))
                    body += [a.fmla(acc(rn, i, j, q), t, xr[j]) for j in range(rn)]
        return body
    for q in range(4):  # BF16
        body += [a.ldr_q(raw[i], WROW[i], 16 * q) for i in range(rm)]
        for half in range(2):  # the odd elements, then the even ones
            body += [a.ldr_q(xr[j], XROW[j], 64 * half + 16 * q) for j in range(rn)]
            for i in range(rm):
                t = tmp[(2 * q * rm + half * rm + i) % len(tmp)]
                body.append(a.and16(t, raw[i], MASK) if half == 0 else a.shl_s(t, raw[i], 16))
                body += [a.fmla(acc(rn, i, j, q), t, xr[j]) for j in range(rn)]
    return body


def advance(kind, rm, rn):
    """Moves the row pointers to the next step."""
    ins = [a.go(f'ADD ${kind.sw}, R{WROW[i]}', f'add x{WROW[i]}, x{WROW[i]}, #{kind.sw}') for i in range(rm)]
    ins += [a.go(f'ADD ${kind.sx}, R{XROW[j]}', f'add x{XROW[j]}, x{XROW[j]}, #{kind.sx}') for j in range(rn)]
    return ins


def reduce_store(rn, i, j):
    """Sums output (i, j)'s lanes into its first and stores it."""
    a0, a1, a2, a3 = (acc(rn, i, j, q) for q in range(4))
    return [a.fadd(a0, a0, a2), a.fadd(a1, a1, a3), a.fadd(a0, a0, a1),
            a.ext16(a1, a0, a0, 8), a.fadd(a0, a0, a1), a.faddp_s(a0, a0),
            a.str_s(a0, OROW[j], 4 * i)]


def name(kind, rm, rn):
    return f'{kind.name}x{rm}r{rn}NEON'


def kernel(kind, rm, rn):
    out = [f'// func {name(kind, rm, rn)}(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)',
           f'TEXT ·{name(kind, rm, rn)}(SB), NOSPLIT, $0-80']
    out += [f'\tMOVD {arg}+{8 * r}(FP), R{r}' for r, arg in enumerate(ARGS)]
    out.append(f'\tMOVD $0, R{GADV}')
    out += [f'\tADD R{WS}, R{GADV}'] * rm
    out += [f'\tMOVD R{OUT}, R{OROW[0]}'] + [f'\tADD R{OS}, R{OROW[j - 1]}, R{OROW[j]}' for j in range(1, rn)]
    if kind is BF16:
        out.append('\t' + a.movi_2d(MASK, 0xCC).go)
    out += [f'\tCBZ R{NG}, done', 'group:']
    out += ['\t' + a.movi_zero(acc(rn, i, j, q)).go for i in range(rm) for j in range(rn) for q in range(4)]
    out += [f'\tMOVD R{W}, R{WROW[0]}'] + [f'\tADD R{WS}, R{WROW[i - 1]}, R{WROW[i]}' for i in range(1, rm)]
    out += [f'\tMOVD R{X}, R{XROW[0]}'] + [f'\tADD R{XS}, R{XROW[j - 1]}, R{XROW[j]}' for j in range(1, rn)]
    out += [f'\tMOVD R{NK}, R{KCNT}', f'\tCBZ R{KCNT}, reduce', 'step:',
            f'\tCBZ R{NPF}, nopf', '\t' + a.prfm_pldl2keep(PF).go, f'\tADD $64, R{PF}', f'\tSUB $1, R{NPF}', 'nopf:']
    out += ['\t' + ins.go for ins in step_body(kind, rm, rn) + advance(kind, rm, rn)]
    out += [f'\tSUBS $1, R{KCNT}', '\tBNE step', 'reduce:']
    out += ['\t' + ins.go for i in range(rm) for j in range(rn) for ins in reduce_store(rn, i, j)]
    out += [f'\tADD R{GADV}, R{W}'] + [f'\tADD ${4 * rm}, R{OROW[j]}' for j in range(rn)]
    out += [f'\tSUBS $1, R{NG}', '\tBNE group', 'done:', '\tRET', '']
    return out


def mca_loop(kind, rm, rn):
    """The step loop in GNU syntax (prefetch branch left out)."""
    ins = step_body(kind, rm, rn) + advance(kind, rm, rn)
    return ['1:'] + [i.gnu for i in ins] + [f'subs x{KCNT}, x{KCNT}, #1', 'b.ne 1b']


def shapes():
    for kind in KINDS:
        for rn in (1, 2, 3):
            yield kind, RM[rn], rn
            yield kind, 1, rn


def build():
    u = kerngen.Unit('scripts/gen-kern-f-arm64.py')
    lines = HEADER.split('\n')
    for kind, rm, rn in shapes():
        lines += kernel(kind, rm, rn)
        u.declare(name(kind, rm, rn), 'float', 'float')
    u.text('\n'.join(lines).rstrip('\n'))
    return u


def mca():
    for kind, rm, rn in shapes():
        print(f'# kernel {name(kind, rm, rn)} {kind.name} rows={rm * rn} values={16 * rm * rn * (2 if kind is BF16 else 1)}')
        print('\n'.join(mca_loop(kind, rm, rn)))


if __name__ == '__main__':
    kerngen.run(build, mca)
