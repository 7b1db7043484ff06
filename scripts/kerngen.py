"""kerngen: what the kernel generators (scripts/gen-*.py) share.

A generator builds a Unit: the text of one assembly file (compute/*_amd64.s,
compute/*_arm64.s)
and, for each kernel it emits, the kernel's Go declaration and, for the
block-quant kernels, the kernel's row in MatMul's table (a KernelSet: a
weight type's kernels for one ISA level). Running a generator prints its
assembly; scripts/gen-kern-go.py reads every amd64 generator's Unit and
writes compute/kernels_amd64.go, the declarations grouped by weight type and
the tables (scripts/gen-kern-go-arm64.py the same for arm64: the
gen-*-arm64.py generators, whose instruction encodings are arm64enc.py's). A new kernel is one edit: the generator line that emits it.

The rest is the assembly every generator writes the same way: broadcast
constants and lookup tables, the argument loads of the row-kernel
signature, loop starts and the epilogue.

Import it from a generator as `import kerngen` (scripts/ is on sys.path
when a script there runs); load(file) imports a sibling generator whose
name has dashes.
"""

import re
import importlib.util
import os
import sys

# The Go parameters of each kernel signature.
SIGNATURES = {
    # Block-quant kernels: weights w against activation blocks x (see
    # kernel.go's panelKernel).
    'Q8_0': 'w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int',
    'Q8_1': 'w *byte, x *blockQ8_1, xs int, out *float32, os int, np, nb int',
    'Q8_K': 'w *byte, x *blockQ8_K, xs int, out *float32, os int, np, nb int',
    # Float weight kernels (kern_f.go's floatFunc).
    'float': 'w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int',
    # Conversions of activation rows.
    'convert': 'x, dst *float32, n int',
    'toHalf': 'x *float32, dst *uint16, n int',
    # Attention group kernels (attn512_amd64.go).
    'dotGroup': 'q *float32, k *uint16, kstride, n int, out *float32, ostride int',
    'vkqGroup': 'out *float32, v *uint16, vstride, n int, ms, vs *float32, sstride int',
    'dotGroupQ8': 'q *blockQ8_0, k *byte, kstride, n int, out *float32, ostride int',
    'vkqGroupQ8': 'out *float32, v *byte, vstride, n int, ms, vs *float32, sstride int',
    # LowRank.AddCols's panels (lowrank_amd64.s).
    'lowRank': 'p, t, out *float32, nb, nk, tail int, scale float32',
    'lowRankF16': 'p *uint16, t, out *float32, nb, nk, tail int, scale float32',
    # Attention one query head a pass (arm64: attn_arm64.s, attn_rows_arm64.s).
    'dotRows': 'q *float32, k *uint16, stride, n, hd int, out *float32',
    'vkqRowsF16': 'out *float32, v *uint16, stride, n, hd int, ms, vs *float32',
    'vkqRowsQ8_0': 'out *float32, v *byte, stride, n, nb int, ms, vs *float32',
    # F16 rounding and conversion of float32 rows (arm64).
    'roundF16s': 'dst, src *float32, n int',
    'f16s': 'dst *uint16, src *float32, n int',
    # exp and the online softmax's passes (arm64: exp_arm64.s).
    'expf': 'x *float32, n int',
    'softmaxScan': 'vs, ms *float32, n int, scale float32',
    'softmaxSum': 'vs, ms *float32, n int',
    # The activation quantizers (arm64: quantize_act_arm64.s).
    'quantizeQ8_0': 'x *float32, y *blockQ8_0, nb int, c int32',
    'quantizeQ8_1': 'x *float32, y *blockQ8_1, nb int',
    'quantizeQ8_K': 'x *float32, y *blockQ8_K, nb int',
}

# The Go results of the signatures that return one, after the parameters.
RESULTS = {'softmaxSum': ' float32'}

# The block type each block-quant signature reads.
BLOCK = {'Q8_0': 'blockQ8_0', 'Q8_1': 'blockQ8_1', 'Q8_K': 'blockQ8_K'}

# Go's names of the ISA levels (cpu.go), by the suffix the kernels carry,
# lowest first: amd64's, then arm64's.
ISA = {'AVX2': 'AVX2', 'VNNI': 'AVX512VNNI', 'NEON': 'NEON', 'DotProd': 'DotProd', 'I8MM': 'I8MM'}

# The activation row pointers of the row kernels: row j at ACT[j].
ACT = ['BX', 'R12', 'R13', 'R14']


