"""Encodings of the arm64 instructions the kernel generators use (see
scripts/arm64asm.py, which re-exports them): each returns one line, a WORD
with its GNU spelling or a Go instruction with it.
"""


def _r(n):
    assert 0 <= n < 32, n
    return n


class Insn(str):
    """One instruction: its line in Go's assembly (a WORD or Go syntax,
    with "// gnu: <GNU spelling>"), also as .go, and its GNU spelling as
    .gnu (for llvm-mca)."""

    def __new__(cls, line, gnu):
        obj = super().__new__(cls, line)
        obj.go, obj.gnu = line, gnu
        return obj


def word(enc, gnu):
    """One instruction as a WORD with its GNU spelling."""
    return Insn(f'WORD ${enc:#010x} // gnu: {gnu}', gnu)


def go(text, gnu):
    """One instruction in Go syntax with its GNU spelling."""
    return Insn(f'{text} // gnu: {gnu}', gnu)


def three(base, d, n, m):
    return base | _r(m) << 16 | _r(n) << 5 | _r(d)


def two(base, d, n):
    return base | _r(n) << 5 | _r(d)


def sdot(d, n, m):
    """SDOT Vd.4S, Vn.16B, Vm.16B: lane i += Σ n[4i..4i+3]·m[4i..4i+3]."""
    return word(three(0x4E809400, d, n, m), f'sdot v{d}.4s, v{n}.16b, v{m}.16b')


def sdot_el(d, n, m, i):
    """SDOT Vd.4S, Vn.16B, Vm.4B[i]: lane l += Σ n[4l..4l+3]·m[4i..4i+3]."""
    enc = 0x4F80E000 | (i & 1) << 21 | _r(m) << 16 | (i >> 1) << 11 | _r(n) << 5 | _r(d)
    return word(enc, f'sdot v{d}.4s, v{n}.16b, v{m}.4b[{i}]')


def smmla(d, n, m):
    """SMMLA Vd.4S, Vn.16B, Vm.16B: the 2×2 int32 product of n's two rows
    of 8 bytes by m's two rows of 8 bytes (d[2i+j] += n_i · m_j)."""
    return word(three(0x4E80A400, d, n, m), f'smmla v{d}.4s, v{n}.16b, v{m}.16b')


def smull(d, n, m):
    """SMULL Vd.8H, Vn.8B, Vm.8B."""
    return word(three(0x0E20C000, d, n, m), f'smull v{d}.8h, v{n}.8b, v{m}.8b')


def smull2(d, n, m):
    """SMULL2 Vd.8H, Vn.16B, Vm.16B."""
    return word(three(0x4E20C000, d, n, m), f'smull2 v{d}.8h, v{n}.16b, v{m}.16b')


def smlal(d, n, m):
    """SMLAL Vd.8H, Vn.8B, Vm.8B."""
    return word(three(0x0E208000, d, n, m), f'smlal v{d}.8h, v{n}.8b, v{m}.8b')


def smlal2(d, n, m):
    """SMLAL2 Vd.8H, Vn.16B, Vm.16B."""
    return word(three(0x4E208000, d, n, m), f'smlal2 v{d}.8h, v{n}.16b, v{m}.16b')


def saddlp(d, n):
    """SADDLP Vd.4S, Vn.8H: pairs of int16 added into int32."""
    return word(two(0x4E602800, d, n), f'saddlp v{d}.4s, v{n}.8h')


def addp_h(d, n, m):
    """ADDP Vd.8H, Vn.8H, Vm.8H."""
    return word(three(0x4E60BC00, d, n, m), f'addp v{d}.8h, v{n}.8h, v{m}.8h')


def addp_s(d, n, m):
    """ADDP Vd.4S, Vn.4S, Vm.4S."""
    return word(three(0x4EA0BC00, d, n, m), f'addp v{d}.4s, v{n}.4s, v{m}.4s')


def add_s(d, n, m):
    """ADD Vd.4S, Vn.4S, Vm.4S."""
    return word(three(0x4EA08400, d, n, m), f'add v{d}.4s, v{n}.4s, v{m}.4s')


