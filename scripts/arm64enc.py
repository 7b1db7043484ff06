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


# Most encodings are a base word with the registers filled in: the tables
# below give each its base and its GNU spelling, {d}, {n}, {m} (and {i},
# an element's index) standing for the operands.

def _three_reg(base, gnu):
    """The encoder of an instruction of registers d, n and m."""
    return lambda d, n, m: word(three(base, d, n, m), gnu.format(d=d, n=n, m=m))


def _two_reg(base, gnu):
    """The encoder of an instruction of registers d and n."""
    return lambda d, n: word(two(base, d, n), gnu.format(d=d, n=n))


def _by_element(base, gnu):
    """The encoder of a by-element instruction: d, n and element i of m's
    four 32-bit lanes (H:L, the index's bits, at bits 11 and 21)."""
    return lambda d, n, m, i: word(base | (i & 1) << 21 | _r(m) << 16 | (i >> 1) << 11 | _r(n) << 5 | _r(d),
                                   gnu.format(d=d, n=n, m=m, i=i))


sdot = _three_reg(0x4E809400, 'sdot v{d}.4s, v{n}.16b, v{m}.16b')  # lane i += Σ n[4i..4i+3]·m[4i..4i+3]
sdot_el = _by_element(0x4F80E000, 'sdot v{d}.4s, v{n}.16b, v{m}.4b[{i}]')  # lane l += Σ n[4l..4l+3]·m[4i..4i+3]


# SMMLA: the 2×2 int32 product of n's two rows of 8 bytes by m's two rows
# of 8 bytes (d[2i+j] += n_i · m_j).
smmla = _three_reg(0x4E80A400, 'smmla v{d}.4s, v{n}.16b, v{m}.16b')
smull = _three_reg(0x0E20C000, 'smull v{d}.8h, v{n}.8b, v{m}.8b')
smull2 = _three_reg(0x4E20C000, 'smull2 v{d}.8h, v{n}.16b, v{m}.16b')
smlal = _three_reg(0x0E208000, 'smlal v{d}.8h, v{n}.8b, v{m}.8b')
smlal2 = _three_reg(0x4E208000, 'smlal2 v{d}.8h, v{n}.16b, v{m}.16b')
saddlp = _two_reg(0x4E602800, 'saddlp v{d}.4s, v{n}.8h')  # pairs of int16 added into int32
addp_h = _three_reg(0x4E60BC00, 'addp v{d}.8h, v{n}.8h, v{m}.8h')
addp_s = _three_reg(0x4EA0BC00, 'addp v{d}.4s, v{n}.4s, v{m}.4s')
add_s = _three_reg(0x4EA08400, 'add v{d}.4s, v{n}.4s, v{m}.4s')
add_h = _three_reg(0x4E608400, 'add v{d}.8h, v{n}.8h, v{m}.8h')
sub_b = _three_reg(0x6E208400, 'sub v{d}.16b, v{n}.16b, v{m}.16b')
mul_s_el = _by_element(0x4F808000, 'mul v{d}.4s, v{n}.4s, v{m}.s[{i}]')
mla_s = _three_reg(0x4EA09400, 'mla v{d}.4s, v{n}.4s, v{m}.4s')
and16 = _three_reg(0x4E201C00, 'and v{d}.16b, v{n}.16b, v{m}.16b')
orr16 = _three_reg(0x4EA01C00, 'orr v{d}.16b, v{n}.16b, v{m}.16b')


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


zip1_d = _three_reg(0x4EC03800, 'zip1 v{d}.2d, v{n}.2d, v{m}.2d')
zip2_d = _three_reg(0x4EC07800, 'zip2 v{d}.2d, v{n}.2d, v{m}.2d')
scvtf = _two_reg(0x4E21D800, 'scvtf v{d}.4s, v{n}.4s')
fcvtl = _two_reg(0x0E217800, 'fcvtl v{d}.4s, v{n}.4h')  # the low four f16
fcvtl2 = _two_reg(0x4E217800, 'fcvtl2 v{d}.4s, v{n}.8h')  # the high four f16
fcvt_sh = _two_reg(0x1EE24000, 'fcvt s{d}, h{n}')
fmul_ss = _three_reg(0x1E200800, 'fmul s{d}, s{n}, s{m}')
fmul = _three_reg(0x6E20DC00, 'fmul v{d}.4s, v{n}.4s, v{m}.4s')
fmul_el = _by_element(0x4F809000, 'fmul v{d}.4s, v{n}.4s, v{m}.s[{i}]')
fmla = _three_reg(0x4E20CC00, 'fmla v{d}.4s, v{n}.4s, v{m}.4s')  # fused
fmla_el = _by_element(0x4F801000, 'fmla v{d}.4s, v{n}.4s, v{m}.s[{i}]')  # fused
fadd = _three_reg(0x4E20D400, 'fadd v{d}.4s, v{n}.4s, v{m}.4s')
fadd2 = _three_reg(0x0E20D400, 'fadd v{d}.2s, v{n}.2s, v{m}.2s')
faddp_s = _two_reg(0x7E30D800, 'faddp s{d}, v{n}.2s')  # n[0] + n[1]
fadd_ss = _three_reg(0x1E202800, 'fadd s{d}, s{n}, s{m}')


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


