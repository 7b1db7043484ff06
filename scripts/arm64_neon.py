"""Encodes the AArch64 Advanced SIMD instructions the arm64 generators use.

Go's arm64 assembler lacks most vector floating-point instructions (FADD,
FCVTL, FMLA by element, SHLL...), so the generators write every vector
instruction as a WORD with its GNU spelling beside it. Each function
returns an Insn: the Go line (WORD and comment) and the GNU line, which
scripts/arm64-mca.sh assembles with aarch64-linux-gnu-as (checking these
encodings against binutils) and feeds to llvm-mca.

Register arguments are numbers: v(n) is Vn, x(n) is Xn (Go's Rn).
"""


class Insn:
    """One instruction: Go assembler text and GNU assembler text."""

    def __init__(self, go, gnu):
        self.go, self.gnu = go, gnu


def word(w, gnu):
    return Insn(f'WORD ${w:#010x} // {gnu}', gnu)


def go(go_text, gnu):
    """An instruction Go's assembler spells itself."""
    return Insn(go_text, gnu)


def _rrr(base, d, n, m):
    return base | m << 16 | n << 5 | d


def fmla4s(d, n, m):
    return word(_rrr(0x4E20CC00, d, n, m), f'fmla v{d}.4s, v{n}.4s, v{m}.4s')


def fadd4s(d, n, m):
    return word(_rrr(0x4E20D400, d, n, m), f'fadd v{d}.4s, v{n}.4s, v{m}.4s')


def fmul4s(d, n, m):
    return word(_rrr(0x6E20DC00, d, n, m), f'fmul v{d}.4s, v{n}.4s, v{m}.4s')


def fmax4s(d, n, m):
    return word(_rrr(0x4E20F400, d, n, m), f'fmax v{d}.4s, v{n}.4s, v{m}.4s')


def fabs4s(d, n):
    return word(0x4EA0F800 | n << 5 | d, f'fabs v{d}.4s, v{n}.4s')


def and16b(d, n, m):
    return word(_rrr(0x4E201C00, d, n, m), f'and v{d}.16b, v{n}.16b, v{m}.16b')


def ext16b(d, n, m, imm):
    return word(0x6E000000 | m << 16 | imm << 11 | n << 5 | d, f'ext v{d}.16b, v{n}.16b, v{m}.16b, #{imm}')


def faddp_s(d, n):
    """FADDP Sd, Vn.2S: element 0 plus element 1."""
    return word(0x7E30D800 | n << 5 | d, f'faddp s{d}, v{n}.2s')


def fcvtl(d, n):
    return word(0x0E217800 | n << 5 | d, f'fcvtl v{d}.4s, v{n}.4h')


def fcvtl2(d, n):
    return word(0x4E217800 | n << 5 | d, f'fcvtl2 v{d}.4s, v{n}.8h')


def fcvtn(d, n):
    return word(0x0E216800 | n << 5 | d, f'fcvtn v{d}.4h, v{n}.4s')


def fcvtn2(d, n):
    return word(0x4E216800 | n << 5 | d, f'fcvtn2 v{d}.8h, v{n}.4s')


def shl4s(d, n, sh):
    return word(0x4F005400 | (32 + sh) << 16 | n << 5 | d, f'shl v{d}.4s, v{n}.4s, #{sh}')


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


def ldr_q(t, n, off=0):
    """LDR Qt, [Xn, #off] (off a multiple of 16)."""
    return word(0x3DC00000 | (off // 16) << 10 | n << 5 | t, f'ldr q{t}, [x{n}, #{off}]')


def ldp_q(t1, t2, n, off=0):
    """LDP Qt1, Qt2, [Xn, #off] (off a multiple of 16)."""
    imm7 = (off // 16) & 0x7f
    return word(0xAD400000 | imm7 << 15 | t2 << 10 | n << 5 | t1, f'ldp q{t1}, q{t2}, [x{n}, #{off}]')


def str_q(t, n, off=0):
    """STR Qt, [Xn, #off] (off a multiple of 16)."""
    return word(0x3D800000 | (off // 16) << 10 | n << 5 | t, f'str q{t}, [x{n}, #{off}]')


def str_d(t, n, off=0):
    """STR Dt, [Xn, #off] (off a multiple of 8)."""
    return word(0xFD000000 | (off // 8) << 10 | n << 5 | t, f'str d{t}, [x{n}, #{off}]')


def str_s(t, n, off=0):
    """STR St, [Xn, #off] (off a multiple of 4)."""
    return word(0xBD000000 | (off // 4) << 10 | n << 5 | t, f'str s{t}, [x{n}, #{off}]')


def prfm_pldl2keep(n):
    return word(0xF9800000 | n << 5 | 2, f'prfm pldl2keep, [x{n}]')


def dup_s(d, n):
    """DUP Vd.4S, Vn.S[0]."""
    return word(0x4E040400 | n << 5 | d, f'dup v{d}.4s, v{n}.s[0]')


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


def fmul_s(d, n, m):
    return word(0x1E200800 | m << 16 | n << 5 | d, f'fmul s{d}, s{n}, s{m}')


def fabs_s(d, n):
    return word(0x1E20C000 | n << 5 | d, f'fabs s{d}, s{n}')


def fcmp_s(n, m):
    return word(0x1E202000 | m << 16 | n << 5, f'fcmp s{n}, s{m}')


def fcvt_h_s(d, n):
    return word(0x1E23C000 | n << 5 | d, f'fcvt h{d}, s{n}')


def fcvt_s_h(d, n):
    return word(0x1EE24000 | n << 5 | d, f'fcvt s{d}, h{n}')


def fmov_s_w(d, n):
    return word(0x1E270000 | n << 5 | d, f'fmov s{d}, w{n}')


def fmov_w_s(d, n):
    return word(0x1E260000 | n << 5 | d, f'fmov w{d}, s{n}')


def scvtf_s_w(d, n):
    return word(0x1E220000 | n << 5 | d, f'scvtf s{d}, w{n}')


def stur_q(t, n, off):
    """STUR Qt, [Xn, #off] (-256 ≤ off < 256)."""
    return word(0x3C800000 | (off & 0x1ff) << 12 | n << 5 | t, f'stur q{t}, [x{n}, #{off}]')


def ldr_s_post(t, n, inc):
    """LDR St, [Xn], #inc."""
    return word(0xBC400400 | (inc & 0x1ff) << 12 | n << 5 | t, f'ldr s{t}, [x{n}], #{inc}')


def fmaxnm4s(d, n, m):
    """FMAXNM: a NaN operand loses to a number (Go's `a > amax` scan)."""
    return word(_rrr(0x4E20C400, d, n, m), f'fmaxnm v{d}.4s, v{n}.4s, v{m}.4s')


def fmaxnmv(d, n):
    return word(0x6E30C800 | n << 5 | d, f'fmaxnmv s{d}, v{n}.4s')


def stp_q(t1, t2, n, off=0):
    """STP Qt1, Qt2, [Xn, #off] (off a multiple of 16)."""
    imm7 = (off // 16) & 0x7f
    return word(0xAD000000 | imm7 << 15 | t2 << 10 | n << 5 | t1, f'stp q{t1}, q{t2}, [x{n}, #{off}]')