def add_h(d, n, m):
    """ADD Vd.8H, Vn.8H, Vm.8H."""
    return word(three(0x4E608400, d, n, m), f'add v{d}.8h, v{n}.8h, v{m}.8h')


def sub_b(d, n, m):
    """SUB Vd.16B, Vn.16B, Vm.16B."""
    return word(three(0x6E208400, d, n, m), f'sub v{d}.16b, v{n}.16b, v{m}.16b')


def mul_s_el(d, n, m, i):
    """MUL Vd.4S, Vn.4S, Vm.S[i]."""
    enc = 0x4F808000 | (i & 1) << 21 | _r(m) << 16 | (i >> 1) << 11 | _r(n) << 5 | _r(d)
    return word(enc, f'mul v{d}.4s, v{n}.4s, v{m}.s[{i}]')


def mla_s(d, n, m):
    """MLA Vd.4S, Vn.4S, Vm.4S."""
    return word(three(0x4EA09400, d, n, m), f'mla v{d}.4s, v{n}.4s, v{m}.4s')


def and16(d, n, m):
    """AND Vd.16B, Vn.16B, Vm.16B."""
    return word(three(0x4E201C00, d, n, m), f'and v{d}.16b, v{n}.16b, v{m}.16b')


def orr16(d, n, m):
    """ORR Vd.16B, Vn.16B, Vm.16B."""
    return word(three(0x4EA01C00, d, n, m), f'orr v{d}.16b, v{n}.16b, v{m}.16b')


def mov16(d, n):
    """MOV Vd.16B, Vn.16B (ORR)."""
    return word(three(0x4EA01C00, d, n, n), f'mov v{d}.16b, v{n}.16b')


def ushr_b(d, n, s):
    """USHR Vd.16B, Vn.16B, #s."""
    assert 1 <= s <= 8
    return word(0x6F000400 | (16 - s) << 16 | _r(n) << 5 | _r(d), f'ushr v{d}.16b, v{n}.16b, #{s}')


def movi_b(d, imm):
    """MOVI Vd.16B, #imm."""
    assert 0 <= imm < 256
    enc = 0x4F00E400 | (imm >> 5) << 16 | (imm & 31) << 5 | _r(d)
    return word(enc, f'movi v{d}.16b, #{imm:#x}')


def dup_s(d, n, i):
    """DUP Vd.4S, Vn.S[i]."""
    return word(0x4E000400 | (i << 3 | 4) << 16 | _r(n) << 5 | _r(d), f'dup v{d}.4s, v{n}.s[{i}]')


def ext16(d, n, m, imm):
    """EXT Vd.16B, Vn.16B, Vm.16B, #imm."""
    return word(0x6E000000 | _r(m) << 16 | imm << 11 | _r(n) << 5 | _r(d), f'ext v{d}.16b, v{n}.16b, v{m}.16b, #{imm}')


def zip1_d(d, n, m):
    """ZIP1 Vd.2D, Vn.2D, Vm.2D."""
    return word(three(0x4EC03800, d, n, m), f'zip1 v{d}.2d, v{n}.2d, v{m}.2d')


def zip2_d(d, n, m):
    """ZIP2 Vd.2D, Vn.2D, Vm.2D."""
    return word(three(0x4EC07800, d, n, m), f'zip2 v{d}.2d, v{n}.2d, v{m}.2d')


def scvtf(d, n):
    """SCVTF Vd.4S, Vn.4S."""
    return word(two(0x4E21D800, d, n), f'scvtf v{d}.4s, v{n}.4s')


def fcvtl(d, n):
    """FCVTL Vd.4S, Vn.4H (the low four f16)."""
    return word(two(0x0E217800, d, n), f'fcvtl v{d}.4s, v{n}.4h')


def fcvtl2(d, n):
    """FCVTL2 Vd.4S, Vn.8H (the high four f16)."""
    return word(two(0x4E217800, d, n), f'fcvtl2 v{d}.4s, v{n}.8h')


