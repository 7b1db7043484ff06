#!/bin/sh
# arm64-mca-quant.sh: static throughput of troupe's arm64 integer kernels
# beside llama.cpp's, from llvm-mca, in cycles per 32-value block (per
# 256-value super-block for the K-quants) of one weight row against one
# activation row. No arm64 machine is needed, and none measured these
# figures: they are llvm-mca's scheduling models.
#
# Usage: bench/arm64-mca-quant.sh [llama.cpp source dir]   (default /work/peer/llama.cpp)
#   MCA=llvm-mca CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++ AS=aarch64-linux-gnu-as
#   CPUS="neoverse-n1 apple-m1"   (llvm-mca -mcpu names; LLVM 14 schedules every
#   Neoverse with its Cortex-A57 model: with LLVM 16 or later add neoverse-v2)
#
# It first assembles every instruction of compute/*_arm64.s that carries a
# "// gnu:" spelling with $AS and checks that the WORD the generator wrote is
# that instruction's encoding. Then, for each kernel's inner loop (the
# generator's GNU spellings between its label and the branch back), llvm-mca
# gives cycles per iteration, divided by the weight-row × activation-row
# blocks the iteration covers; llama.cpp's ggml_vec_dot_* are compiled from
# ggml/src/ggml-cpu/arch/arm/quants.c with $CC -O3 (-march=armv8-a for the
# NEON rows, armv8.2-a+dotprod for the dotprod rows) and their largest loop
# taken the same way (two blocks an iteration for Q4_0 and Q8_0, one
# super-block for the K-quants). Prints a
# markdown table (the README's "Integer kernels" table under "## ARM64").
#
# On a Mac or an arm64 server, the same loops run for real with
# `go test -bench 'MatMulQ$' -run '^$' ./compute` beside llama.cpp's
# `llama-bench` on the same GGUF.
set -eu
cd "$(dirname "$0")/.."
LLAMA=${1:-/work/peer/llama.cpp}
MCA=${MCA:-llvm-mca}
CC=${CC:-aarch64-linux-gnu-gcc}
CXX=${CXX:-aarch64-linux-gnu-g++}
AS=${AS:-aarch64-linux-gnu-as}
CPUS=${CPUS:-neoverse-n1 apple-m1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

inc="-I$LLAMA/ggml/include -I$LLAMA/ggml/src -I$LLAMA/ggml/src/ggml-cpu"
for march in armv8-a armv8.2-a+dotprod armv8.2-a+dotprod+i8mm; do
	# shellcheck disable=SC2086
	"$CC" -O3 -march="$march" $inc -S "$LLAMA/ggml/src/ggml-cpu/arch/arm/quants.c" -o "$tmp/llama-$march.s"
done
# The repacked GEMMs (C++), for the i8mm rows.
# shellcheck disable=SC2086
"$CXX" -std=c++17 -O3 -march=armv8.2-a+dotprod+i8mm $inc \
	-S "$LLAMA/ggml/src/ggml-cpu/arch/arm/repack.cpp" -o "$tmp/llama-repack.s"

exec python3 - "$tmp" "$MCA" "$AS" "$CPUS" <<'EOF'
import re, subprocess, sys, glob, os

tmp, mca, asm, cpus = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()

# 1. Every WORD's encoding against the assembler's.
words = {}
for f in sorted(glob.glob('compute/*_arm64.s')):
    for line in open(f):
        m = re.search(r'WORD \$0x([0-9a-f]{8}) // gnu: (.*)$', line)
        if m:
            words[m.group(2).strip()] = m.group(1)
ins = sorted(words)
open(f'{tmp}/w.s', 'w').write('\n'.join(ins) + '\n')
subprocess.run([asm, '-march=armv8.6-a+dotprod+i8mm+fp16', f'{tmp}/w.s', '-o', f'{tmp}/w.o'], check=True)
dump = subprocess.run(['aarch64-linux-gnu-objdump', '-d', f'{tmp}/w.o'], check=True, capture_output=True, text=True).stdout
encs = [l.split('\t')[1].strip() for l in dump.splitlines() if re.match(r'\s+[0-9a-f]+:\t', l)]
bad = [(i, words[i], e) for i, e in zip(ins, encs) if words[i] != e]
if len(encs) != len(ins) or bad:
    sys.exit(f'encoding mismatch: {bad[:5]} ({len(encs)} of {len(ins)})')
print(f'<!-- {len(ins)} distinct WORD encodings checked against {asm} -->')


def troupe_loop(func, label):
    # The GNU spellings of func's loop at label, up to the branch back.
    text = ''.join(open(f).read() for f in glob.glob('compute/*_arm64.s'))
    body = text.split(f'TEXT ·{func}(SB)')[1].split('TEXT ')[0]
    loop = body.split(f'\n{label}:\n')[1]
    out = [f'{label}:']
    for line in loop.splitlines():
        m = re.search(r'// gnu: (.*)$', line)
        if m:
            out.append(m.group(1))
            if m.group(1).startswith('b.') and m.group(1).endswith(' ' + label):
                return '\n'.join(out) + '\n'
    raise SystemExit(f'{func}: no loop at {label}')


def llama_loop(sfile, func, inner=1, want=None):
    # The loop (label to backward branch, no calls) of func with the most
    # vector instructions: the SIMD main loop, not the scalar tail; with
    # want (an instruction), the innermost loop holding it (the i8mm path
    # beside the dotprod one, or a GEMM's loop over a block's values). A
    # loop nested in it (one GCC did not unroll) is written out inner times,
    # its label and branch back dropped, so that an iteration is a whole one.
    text = open(sfile).read()
    body = text.split(f'\n{func}:\n')[1].split(f'.size\t{func},')[0]
    lines = [l.strip() for l in body.splitlines()]
    lines = [l for l in lines if l and not re.match(r'^\.(cfi|p2align|loc|align)', l)]
    labels = {l[:-1]: i for i, l in enumerate(lines) if re.match(r'^\.L\w+:$', l)}
    loops = []
    for j, l in enumerate(lines):
        m = re.match(r'^(b\.?(?:eq|ne|lt|le|gt|ge|hi|hs|lo|ls|cc|cs|mi|pl)?|cbnz|cbz|tbnz|tbz)\s+(?:.*,\s*)?(\.L\w+)$', l)
        if m and m.group(2) in labels and labels[m.group(2)] < j:
            loops.append((labels[m.group(2)], j))
    best = None
    for i, j in loops:
        span = lines[i:j + 1]
        if any(x.startswith('bl\t') for x in span):
            continue
        vec = sum(1 for x in span if re.search(r'\bv\d+\.', x))
        if want:
            if any(x.startswith(want + '\t') for x in span) and (best is None or j - i < best[2] - best[1]):
                best = (vec, i, j)
        elif vec and (best is None or vec > best[0]):
            best = (vec, i, j)
    _, i, j = best
    nested = [(k, m) for k, m in loops if i < k and m < j]
    if nested and inner == 1:
        raise SystemExit(f'{func}: a nested loop; give its trip count')
    out, p = [], i
    for k, m in sorted(nested):
        out += lines[p:k] + lines[k + 1:m] * inner
        p = m + 1
    out += lines[p:j + 1]
    return '\n'.join(out) + '\n'


def cycles(loop, cpu):
    open(f'{tmp}/loop.s', 'w').write(loop)
    r = subprocess.run([mca, '-mtriple=aarch64', f'-mcpu={cpu}', '-mattr=+dotprod,+i8mm', '-iterations=300', f'{tmp}/loop.s'],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f'{mca} -mcpu={cpu}: {r.stderr}')
    it = int(re.search(r'Iterations:\s+(\d+)', r.stdout).group(1))
    cyc = int(re.search(r'Total Cycles:\s+(\d+)', r.stdout).group(1))
    return cyc / it


# (type, level, troupe kernel, its loop label, row-blocks an iteration,
#  llama.cpp function, its -march, blocks an iteration[, inner loop trips])
ROWS = [
    ('Q4_0', 'neon', 'q4_0x1NEON', 'block', 8, 'ggml_vec_dot_q4_0_q8_0', 'armv8-a', 2),
    ('Q4_0', 'dotprod', 'q4_0x1DotProd', 'block', 8, 'ggml_vec_dot_q4_0_q8_0', 'armv8.2-a+dotprod', 2),
    ('Q4_0', 'dotprod', 'q4_0x4DotProd', 'block', 32, 'ggml_vec_dot_q4_0_q8_0', 'armv8.2-a+dotprod', 2),
    ('Q8_0', 'neon', 'q8_0x1NEON', 'gblock', 4, 'ggml_vec_dot_q8_0_q8_0', 'armv8-a', 2),
    ('Q8_0', 'neon', 'q8_0x4NEON', 'block', 4, 'ggml_vec_dot_q8_0_q8_0', 'armv8-a', 2),
    ('Q8_0', 'dotprod', 'q8_0x1DotProd', 'gblock', 4, 'ggml_vec_dot_q8_0_q8_0', 'armv8.2-a+dotprod', 2),
    ('Q8_0', 'dotprod', 'q8_0x4DotProd', 'block', 4, 'ggml_vec_dot_q8_0_q8_0', 'armv8.2-a+dotprod', 2),
    ('Q5_0', 'neon', 'q5_0x1NEON', 'gblock', 2, 'ggml_vec_dot_q5_0_q8_0', 'armv8-a', 2),
    ('Q5_0', 'dotprod', 'q5_0x1DotProd', 'gblock', 2, 'ggml_vec_dot_q5_0_q8_0', 'armv8.2-a+dotprod', 2),
    ('Q4_1', 'neon', 'q4_1x1NEON', 'gblock', 2, 'ggml_vec_dot_q4_1_q8_1', 'armv8-a', 2),
    ('Q4_1', 'dotprod', 'q4_1x1DotProd', 'gblock', 2, 'ggml_vec_dot_q4_1_q8_1', 'armv8.2-a+dotprod', 2),
    ('Q5_1', 'neon', 'q5_1x1NEON', 'gblock', 2, 'ggml_vec_dot_q5_1_q8_1', 'armv8-a', 2),
    ('Q5_1', 'dotprod', 'q5_1x1DotProd', 'gblock', 2, 'ggml_vec_dot_q5_1_q8_1', 'armv8.2-a+dotprod', 2),
    ('IQ4_NL', 'neon', 'iq4_nlX1NEON', 'block', 8, 'ggml_vec_dot_iq4_nl_q8_0', 'armv8-a', 2),
    ('IQ4_NL', 'dotprod', 'iq4_nlX1DotProd', 'block', 8, 'ggml_vec_dot_iq4_nl_q8_0', 'armv8.2-a+dotprod', 2),
    ('IQ4_NL', 'dotprod', 'iq4_nlX4DotProd', 'block', 32, 'ggml_vec_dot_iq4_nl_q8_0', 'armv8.2-a+dotprod', 2),
    ('MXFP4', 'neon', 'mxfp4X1NEON', 'block', 8, 'ggml_vec_dot_mxfp4_q8_0', 'armv8-a', 2),
    ('MXFP4', 'dotprod', 'mxfp4X1DotProd', 'block', 8, 'ggml_vec_dot_mxfp4_q8_0', 'armv8.2-a+dotprod', 2),
    ('MXFP4', 'dotprod', 'mxfp4X4DotProd', 'block', 32, 'ggml_vec_dot_mxfp4_q8_0', 'armv8.2-a+dotprod', 2),
    ('MXFP4', 'neon', 'mxfp4InPlaceX1NEON', 'qblock', 4, 'ggml_vec_dot_mxfp4_q8_0', 'armv8-a', 2),
    ('MXFP4', 'dotprod', 'mxfp4InPlaceX1DotProd', 'qblock', 4, 'ggml_vec_dot_mxfp4_q8_0', 'armv8.2-a+dotprod', 2),
    ('Q2_K', 'neon', 'q2_KNEON', 'block', 1, 'ggml_vec_dot_q2_K_q8_K', 'armv8-a', 1),
    ('Q2_K', 'dotprod', 'q2_KDotProd', 'block', 1, 'ggml_vec_dot_q2_K_q8_K', 'armv8.2-a+dotprod', 1),
    ('Q3_K', 'neon', 'q3_KNEON', 'block', 1, 'ggml_vec_dot_q3_K_q8_K', 'armv8-a', 1),
    ('Q3_K', 'dotprod', 'q3_KDotProd', 'block', 1, 'ggml_vec_dot_q3_K_q8_K', 'armv8.2-a+dotprod', 1),
    ('IQ4_XS', 'neon', 'iq4_xsX1NEON', 'block', 1, 'ggml_vec_dot_iq4_xs_q8_K', 'armv8-a', 1),
    ('IQ4_XS', 'dotprod', 'iq4_xsX1DotProd', 'block', 1, 'ggml_vec_dot_iq4_xs_q8_K', 'armv8.2-a+dotprod', 1),
    ('Q5_K', 'neon', 'q5_KNEON', 'block', 1, 'ggml_vec_dot_q5_K_q8_K', 'armv8-a', 1),
    ('Q5_K', 'dotprod', 'q5_KDotProd', 'block', 1, 'ggml_vec_dot_q5_K_q8_K', 'armv8.2-a+dotprod', 1),
    ('Q4_K', 'neon', 'q4_KNEON', 'block', 1, 'ggml_vec_dot_q4_K_q8_K', 'armv8-a', 1),
    ('Q6_K', 'neon', 'q6_KNEON', 'block', 1, 'ggml_vec_dot_q6_K_q8_K', 'armv8-a', 1, 2),
    ('Q4_K', 'dotprod', 'q4_KDotProd', 'block', 1, 'ggml_vec_dot_q4_K_q8_K', 'armv8.2-a+dotprod', 1),
    ('Q6_K', 'dotprod', 'q6_KDotProd', 'block', 1, 'ggml_vec_dot_q6_K_q8_K', 'armv8.2-a+dotprod', 1),
    # i8mm: the troupe kernels' super-block loop covers two weight rows by
    # four activation rows (llama.cpp has no i8mm path for Q2_K on arm:
    # its dotprod vec_dot); ggml_vec_dot_q4_K_q8_K's i8mm loop (nrc 2) two by
    # two; the repacked GEMM's loop over a super-block's four 64-value
    # parts eight weight rows by four activation rows, a quarter
    # super-block (its per-super-block work outside that loop left out).
    ('Q2_K', 'i8mm', 'q2_KX4I8MM', 'block', 8, 'ggml_vec_dot_q2_K_q8_K', 'armv8.2-a+dotprod+i8mm', 1),
    ('Q4_K', 'i8mm', 'q4_KX4I8MM', 'block', 8, 'ggml_vec_dot_q4_K_q8_K', 'armv8.2-a+dotprod+i8mm', 4, 1, 'smmla'),
    ('Q4_K', 'i8mm', 'q4_KX4I8MM', 'block', 8, 'ggml_gemm_q4_K_8x8_q8_K', 'repack', 8, 2, 'smmla'),
]

print('| type | level | troupe kernel | CPU model | troupe cycles/block | llama.cpp cycles/block | ratio | llama.cpp |')
print('|---|---|---|---|---|---|---|---|')
worst = 0
for typ, level, func, label, rb, lfunc, march, lb, *opt in ROWS:
    ours = troupe_loop(func, label)
    theirs = llama_loop(f'{tmp}/llama-{march}.s', lfunc, *opt)
    for cpu in cpus:
        t, l = cycles(ours, cpu) / rb, cycles(theirs, cpu) / lb
        worst = max(worst, t / l)
        print(f'| {typ} | {level} | {func} | {cpu} | {t:.2f} | {l:.2f} | {t / l:.2f}x | {lfunc} |')
print(f'\nworst ratio {worst:.2f}x (target ≤ 1.10x)', file=sys.stderr)
EOF