# VNNI_TAILS: whether the AVX-512 VNNI kernels for a batch's last two or
# three rows (x2, x3) are written and chosen. They were generated on a
# machine without AVX-512 (AVX2 only; qemu's TCG has no AVX-512 either), so
# no test has run them: off until a VNNI machine runs
# `go test ./compute -run 'TestPanelKernels|TestKKernels|TestQ8_1Kernels|TestIQ4Kernels|TestMXFP4'`
# with it on. Off, VNNI batches take their tails one row at a time, as before.
VNNI_TAILS = False
VNNI_TAIL = re.compile(r'[xX][23]VNNI$')

class Kernel:
    """One assembly function: its name, Go signature and weight type."""

    def __init__(self, name, sig, wtype):
        if sig not in SIGNATURES:
            raise ValueError(f'kernel {name}: unknown signature {sig!r}')
        self.name, self.sig, self.wtype = name, sig, wtype


class KernelSet:
    """A weight type's kernels on one ISA level: a panelKernel value.

    acts is the signature ('Q8_0', 'Q8_1', 'Q8_K'); x1, x4, x8 kernel names
    (or None), x2, x3 and x5 those of a batch's last two, three or five rows (or None); pack the Go packing function (or None); panel whether rows
    come in panels of eight; corr the activation correction; inter the Go
    function laying out activation rows for x4 (or None); table where
    the set goes: 'asm' (the type's kernels), 'inplace' (rows read as
    stored) or None (a named value for tests only); doc a comment.
    """

    def __init__(self, var, wtype, acts, isa, x1, x4=None, x8=None, pack=None, panel=False, corr=0,
                 inter=None, table='asm', doc='', x2=None, x3=None, x5=None):
        self.var, self.wtype, self.acts, self.isa = var, wtype, acts, isa
        self.x1, self.x4, self.x8 = x1, x4, x8
        self.x2, self.x3, self.x5 = x2, x3, x5
        self.pack, self.panel, self.corr, self.table, self.doc = pack, panel, corr, table, doc
        self.inter = inter


class Unit:
    """One generated assembly file: its text and what it declares to Go."""

    def __init__(self, script, doc=''):
        self.script, self.doc = script, doc
        self.parts, self.kernels, self.sets, self.gosrc = [], [], [], []

    def text(self, s, end='\n'):
        """Appends s (and end, as print would) to the assembly."""
        self.parts.append(s + end)

    def kernel(self, name, sig, wtype, body):
        """Appends kernel name's assembly and records its declaration (not
        an unverified VNNI tail kernel's: VNNI_TAILS)."""
        if not VNNI_TAILS and VNNI_TAIL.search(name):
            return
        self.kernels.append(Kernel(name, sig, wtype))
        self.text(body)

    def declare(self, name, sig, wtype):
        """Records the declaration of kernel name, written with text."""
        self.kernels.append(Kernel(name, sig, wtype))

    def go(self, src):
        """Records Go source (a table of the kernels) for the Go file."""
        self.gosrc.append(src)

    def set(self, *args, **kw):
        """Records a KernelSet (a row of the kernel tables)."""
        s = KernelSet(*args, **kw)
        if not VNNI_TAILS and s.isa == 'VNNI':
            s.x2 = s.x3 = s.x5 = None
        self.sets.append(s)

    def asm(self):
        return ''.join(self.parts)


def run(build, mca=None):
    """The generator's entry point: prints build()'s assembly; with --mca,
    mca() prints the kernels' loops for bench/arm64-mca.sh instead."""
    if mca is not None and sys.argv[1:] == ['--mca']:
        mca()
        return
    sys.stdout.write(build().asm())


def mca_loop(title, body, tail):
    """Prints one kernel's loop for llvm-mca (bench/arm64-mca.sh): its
    "# kernel" line (title), then label 1, the GNU spelling of each of
    body's instructions, and tail's lines (the loop's back edge)."""
    print(f'# kernel {title}')
    print('\n'.join(['1:'] + [i.gnu for i in body] + tail))


def load(file):
    """Imports the sibling generator scripts/file (once) and returns it."""
    name = 'kerngen_' + file.removesuffix('.py').replace('-', '_')
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(__file__), file))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def asm_head(script):
    """The head of a generated assembly file: the generated-code line, the
    textflag include and where the kernels are described (the comments of
    script, which the file does not repeat)."""
    return f'''// Code generated by {script}; DO NOT EDIT.

#include "textflag.h"

// What these kernels compute, their layouts and orders: the comments of
// {script}.
'''


def asm_header(script, doc):
    """The head of a generated assembly file: the generated-code line, the
    textflag include and doc (Go comment lines)."""
    return f'''// Code generated by {script}; DO NOT EDIT.

#include "textflag.h"

{doc}
'''


# Read-only data.

