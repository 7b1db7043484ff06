"""The arm64 row kernels of the 32-value block types in ggml's x86 lane
order (Q8_0, Q5_0 against Q8_0 activations; Q4_1, Q5_1 against Q8_1),
shared by scripts/gen-kern-q-arm64.py and scripts/gen-kern-ql-arm64.py.

Per block, eight int32 lanes (lane l sums the products at positions
4l..4l+3; dot16 of arm64asm.py) times d_w·d_x added by FMA into eight float
lanes, summed at the end by hsum8; the Q8_1 types add Σ m_w·s_x by FMA into
a separate scalar, added after hsum8 (vecDot{Q4_1,Q5_1} order).
"""
import arm64asm as a
import kerngen

# Constant registers: the nibble mask, the fifth-bit tables (byte index
# and bit of each quant's fifth bit in qh), 0x10.
M0F, BITS, IDXHI, IDXLO, C10 = 26, 25, 24, 23, 22
# Activations: qs in v28, v29, d_x in v30, s_x (Q8_1) in v27.
A0, DX, SX = 28, 30, 27

# The fifth-bit tables: the byte of qh holding quant i's fifth bit (i/8,
# for 32 quants), then its bit (1 << i%8) for 16.
Q5_TABLE = kerngen.data('q5tab', kerngen.packed([i // 8 for i in range(32)] + [1 << i % 8 for i in range(16)], 8))

class Type:
    """A weight type: block bytes, rows a step of the x1 kernel, whether
    its activations are Q8_1 (a min term), whether it has fifth bits (and
    subtracts 16 when they are clear: Q5_0), and whether its quants are
    nibbles."""

    def __init__(self, bs, rows, q8_1=False, q5=False, off16=False, nibbles=True):
        self.bs, self.rows, self.q8_1, self.q5, self.off16, self.nibbles = bs, rows, q8_1, q5, off16, nibbles

    def consts(self):
        s = []
        if self.nibbles:
            s.append(a.movi_b(M0F, 0x0f))
        if self.q5:
            s += [a.go('MOVD $q5tab<>(SB), R17', 'adr x17, q5tab'), a.ld1(IDXLO, 3, 17, post=False),
                  a.movi_b(C10, 0x10)]
        return s

    def load(self, p, w, d, i, m):
        # The block at p (post-incremented): quants as int8 in w (positions
        # 0-15), w+1 (16-31); d_w as f32 in d; m_w in m (Q8_1 types); i and
        # i+1 are scratch.
        s = [a.ldr_h_post(d, p, 2)]
        if self.q8_1:
            s.append(a.ldr_h_post(m, p, 2))
        if self.q5:
            s.append(a.ldr_s_post(i, p, 4))
        if not self.nibbles:
            return s + [a.ld1(w, 2, p), a.fcvt_sh(d, d)]
        s += [a.ldr_q_post(w, p, 16), a.fcvt_sh(d, d)]
        if self.q8_1:
            s.append(a.fcvt_sh(m, m))
        s += [a.ushr_b(w + 1, w, 4), a.and16(w, w, M0F)]
        if self.q5:
            s += [a.tbl(i + 1, i, IDXHI), a.tbl(i, i, IDXLO), a.cmtst(i, i, BITS), a.cmtst(i + 1, i + 1, BITS)]
            if self.off16:  # q − 16 where the bit is clear
                s += [a.bic16(i, C10, i), a.bic16(i + 1, C10, i + 1), a.sub_b(w, w, i), a.sub_b(w + 1, w + 1, i + 1)]
            else:
                s += [a.and16(i, i, C10), a.and16(i + 1, i + 1, C10), a.orr16(w, w, i), a.orr16(w + 1, w + 1, i + 1)]
        return s


TYPES = {
    'q8_0': Type(34, 4, nibbles=False),
    'q5_0': Type(22, 2, q5=True, off16=True),
    'q4_1': Type(20, 2, q8_1=True),
    'q5_1': Type(24, 2, q8_1=True, q5=True),
}


def regs(t, k):
    # Weight row k of a step: w, w+1, d, i, i+1, f, f+1 (and m, summs).
    b = (9 if t.q8_1 else 7) * k
    return b, b + 2, b + 3, b + 5, b + 7, b + 8


def act(t):
    s = [a.ldr_s_post(DX, 7, 4 if t.q8_1 else 8)]
    if t.q8_1:
        s.append(a.ldr_s_post(SX, 7, 4))
    return s + [a.ld1(A0, 2, 7)]


def row_block(t, k, p, neon):
    w, d, i, f, m, sm = regs(t, k)
    s = t.load(p, w, d, i, m) + [a.fmul_ss(d, d, DX)]
    if t.q8_1:
        s.append(a.fmadd_s(sm, m, SX, sm))
    for h in range(2):
        s += a.dot16(i + h, w + h, A0 + h, neon)
    return s + [a.scvtf(i, i), a.scvtf(i + 1, i + 1), a.fmla_el(f, i, d, 0), a.fmla_el(f + 1, i + 1, d, 0)]


def row_zero(t, k):
    w, d, i, f, m, sm = regs(t, k)
    return [a.movi_b(f, 0), a.movi_b(f + 1, 0)] + ([a.movi_b(sm, 0)] if t.q8_1 else [])


def row_store(t, k):
    w, d, i, f, m, sm = regs(t, k)
    return a.hsum8(f) + ([a.fadd_ss(f, f, sm)] if t.q8_1 else []) + [a.str_s_post(f, 3, 4)]


def rows_kernel(name, t, act_type, neon):
    """The x1 kernel: one activation row (x7), weight rows (np, as stored,
    row stride x16 = nb·bs) t.rows at a time (x12.., independent
    accumulator chains), then one at a time; output r at 4r."""
    R = t.rows
    out = a.prologue(name, act_type)
    body = t.consts() + a.muli(16, 6, t.bs, 17) + [a.cbz(5, 'done')]
    body += ['group:', a.cmpi(5, R), a.blt('single')]
    for k in range(R):
        body += row_zero(t, k)
    body.append(a.mov(12, 0))
    for k in range(1, R):
        body.append(a.add(12 + k, 11 + k, 16))
    body += [a.mov(7, 1), a.mov(11, 6), 'gblock:'] + act(t)
    for k in range(R):
        body += row_block(t, k, 12 + k, neon)
    body += [a.subs1(11), a.bne('gblock')]
    for k in range(R):
        body += row_store(t, k)
    body += [a.mov(0, 11 + R), a.subsi(5, R), a.b('group')]
    body += ['single:', a.cbz(5, 'done')] + row_zero(t, 0) + [a.mov(7, 1), a.mov(11, 6), 'sblock:'] + act(t)
    body += row_block(t, 0, 0, neon) + [a.subs1(11), a.bne('sblock')]
    body += row_store(t, 0) + [a.subs1(5), a.b('single')]
    out += a.indent(body)
    return '\n'.join(out + ['done:', '\tRET', ''])