def fcvt_sh(d, n):
    """FCVT Sd, Hn."""
    return word(two(0x1EE24000, d, n), f'fcvt s{d}, h{n}')


def fmul_ss(d, n, m):
    """FMUL Sd, Sn, Sm."""
    return word(three(0x1E200800, d, n, m), f'fmul s{d}, s{n}, s{m}')


def fmul(d, n, m):
    """FMUL Vd.4S, Vn.4S, Vm.4S."""
    return word(three(0x6E20DC00, d, n, m), f'fmul v{d}.4s, v{n}.4s, v{m}.4s')


def fmul_el(d, n, m, i):
    """FMUL Vd.4S, Vn.4S, Vm.S[i]."""
    enc = 0x4F809000 | (i & 1) << 21 | _r(m) << 16 | (i >> 1) << 11 | _r(n) << 5 | _r(d)
    return word(enc, f'fmul v{d}.4s, v{n}.4s, v{m}.s[{i}]')


def fmla(d, n, m):
    """FMLA Vd.4S, Vn.4S, Vm.4S (fused)."""
    return word(three(0x4E20CC00, d, n, m), f'fmla v{d}.4s, v{n}.4s, v{m}.4s')


def fmla_el(d, n, m, i):
    """FMLA Vd.4S, Vn.4S, Vm.S[i] (fused)."""
    enc = 0x4F801000 | (i & 1) << 21 | _r(m) << 16 | (i >> 1) << 11 | _r(n) << 5 | _r(d)
    return word(enc, f'fmla v{d}.4s, v{n}.4s, v{m}.s[{i}]')


def fadd(d, n, m):
    """FADD Vd.4S, Vn.4S, Vm.4S."""
    return word(three(0x4E20D400, d, n, m), f'fadd v{d}.4s, v{n}.4s, v{m}.4s')


def fadd2(d, n, m):
    """FADD Vd.2S, Vn.2S, Vm.2S."""
    return word(three(0x0E20D400, d, n, m), f'fadd v{d}.2s, v{n}.2s, v{m}.2s')


def faddp_s(d, n):
    """FADDP Sd, Vn.2S: n[0] + n[1]."""
    return word(two(0x7E30D800, d, n), f'faddp s{d}, v{n}.2s')


def fadd_ss(d, n, m):
    """FADD Sd, Sn, Sm."""
    return word(three(0x1E202800, d, n, m), f'fadd s{d}, s{n}, s{m}')


_LD1_OPC = {1: 0b0111, 2: 0b1010, 3: 0b0110, 4: 0b0010}


def ld1(t, k, n, post=True):
    """LD1 {Vt.16B .. Vt+k-1.16B}, [Xn] (post-incremented by 16k)."""
    regs = ', '.join(f'v{(t + i) % 32}.16b' for i in range(k))
    enc = (0x4CDF0000 if post else 0x4C400000) | _LD1_OPC[k] << 12 | _r(n) << 5 | _r(t)
    return word(enc, f'ld1 {{{regs}}}, [x{n}]' + (f', #{16 * k}' if post else ''))


def ld1r_s(t, n):
    """LD1R {Vt.4S}, [Xn], #4: one 32-bit value to every lane."""
    return word(0x4DDFC800 | _r(n) << 5 | _r(t), f'ld1r {{v{t}.4s}}, [x{n}], #4')


def ld1r_s_noinc(t, n):
    """LD1R {Vt.4S}, [Xn]."""
    return word(0x4D40C800 | _r(n) << 5 | _r(t), f'ld1r {{v{t}.4s}}, [x{n}]')


def _post(base, t, n, imm):
    assert -256 <= imm < 256
    return base | (imm & 0x1FF) << 12 | _r(n) << 5 | _r(t)


def ldr_q_post(t, n, imm):
    """LDR Qt, [Xn], #imm."""
    return word(_post(0x3CC00400, t, n, imm), f'ldr q{t}, [x{n}], #{imm}')