def _post_index(base, gnu):
    """The encoder of a load or store of register t at Xn, post-indexed by
    imm (-256 <= imm < 256)."""
    def encode(t, n, imm):
        assert -256 <= imm < 256
        return word(base | (imm & 0x1FF) << 12 | _r(n) << 5 | _r(t), gnu.format(t=t, n=n, imm=imm))
    return encode


ldr_q_post = _post_index(0x3CC00400, 'ldr q{t}, [x{n}], #{imm}')
ldr_d_post = _post_index(0xFC400400, 'ldr d{t}, [x{n}], #{imm}')
ldr_s_post = _post_index(0xBC400400, 'ldr s{t}, [x{n}], #{imm}')
ldr_h_post = _post_index(0x7C400400, 'ldr h{t}, [x{n}], #{imm}')


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


str_s_post = _post_index(0xBC000400, 'str s{t}, [x{n}], #{imm}')


def str_s(t, n, off=0):
    """STR St, [Xn, #off] (off a multiple of 4)."""
    assert off % 4 == 0 and 0 <= off < 16384
    return word(0xBD000000 | (off // 4) << 10 | _r(n) << 5 | _r(t), f'str s{t}, [x{n}, #{off}]' if off else f'str s{t}, [x{n}]')


def stp_q(t1, t2, n, off=0):
    """STP Qt1, Qt2, [Xn, #off] (off a multiple of 16)."""
    imm7 = (off // 16) & 0x7f
    return word(0xAD000000 | imm7 << 15 | _r(t2) << 10 | _r(n) << 5 | _r(t1),
                f'stp q{t1}, q{t2}, [x{n}, #{off}]' if off else f'stp q{t1}, q{t2}, [x{n}]')


sxtl_h = _two_reg(0x0F08A400, 'sxtl v{d}.8h, v{n}.8b')  # SSHLL #0
sxtl2_h = _two_reg(0x4F08A400, 'sxtl2 v{d}.8h, v{n}.16b')
sxtl_s = _two_reg(0x0F10A400, 'sxtl v{d}.4s, v{n}.4h')
sxtl2_s = _two_reg(0x4F10A400, 'sxtl2 v{d}.4s, v{n}.8h')
smull_s = _three_reg(0x0E60C000, 'smull v{d}.4s, v{n}.4h, v{m}.4h')
smull2_s = _three_reg(0x4E60C000, 'smull2 v{d}.4s, v{n}.8h, v{m}.8h')


def shl_s(d, n, s):
    """SHL Vd.4S, Vn.4S, #s."""
    return word(0x4F005400 | (32 + s) << 16 | _r(n) << 5 | _r(d), f'shl v{d}.4s, v{n}.4s, #{s}')


def shl_b(d, n, s):
    """SHL Vd.16B, Vn.16B, #s."""
    return word(0x4F005400 | (8 + s) << 16 | _r(n) << 5 | _r(d), f'shl v{d}.16b, v{n}.16b, #{s}')


neg_s = _two_reg(0x6EA0B800, 'neg v{d}.4s, v{n}.4s')
sub_s = _three_reg(0x6EA08400, 'sub v{d}.4s, v{n}.4s, v{m}.4s')
mla_s_el = _by_element(0x6F800000, 'mla v{d}.4s, v{n}.4s, v{m}.s[{i}]')


def ldr_h(t, n, off):
    """LDR Ht, [Xn, #off] (off even)."""
    assert off % 2 == 0 and 0 <= off < 8192
    return word(0x7D400000 | (off // 2) << 10 | _r(n) << 5 | _r(t), f'ldr h{t}, [x{n}, #{off}]')


addv_s = _two_reg(0x4EB1B800, 'addv s{d}, v{n}.4s')  # the sum of the four lanes
scvtf_ss = _two_reg(0x5E21D800, 'scvtf s{d}, s{n}')  # an int32 in lane 0 to float


def fmadd_s(d, n, m, acc):
    """FMADD Sd, Sn, Sm, Sa: n·m + a, fused."""
    return word(0x1F000000 | _r(m) << 16 | _r(acc) << 10 | _r(n) << 5 | _r(d), f'fmadd s{d}, s{n}, s{m}, s{acc}')


fsub_ss = _three_reg(0x1E203800, 'fsub s{d}, s{n}, s{m}')


def ins_s(d, i, n):
    """MOV Vd.S[i], Wn."""
    return word(0x4E001C00 | (i << 3 | 4) << 16 | _r(n) << 5 | _r(d), f'mov v{d}.s[{i}], w{n}')


tbl = _three_reg(0x4E000000, 'tbl v{d}.16b, {{v{n}.16b}}, v{m}.16b')
cmtst = _three_reg(0x4E208C00, 'cmtst v{d}.16b, v{n}.16b, v{m}.16b')  # 0xff where n & m is not zero
bic16 = _three_reg(0x4E601C00, 'bic v{d}.16b, v{n}.16b, v{m}.16b')  # n & ~m
fnmul_ss = _three_reg(0x1E208800, 'fnmul s{d}, s{n}, s{m}')  # −(n·m)
zip1_s = _three_reg(0x4E803800, 'zip1 v{d}.4s, v{n}.4s, v{m}.4s')  # n0, m0, n1, m1
zip2_s = _three_reg(0x4E807800, 'zip2 v{d}.4s, v{n}.4s, v{m}.4s')  # n2, m2, n3, m3
zip1_b = _three_reg(0x4E003800, 'zip1 v{d}.16b, v{n}.16b, v{m}.16b')  # n0, m0, n1, m1, ...
ushl_h = _three_reg(0x6E604400, 'ushl v{d}.8h, v{n}.8h, v{m}.8h')  # negative counts shift right
xtn_b = _two_reg(0x0E212800, 'xtn v{d}.8b, v{n}.8h')


def ld1r_h_noinc(t, n):
    """LD1R {Vt.8H}, [Xn]."""
    return word(0x4D40C400 | _r(n) << 5 | _r(t), f'ld1r {{v{t}.8h}}, [x{n}]')


ushl_b = _three_reg(0x6E204400, 'ushl v{d}.16b, v{n}.16b, v{m}.16b')  # negative counts shift right


def ldr_d(t, n, off):
    """LDR Dt, [Xn, #off] (off a multiple of 8)."""
    assert off % 8 == 0 and 0 <= off < 32768
    return word(0xFD400000 | (off // 8) << 10 | _r(n) << 5 | _r(t), f'ldr d{t}, [x{n}, #{off}]')


shll_s = _two_reg(0x2E613800, 'shll v{d}.4s, v{n}.4h, #16')  # bf16 to f32: the low four
shll2_s = _two_reg(0x6E613800, 'shll2 v{d}.4s, v{n}.8h, #16')  # bf16 to f32: the high four
zip1_h = _three_reg(0x4E403800, 'zip1 v{d}.8h, v{n}.8h, v{m}.8h')  # n0, m0, n1, m1, ...
smlal2_s = _three_reg(0x4E608000, 'smlal2 v{d}.4s, v{n}.8h, v{m}.8h')
fsub = _three_reg(0x4EA0D400, 'fsub v{d}.4s, v{n}.4s, v{m}.4s')


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


fcvtl_d = _two_reg(0x0E617800, 'fcvtl v{d}.2d, v{n}.2s')  # the low two floats to doubles
fcvtl2_d = _two_reg(0x4E617800, 'fcvtl2 v{d}.2d, v{n}.4s')  # the high two
fadd_d = _three_reg(0x4E60D400, 'fadd v{d}.2d, v{n}.2d, v{m}.2d')
faddp_d = _two_reg(0x7E70D800, 'faddp d{d}, v{n}.2d')  # lane 0 + lane 1
fcvt_sd = _two_reg(0x1E624000, 'fcvt s{d}, d{n}')  # to nearest even
fcvtn = _two_reg(0x0E216800, 'fcvtn v{d}.4h, v{n}.4s')  # to nearest even
fcvtn2 = _two_reg(0x4E216800, 'fcvtn2 v{d}.8h, v{n}.4s')


_ST1_OPC = _LD1_OPC  # the same opcode for each register count


def st1(t, k, n):
    """ST1 {Vt.16B .. Vt+k-1.16B}, [Xn], #16k."""
    regs = ', '.join(f'v{(t + i) % 32}.16b' for i in range(k))
    return word(0x4C9F0000 | _ST1_OPC[k] << 12 | _r(n) << 5 | _r(t), f'st1 {{{regs}}}, [x{n}], #{16 * k}')


sadalp = _two_reg(0x4E606800, 'sadalp v{d}.4s, v{n}.8h')  # pairs of int16 added into the int32 lanes of d


# TRN1 .2d: n0, m0 (ZIP1 .2d's result; LLVM's Cortex-A57 model, which
# llvm-mca uses for the Neoverse cores, charges ZIP .2d three micro-ops and
# TRN one).
trn1_d = _three_reg(0x4EC02800, 'trn1 v{d}.2d, v{n}.2d, v{m}.2d')
trn2_d = _three_reg(0x4EC06800, 'trn2 v{d}.2d, v{n}.2d, v{m}.2d')  # n1, m1 (ZIP2 .2d's result)
fmax4s = _three_reg(0x4E20F400, 'fmax v{d}.4s, v{n}.4s, v{m}.4s')
fabs4s = _two_reg(0x4EA0F800, 'fabs v{d}.4s, v{n}.4s')


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


fcvtns4s = _two_reg(0x4E21A800, 'fcvtns v{d}.4s, v{n}.4s')
sqxtn_h = _two_reg(0x0E614800, 'sqxtn v{d}.4h, v{n}.4s')
sqxtn2_h = _two_reg(0x4E614800, 'sqxtn2 v{d}.8h, v{n}.4s')
sqxtn_b = _two_reg(0x0E214800, 'sqxtn v{d}.8b, v{n}.8h')
sqxtn2_b = _two_reg(0x4E214800, 'sqxtn2 v{d}.16b, v{n}.8h')
fmaxv = _two_reg(0x6E30F800, 'fmaxv s{d}, v{n}.4s')
saddlp_h = _two_reg(0x4E202800, 'saddlp v{d}.8h, v{n}.16b')
sadalp_h = _two_reg(0x4E206800, 'sadalp v{d}.8h, v{n}.16b')
saddlv_s = _two_reg(0x4E703800, 'saddlv s{d}, v{n}.8h')
fdiv_s = _three_reg(0x1E201800, 'fdiv s{d}, s{n}, s{m}')
fabs_s = _two_reg(0x1E20C000, 'fabs s{d}, s{n}')
fcvt_h_s = _two_reg(0x1E23C000, 'fcvt h{d}, s{n}')
fmov_s_w = _two_reg(0x1E270000, 'fmov s{d}, w{n}')
fmov_w_s = _two_reg(0x1E260000, 'fmov w{d}, s{n}')
scvtf_s_w = _two_reg(0x1E220000, 'scvtf s{d}, w{n}')


def stur_q(t, n, off):
    """STUR Qt, [Xn, #off] (-256 ≤ off < 256)."""
    return word(0x3C800000 | (off & 0x1ff) << 12 | n << 5 | t, f'stur q{t}, [x{n}, #{off}]')


fmaxnm4s = _three_reg(0x4E20C400, 'fmaxnm v{d}.4s, v{n}.4s, v{m}.4s')  # a NaN operand loses to a number (Go's `a > amax` scan)
fmaxnmv = _two_reg(0x6E30C800, 'fmaxnmv s{d}, v{n}.4s')
smlal_s = _three_reg(0x0E608000, 'smlal v{d}.4s, v{n}.4h, v{m}.4h')
zip2_b = _three_reg(0x4E007800, 'zip2 v{d}.16b, v{n}.16b, v{m}.16b')  # n8, m8, n9, m9, ...

# float64 lanes and the rest of the exp kernel's (scripts/gen-exp-arm64.py)
add_d = _three_reg(0x4EE08400, 'add v{d}.2d, v{n}.2d, v{m}.2d')
fcmgt = _three_reg(0x6EA0E400, 'fcmgt v{d}.4s, v{n}.4s, v{m}.4s')
fcvt_ds = _two_reg(0x1E22C000, 'fcvt d{d}, s{n}')
fcvtn2_s = _two_reg(0x4E616800, 'fcvtn2 v{d}.4s, v{n}.2d')
fcvtn_s = _two_reg(0x0E616800, 'fcvtn v{d}.2s, v{n}.2d')
fmax_d = _three_reg(0x4E60F400, 'fmax v{d}.2d, v{n}.2d, v{m}.2d')
fmin_d = _three_reg(0x4EE0F400, 'fmin v{d}.2d, v{n}.2d, v{m}.2d')
fmla_d = _three_reg(0x4E60CC00, 'fmla v{d}.2d, v{n}.2d, v{m}.2d')
fmul_d = _three_reg(0x6E60DC00, 'fmul v{d}.2d, v{n}.2d, v{m}.2d')
fsub_d = _three_reg(0x4EE0D400, 'fsub v{d}.2d, v{n}.2d, v{m}.2d')
umaxv = _two_reg(0x6EB0A800, 'umaxv s{d}, v{n}.4s')
