#!/usr/bin/env python3
"""Static throughput of the arm64 kernels' inner loops, by llvm-mca, beside
llama.cpp's (see bench/arm64-mca.sh, which prepares the inputs).

    arm64_mca.py TROUPE_LOOPS GGML_ASM_DIR CPU...

TROUPE_LOOPS holds the generators' --mca output: blocks headed
"# kernel NAME TYPE rows=R values=V" (V products per loop iteration).
GGML_ASM_DIR holds llama.cpp's vec.s and quants.s compiled for aarch64; the
hot loop of each function in GGML is the one with the most vector
arithmetic. Prints a Markdown table: cycles per 32 products (per block of
32 values for the quantizers) on each CPU model, llama.cpp's beside.
"""

import re
import subprocess
import sys

# llama.cpp's functions: (file, symbol, products or values per iteration of
# the hot loop, the troupe kernels it is set beside).
GGML = {
    'f32': ('vec.s', 'ggml_vec_dot_f32', 16),
    'f16': ('vec.s', 'ggml_vec_dot_f16', 32),
    'bf16': ('vec.s', 'ggml_vec_dot_bf16', 1),
    'q8_0': ('quants.s', 'quantize_row_q8_0', 32),
    'attn': ('vec.s', 'ggml_vec_dot_f16', 32),  # the f16 KV cache's key dot product
}
# Kernel types with no llama.cpp function beside them (vkq: the f16 value
# accumulation, ggml_vec_mad_f16 and ggml_vec_scale_f16, inlined from vec.h;
# exp: Expf, glibc's expf, which ggml's flash attention calls one value at a
# time).
ALONE = {'vkq', 'exp'}
VECTOR = re.compile(r'^\s*(fmla|fmul|fadd|sdot|smmla|fcvt\w*|fmax\w*|fabs|fcvtns|sqxtn2?|saddl\w*)\s.*v\d+\.\d*[bhsd]')
BRANCH = re.compile(r'^\s*(b\.\w+|b|bl|bne|beq|bgt|blt|bge|ble|bhi|bls|cbnz|cbz|tbnz|tbz|ret)\b')


def mca(lines, cpu):
    """llvm-mca's Block RThroughput: cycles per iteration, in the steady state."""
    src = '\n'.join(lines) + '\n'
    r = subprocess.run(['llvm-mca', '-mtriple=aarch64', f'-mcpu={cpu}', '-iterations=200'],
                       input=src, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f'llvm-mca -mcpu={cpu}: {r.stderr.strip()}')
    m = re.search(r'Block RThroughput:\s*([0-9.]+)', r.stdout)
    return float(m.group(1))


def troupe_loops(path):
    """(name, type, products per iteration, loop lines) from --mca output."""
    loops, cur = [], None
    for line in open(path):
        line = line.rstrip('\n')
        m = re.match(r'# kernel (\S+) (\S+) rows=(\d+) values=(\d+)', line)
        if m:
            cur = (m.group(1), m.group(2), int(m.group(4)), [])
            loops.append(cur)
        elif cur is not None and line:
            cur[3].append(line)
    return loops


def function_lines(path, sym):
    lines, inside = [], False
    for line in open(path):
        if line.startswith(sym + ':'):
            inside = True
            continue
        if inside:
            if line.strip().startswith('.size') and sym in line:
                break
            lines.append(line.rstrip('\n'))
    return lines


def hot_loop(lines):
    """The backward-branching loop with the most vector arithmetic, a single
    basic block preferred (the main loop over a tail loop or a whole
    function); llvm-mca reads it as straight-line code."""
    labels = {}
    best = None
    for i, line in enumerate(lines):
        m = re.match(r'^(\.L\w+):', line)
        if m:
            labels[m.group(1)] = i
            continue
        m = re.match(r'^\s*(b\.\w+|bne|beq|bgt|blt|bge|ble|bhi|bls|b|cbnz|cbz|tbnz|tbz)\s+(?:[wx]\d+,\s*)?(?:#\d+,\s*)?(\.L\w+)', line)
        if m and m.group(2) in labels and labels[m.group(2)] < i:
            body = [x for x in lines[labels[m.group(2)] + 1:i + 1] if x.strip() and not x.strip().startswith('.')
                    and not re.match(r'^\.L\w+:', x)]
            inner = lines[labels[m.group(2)] + 1:i]
            single = not any(BRANCH.match(x) or re.match(r'^\.L\w+:', x) for x in inner)
            score = (sum(1 for x in body if VECTOR.match(x)) > 0 and single, sum(1 for x in body if VECTOR.match(x)), -len(body))
            if best is None or score > best[0]:
                best = (score, body)
    return ['1:'] + [re.sub(r'\.L\w+$', '1b', x) for x in best[1]]


def main():
    loops_path, ggml_dir, cpus = sys.argv[1], sys.argv[2], sys.argv[3:]
    head = '| kernel | ' + ' | '.join(f'{c} troupe | {c} llama.cpp' for c in cpus) + ' |'
    print(head)
    print('|' + '---|' * (1 + 2 * len(cpus)))
    ggml_cycles = {}
    for typ, (f, sym, per) in GGML.items():
        loop = hot_loop(function_lines(f'{ggml_dir}/{f}', sym))
        ggml_cycles[typ] = [32 * mca(loop, c) / per for c in cpus]
    for name, typ, per, loop in troupe_loops(loops_path):
        cells = []
        for i, c in enumerate(cpus):
            g = f'{ggml_cycles[typ][i]:.2f}' if typ not in ALONE else '—'
            cells += [f'{32 * mca(loop, c) / per:.2f}', g]
        print(f'| {name} | ' + ' | '.join(cells) + ' |')


if __name__ == '__main__':
    main()