def data(name, qwords):
    """A constant of the 64-bit qwords, as DATA and GLOBL lines."""
    out = [f'DATA {name}<>+{8 * i}(SB)/8, ${q:#018x}' for i, q in enumerate(qwords)]
    out.append(f'GLOBL {name}<>(SB), RODATA|NOPTR, ${8 * len(qwords)}')
    return '\n'.join(out) + '\n'


def packed(values, bits):
    """values (bits wide each, two's complement) packed little-endian into
    64-bit qwords."""
    per, mask = 64 // bits, (1 << bits) - 1
    return [sum((v & mask) << (bits * j) for j, v in enumerate(values[i:i + per]))
            for i in range(0, len(values), per)]


def broadcast(name, qword, size=32):
    """A constant of size bytes, qword repeated."""
    return data(name, [qword] * (size // 8))


def table(name, values):
    """A 32-byte VPSHUFB table: the 16 byte values in each 128-bit lane."""
    b = [v & 0xff for v in values] * 2
    out = []
    for i in range(0, 32, 8):
        q = sum(b[i + j] << (8 * j) for j in range(8))
        out.append(f'DATA {name}<>+{i}(SB)/8, ${q:#018x}')
    out.append(f'GLOBL {name}<>(SB), RODATA|NOPTR, $32')
    return '\n'.join(out) + '\n'


def words(name, values):
    """Eight 16-bit values."""
    out = []
    for i in range(0, 8, 4):
        q = sum((values[i + j] & 0xffff) << (16 * j) for j in range(4))
        out.append(f'DATA {name}<>+{2 * i}(SB)/8, ${q:#018x}')
    out.append(f'GLOBL {name}<>(SB), RODATA|NOPTR, $16')
    return '\n'.join(out) + '\n'


# Code.

def params(sig):
    """The parameter names of signature sig, in order."""
    return [p.split()[0] for p in SIGNATURES[sig].split(', ')]


def header(name, sig, regs, frame=0):
    """A kernel's comment and TEXT line, and the loads of its first
    len(regs) arguments into regs (unindented)."""
    ps = params(sig)
    head = [f'// func {name}({SIGNATURES[sig]})', f'TEXT ·{name}(SB), NOSPLIT, ${frame}-{8 * len(ps)}']
    return head, [f'MOVQ {p}+{8 * i}(FP), {r}' for i, (p, r) in enumerate(zip(ps, regs))]


def args(name, sig, frame=0):
    """A block-quant kernel's header and argument loads (unindented): w in
    SI, x DX, xs R10, out DI, os R11, np R8, nb R9."""
    return header(name, sig, ['SI', 'DX', 'R10', 'DI', 'R11', 'R8', 'R9'], frame)


def prologue(name, sig, frame=0, setup=()):
    """args(), then setup, then a jump to done when np is 0, indented."""
    head, body = args(name, sig, frame)
    return head + ['\t' + b for b in body + list(setup) + ['TESTQ R8, R8', 'JZ done']]


def zero(regs):
    """Zeroes regs: VPXORD for Y16..Y31 (EVEX only; VXORPS's EVEX form
    would need AVX512DQ), VXORPS below."""
    return [f'VPXORD {r}, {r}, {r}' if int(r[1:]) >= 16 else f'VXORPS {r}, {r}, {r}' for r in regs]


def loop_start(label, rows, accs):
    """label, accs zeroed, BX, R12, R13, R14 at the activation rows and the
    block count in CX."""
    body = zero(accs) + ['MOVQ DX, BX']
    for j in range(1, rows):
        body.append(f'LEAQ ({ACT[j - 1]})(R10*1), {ACT[j]}')
    body.append('MOVQ R9, CX')
    return [f'{label}:'] + ['\t' + x for x in body]


def epilogue():
    return ['done:', '\tVZEROUPPER', '\tRET', '']


def comment(doc, indent=''):
    """doc as Go comment lines."""
    return '\n'.join(f'{indent}// {line}'.rstrip() for line in doc.split('\n'))


def advance(rows, wsz, xsz, label):
    """Steps the weights (SI) by wsz and the activation rows by xsz bytes,
    and loops to label while blocks are left (CX)."""
    return [f'ADDQ ${wsz}, SI'] + [f'ADDQ ${xsz}, {a}' for a in ACT[:rows]] + ['DECQ CX', f'JNZ {label}']


def store(op, regs, rows):
    """Stores regs[t] by op at out + t·os for rows one to four (AX free)."""
    s = [f'{op} {regs[0]}, (DI)']
    if rows >= 2:
        s.append(f'{op} {regs[1]}, (DI)(R11*1)')
    if rows >= 3:
        s += ['LEAQ (DI)(R11*2), AX', f'{op} {regs[2]}, (AX)']
    if rows == 4:
        s.append(f'{op} {regs[3]}, (AX)(R11*1)')
    return s