def ldr_d_post(t, n, imm):
    """LDR Dt, [Xn], #imm."""
    return word(_post(0xFC400400, t, n, imm), f'ldr d{t}, [x{n}], #{imm}')


def ldr_s_post(t, n, imm):
    """LDR St, [Xn], #imm."""
    return word(_post(0xBC400400, t, n, imm), f'ldr s{t}, [x{n}], #{imm}')


def ldr_h_post(t, n, imm):
    """LDR Ht, [Xn], #imm."""
    return word(_post(0x7C400400, t, n, imm), f'ldr h{t}, [x{n}], #{imm}')


def ldr_q(t, n, off=0):
    """LDR Qt, [Xn, #off] (off a multiple of 16)."""
    assert off % 16 == 0 and 0 <= off < 65536
    return word(0x3DC00000 | (off // 16) << 10 | _r(n) << 5 | _r(t), f'ldr q{t}, [x{n}, #{off}]')


def ldur_q(t, n, off):
    """LDUR Qt, [Xn, #off] (-256 <= off < 256)."""
    assert -256 <= off < 256
    return word(0x3CC00000 | (off & 0x1FF) << 12 | _r(n) << 5 | _r(t), f'ldur q{t}, [x{n}, #{off}]')


def ldr_s(t, n, off=0):
    """LDR St, [Xn, #off] (off a multiple of 4)."""
    assert off % 4 == 0 and 0 <= off < 16384
    return word(0xBD400000 | (off // 4) << 10 | _r(n) << 5 | _r(t), f'ldr s{t}, [x{n}, #{off}]')


def str_s_post(t, n, imm):
    """STR St, [Xn], #imm."""
    return word(_post(0xBC000400, t, n, imm), f'str s{t}, [x{n}], #{imm}')


def str_s(t, n, off=0):
    """STR St, [Xn, #off] (off a multiple of 4)."""
    assert off % 4 == 0 and 0 <= off < 16384
    return word(0xBD000000 | (off // 4) << 10 | _r(n) << 5 | _r(t), f'str s{t}, [x{n}, #{off}]' if off else f'str s{t}, [x{n}]')


def stp_q(t1, t2, n, off=0):
    """STP Qt1, Qt2, [Xn, #off] (off a multiple of 16)."""
    imm7 = (off // 16) & 0x7f
    return word(0xAD000000 | imm7 << 15 | _r(t2) << 10 | _r(n) << 5 | _r(t1),
                f'stp q{t1}, q{t2}, [x{n}, #{off}]' if off else f'stp q{t1}, q{t2}, [x{n}]')


def sxtl_h(d, n):
    """SXTL Vd.8H, Vn.8B (SSHLL #0)."""
    return word(two(0x0F08A400, d, n), f'sxtl v{d}.8h, v{n}.8b')


def sxtl2_h(d, n):
    """SXTL2 Vd.8H, Vn.16B."""
    return word(two(0x4F08A400, d, n), f'sxtl2 v{d}.8h, v{n}.16b')


def sxtl_s(d, n):
    """SXTL Vd.4S, Vn.4H."""
    return word(two(0x0F10A400, d, n), f'sxtl v{d}.4s, v{n}.4h')


def sxtl2_s(d, n):
    """SXTL2 Vd.4S, Vn.8H."""
    return word(two(0x4F10A400, d, n), f'sxtl2 v{d}.4s, v{n}.8h')


def smull_s(d, n, m):
    """SMULL Vd.4S, Vn.4H, Vm.4H."""
    return word(three(0x0E60C000, d, n, m), f'smull v{d}.4s, v{n}.4h, v{m}.4h')


def smull2_s(d, n, m):
    """SMULL2 Vd.4S, Vn.8H, Vm.8H."""
    return word(three(0x4E60C000, d, n, m), f'smull2 v{d}.4s, v{n}.8h, v{m}.8h')


def shl_s(d, n, s):
    """SHL Vd.4S, Vn.4S, #s."""
    return word(0x4F005400 | (32 + s) << 16 | _r(n) << 5 | _r(d), f'shl v{d}.4s, v{n}.4s, #{s}')


def shl_b(d, n, s):
    """SHL Vd.16B, Vn.16B, #s."""
    return word(0x4F005400 | (8 + s) << 16 | _r(n) << 5 | _r(d), f'shl v{d}.16b, v{n}.16b, #{s}')


def neg_s(d, n):
    """NEG Vd.4S, Vn.4S."""
    return word(two(0x6EA0B800, d, n), f'neg v{d}.4s, v{n}.4s')


def sub_s(d, n, m):
    """SUB Vd.4S, Vn.4S, Vm.4S."""
    return word(three(0x6EA08400, d, n, m), f'sub v{d}.4s, v{n}.4s, v{m}.4s')


def mla_s_el(d, n, m, i):
    """MLA Vd.4S, Vn.4S, Vm.S[i]."""
    enc = 0x6F800000 | (i & 1) << 21 | _r(m) << 16 | (i >> 1) << 11 | _r(n) << 5 | _r(d)
    return word(enc, f'mla v{d}.4s, v{n}.4s, v{m}.s[{i}]')


def ldr_h(t, n, off):
    """LDR Ht, [Xn, #off] (off even)."""
    assert off % 2 == 0 and 0 <= off < 8192
    return word(0x7D400000 | (off // 2) << 10 | _r(n) << 5 | _r(t), f'ldr h{t}, [x{n}, #{off}]')


def addv_s(d, n):
    """ADDV Sd, Vn.4S: the sum of the four lanes."""
    return word(two(0x4EB1B800, d, n), f'addv s{d}, v{n}.4s')


def scvtf_ss(d, n):
    """SCVTF Sd, Sn (an int32 in lane 0 to float)."""
    return word(two(0x5E21D800, d, n), f'scvtf s{d}, s{n}')


def fmadd_s(d, n, m, acc):
    """FMADD Sd, Sn, Sm, Sa: n·m + a, fused."""
    return word(0x1F000000 | _r(m) << 16 | _r(acc) << 10 | _r(n) << 5 | _r(d), f'fmadd s{d}, s{n}, s{m}, s{acc}')


def fsub_ss(d, n, m):
    """FSUB Sd, Sn, Sm."""
    return word(three(0x1E203800, d, n, m), f'fsub s{d}, s{n}, s{m}')


def ins_s(d, i, n):
    """MOV Vd.S[i], Wn."""
    return word(0x4E001C00 | (i << 3 | 4) << 16 | _r(n) << 5 | _r(d), f'mov v{d}.s[{i}], w{n}')


def tbl(d, n, m):
    """TBL Vd.16B, {Vn.16B}, Vm.16B."""
    return word(three(0x4E000000, d, n, m), f'tbl v{d}.16b, {{v{n}.16b}}, v{m}.16b')


def cmtst(d, n, m):
    """CMTST Vd.16B, Vn.16B, Vm.16B: 0xff where n & m is not zero."""
    return word(three(0x4E208C00, d, n, m), f'cmtst v{d}.16b, v{n}.16b, v{m}.16b')


def bic16(d, n, m):
    """BIC Vd.16B, Vn.16B, Vm.16B: n & ~m."""
    return word(three(0x4E601C00, d, n, m), f'bic v{d}.16b, v{n}.16b, v{m}.16b')


def fnmul_ss(d, n, m):
    """FNMUL Sd, Sn, Sm: −(n·m)."""
    return word(three(0x1E208800, d, n, m), f'fnmul s{d}, s{n}, s{m}')


def zip1_s(d, n, m):
    """ZIP1 Vd.4S, Vn.4S, Vm.4S: n0, m0, n1, m1."""
    return word(three(0x4E803800, d, n, m), f'zip1 v{d}.4s, v{n}.4s, v{m}.4s')


def zip2_s(d, n, m):
    """ZIP2 Vd.4S, Vn.4S, Vm.4S: n2, m2, n3, m3."""
    return word(three(0x4E807800, d, n, m), f'zip2 v{d}.4s, v{n}.4s, v{m}.4s')


def zip1_b(d, n, m):
    """ZIP1 Vd.16B, Vn.16B, Vm.16B: n0, m0, n1, m1, ..."""
    return word(three(0x4E003800, d, n, m), f'zip1 v{d}.16b, v{n}.16b, v{m}.16b')


def ushl_h(d, n, m):
    """USHL Vd.8H, Vn.8H, Vm.8H (negative counts shift right)."""
    return word(three(0x6E604400, d, n, m), f'ushl v{d}.8h, v{n}.8h, v{m}.8h')


def xtn_b(d, n):
    """XTN Vd.8B, Vn.8H."""
    return word(two(0x0E212800, d, n), f'xtn v{d}.8b, v{n}.8h')


def ld1r_h_noinc(t, n):
    """LD1R {Vt.8H}, [Xn]."""
    return word(0x4D40C400 | _r(n) << 5 | _r(t), f'ld1r {{v{t}.8h}}, [x{n}]')


def ushl_b(d, n, m):
    """USHL Vd.16B, Vn.16B, Vm.16B (negative counts shift right)."""
    return word(three(0x6E204400, d, n, m), f'ushl v{d}.16b, v{n}.16b, v{m}.16b')


def ldr_d(t, n, off):
    """LDR Dt, [Xn, #off] (off a multiple of 8)."""
    assert off % 8 == 0 and 0 <= off < 32768
    return word(0xFD400000 | (off // 8) << 10 | _r(n) << 5 | _r(t), f'ldr d{t}, [x{n}, #{off}]')


def shll_s(d, n):
    """SHLL Vd.4S, Vn.4H, #16 (bf16 to f32: the low four)."""
    return word(two(0x2E613800, d, n), f'shll v{d}.4s, v{n}.4h, #16')


def shll2_s(d, n):
    """SHLL2 Vd.4S, Vn.8H, #16 (bf16 to f32: the high four)."""
    return word(two(0x6E613800, d, n), f'shll2 v{d}.4s, v{n}.8h, #16')


def zip1_h(d, n, m):
    """ZIP1 Vd.8H, Vn.8H, Vm.8H: n0, m0, n1, m1, ..."""
    return word(three(0x4E403800, d, n, m), f'zip1 v{d}.8h, v{n}.8h, v{m}.8h')


def smlal2_s(d, n, m):
    """SMLAL2 Vd.4S, Vn.8H, Vm.8H."""
    return word(three(0x4E608000, d, n, m), f'smlal2 v{d}.4s, v{n}.8h, v{m}.8h')


def fsub(d, n, m):
    """FSUB Vd.4S, Vn.4S, Vm.4S."""
    return word(three(0x4EA0D400, d, n, m), f'fsub v{d}.4s, v{n}.4s, v{m}.4s')


def st1_s_lane(t, i, n):
    """ST1 {Vt.S}[i], [Xn]."""
    assert 0 <= i < 4
    return word(0x0D008000 | (i >> 1) << 30 | (i & 1) << 12 | _r(n) << 5 | _r(t), f'st1 {{v{t}.s}}[{i}], [x{n}]')


def st1_d_lane(t, i, n):
    """ST1 {Vt.D}[i], [Xn]."""
    assert 0 <= i < 2
    return word(0x0D008400 | i << 30 | _r(n) << 5 | _r(t), f'st1 {{v{t}.d}}[{i}], [x{n}]')


def fmov_s_one(d):
    """FMOV Sd, #1.0."""
    return word(0x1E2E1000 | _r(d), f'fmov s{d}, #1.0')


def fcmp_ss(n, m):
    """FCMP Sn, Sm."""
    return word(0x1E202000 | _r(m) << 16 | _r(n) << 5, f'fcmp s{n}, s{m}')


def fcvtl_d(d, n):
    """FCVTL Vd.2D, Vn.2S (the low two floats to doubles)."""
    return word(two(0x0E617800, d, n), f'fcvtl v{d}.2d, v{n}.2s')


def fcvtl2_d(d, n):
    """FCVTL2 Vd.2D, Vn.4S (the high two)."""
    return word(two(0x4E617800, d, n), f'fcvtl2 v{d}.2d, v{n}.4s')


def fadd_d(d, n, m):
    """FADD Vd.2D, Vn.2D, Vm.2D."""
    return word(three(0x4E60D400, d, n, m), f'fadd v{d}.2d, v{n}.2d, v{m}.2d')


def faddp_d(d, n):
    """FADDP Dd, Vn.2D: lane 0 + lane 1."""
    return word(two(0x7E70D800, d, n), f'faddp d{d}, v{n}.2d')


def fcvt_sd(d, n):
    """FCVT Sd, Dn (to nearest even)."""
    return word(two(0x1E624000, d, n), f'fcvt s{d}, d{n}')


def fcvtn(d, n):
    """FCVTN Vd.4H, Vn.4S (to nearest even)."""
    return word(two(0x0E216800, d, n), f'fcvtn v{d}.4h, v{n}.4s')


def fcvtn2(d, n):
    """FCVTN2 Vd.8H, Vn.4S."""
    return word(two(0x4E216800, d, n), f'fcvtn2 v{d}.8h, v{n}.4s')


_ST1_OPC = {1: 0b0111, 2: 0b1010, 3: 0b0110, 4: 0b0010}


def st1(t, k, n):
    """ST1 {Vt.16B .. Vt+k-1.16B}, [Xn], #16k."""
    regs = ', '.join(f'v{(t + i) % 32}.16b' for i in range(k))
    return word(0x4C9F0000 | _ST1_OPC[k] << 12 | _r(n) << 5 | _r(t), f'st1 {{{regs}}}, [x{n}], #{16 * k}')


def sadalp(d, n):
    """SADALP Vd.4S, Vn.8H: pairs of int16 added into the int32 lanes of d."""
    return word(two(0x4E606800, d, n), f'sadalp v{d}.4s, v{n}.8h')


def trn1_d(d, n, m):
    """TRN1 Vd.2D, Vn.2D, Vm.2D: n0, m0 (ZIP1 .2d's result; LLVM's
    Cortex-A57 model, which llvm-mca uses for the Neoverse cores, charges
    ZIP .2d three micro-ops and TRN one)."""
    return word(three(0x4EC02800, d, n, m), f'trn1 v{d}.2d, v{n}.2d, v{m}.2d')


def trn2_d(d, n, m):
    """TRN2 Vd.2D, Vn.2D, Vm.2D: n1, m1 (ZIP2 .2d's result)."""
    return word(three(0x4EC06800, d, n, m), f'trn2 v{d}.2d, v{n}.2d, v{m}.2d')


def fmax4s(d, n, m):
    return word(three(0x4E20F400, d, n, m), f'fmax v{d}.4s, v{n}.4s, v{m}.4s')


def fabs4s(d, n):
    return word(0x4EA0F800 | n << 5 | d, f'fabs v{d}.4s, v{n}.4s')


def movi_zero(d):
    return word(0x6F00E400 | d, f'movi v{d}.2d, #0')


def movi_2d(d, imm8):
    """MOVI Vd.2D, #imm: each bit of imm8 a byte of 0x00 or 0xff."""
    bits = imm8 >> 5 << 16 | (imm8 & 31) << 5
    val = 0
    for b in range(8):
        if imm8 >> b & 1:
            val |= 0xff << (8 * b)
    return word(0x6F00E400 | bits | d, f'movi v{d}.2d, #{val:#018x}')


def ldr_q_reg(t, n, m):
    """LDR Qt, [Xn, Xm]."""
    return word(0x3CE06800 | m << 16 | n << 5 | t, f'ldr q{t}, [x{n}, x{m}]')


def ldp_q(t1, t2, n, off=0):
    """LDP Qt1, Qt2, [Xn, #off] (off a multiple of 16)."""
    assert off % 16 == 0 and -1024 <= off <= 1008, off
    imm7 = (off // 16) & 0x7f
    return word(0xAD400000 | imm7 << 15 | t2 << 10 | n << 5 | t1, f'ldp q{t1}, q{t2}, [x{n}, #{off}]')


def str_q(t, n, off=0):
    """STR Qt, [Xn, #off] (off a multiple of 16)."""
    return word(0x3D800000 | (off // 16) << 10 | n << 5 | t, f'str q{t}, [x{n}, #{off}]')


def str_d(t, n, off=0):
    """STR Dt, [Xn, #off] (off a multiple of 8)."""
    return word(0xFD000000 | (off // 8) << 10 | n << 5 | t, f'str d{t}, [x{n}, #{off}]')


def prfm_pldl2keep(n):
    return word(0xF9800000 | n << 5 | 2, f'prfm pldl2keep, [x{n}]')


def fcvtns4s(d, n):
    return word(0x4E21A800 | n << 5 | d, f'fcvtns v{d}.4s, v{n}.4s')


def sqxtn_h(d, n):
    return word(0x0E614800 | n << 5 | d, f'sqxtn v{d}.4h, v{n}.4s')


def sqxtn2_h(d, n):
    return word(0x4E614800 | n << 5 | d, f'sqxtn2 v{d}.8h, v{n}.4s')


def sqxtn_b(d, n):
    return word(0x0E214800 | n << 5 | d, f'sqxtn v{d}.8b, v{n}.8h')


def sqxtn2_b(d, n):
    return word(0x4E214800 | n << 5 | d, f'sqxtn2 v{d}.16b, v{n}.8h')


def fmaxv(d, n):
    return word(0x6E30F800 | n << 5 | d, f'fmaxv s{d}, v{n}.4s')


def saddlp_h(d, n):
    return word(0x4E202800 | n << 5 | d, f'saddlp v{d}.8h, v{n}.16b')


def sadalp_h(d, n):
    return word(0x4E206800 | n << 5 | d, f'sadalp v{d}.8h, v{n}.16b')


def saddlv_s(d, n):
    return word(0x4E703800 | n << 5 | d, f'saddlv s{d}, v{n}.8h')


def fdiv_s(d, n, m):
    return word(0x1E201800 | m << 16 | n << 5 | d, f'fdiv s{d}, s{n}, s{m}')


def fabs_s(d, n):
    return word(0x1E20C000 | n << 5 | d, f'fabs s{d}, s{n}')


def fcvt_h_s(d, n):
    return word(0x1E23C000 | n << 5 | d, f'fcvt h{d}, s{n}')


def fmov_s_w(d, n):
    return word(0x1E270000 | n << 5 | d, f'fmov s{d}, w{n}')


def fmov_w_s(d, n):
    return word(0x1E260000 | n << 5 | d, f'fmov w{d}, s{n}')


def scvtf_s_w(d, n):
    return word(0x1E220000 | n << 5 | d, f'scvtf s{d}, w{n}')


def stur_q(t, n, off):
    """STUR Qt, [Xn, #off] (-256 ≤ off < 256)."""
    return word(0x3C800000 | (off & 0x1ff) << 12 | n << 5 | t, f'stur q{t}, [x{n}, #{off}]')


def fmaxnm4s(d, n, m):
    """FMAXNM: a NaN operand loses to a number (Go's `a > amax` scan)."""
    return word(three(0x4E20C400, d, n, m), f'fmaxnm v{d}.4s, v{n}.4s, v{m}.4s')


def fmaxnmv(d, n):
    return word(0x6E30C800 | n << 5 | d, f'fmaxnmv s{d}, v{n}.4s')


def smlal_s(d, n, m):
    """SMLAL Vd.4S, Vn.4H, Vm.4H."""
    return word(three(0x0E608000, d, n, m), f'smlal v{d}.4s, v{n}.4h, v{m}.4h')


def zip2_b(d, n, m):
    """ZIP2 Vd.16B, Vn.16B, Vm.16B: n8, m8, n9, m9, ..."""
    return word(three(0x4E007800, d, n, m), f'zip2 v{d}.16b, v{n}.16b, v{m}.16b')
