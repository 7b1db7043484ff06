#!/usr/bin/env bash
# arm64-mca.sh: static cycle counts of the arm64 kernels' inner loops beside
# llama.cpp's, for machines without an arm64 CPU. No arm64 machine measures
# anything here: llvm-mca models each CPU's pipelines from LLVM's scheduling
# tables, which ignore memory (every load hits L1), so decode-bound kernels
# on real hardware are slower than these figures say. bench/arm64.sh, run on
# a Mac or a Graviton, gives real ones.
#
# usage: bench/arm64-mca.sh [LLAMA_CPP_SRC] [CPU...]
#
#   LLAMA_CPP_SRC  a llama.cpp source tree (default /work/peer/llama.cpp, or
#                  $LLAMA_CPP_SRC); its ggml-cpu vec.cpp and arch/arm/quants.c
#                  are compiled with aarch64-linux-gnu-g++/gcc -O3
#                  -march=armv8.2-a+dotprod+fp16 (never kept)
#   CPU            llvm-mca -mcpu models (default: neoverse-v1 neoverse-n1
#                  apple-m1, the newest of each family this llvm knows)
#
# Prints a Markdown table of cycles per 32 products (per 32 values for the
# quantizers). It also assembles troupe's loops with aarch64-linux-gnu-as and
# checks every WORD the generators emit against binutils' encoding.
set -euo pipefail

die() { echo "arm64-mca.sh: $*" >&2; exit 1; }
src=${1:-${LLAMA_CPP_SRC:-/work/peer/llama.cpp}}
shift || true
cpus=("$@")
((${#cpus[@]})) || cpus=(neoverse-v1 neoverse-n1 apple-m1)
for t in llvm-mca aarch64-linux-gnu-as aarch64-linux-gnu-objdump aarch64-linux-gnu-gcc aarch64-linux-gnu-g++ python3; do
	command -v "$t" >/dev/null || die "$t not found (Debian: llvm, binutils-aarch64-linux-gnu, g++-aarch64-linux-gnu)"
done
cpu=$src/ggml/src/ggml-cpu
[[ -f $cpu/vec.cpp ]] || die "$src: not a llama.cpp source tree (no ggml/src/ggml-cpu/vec.cpp)"
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

flags=(-O3 -march=armv8.2-a+dotprod+fp16 -DNDEBUG -I"$src/ggml/include" -I"$src/ggml/src" -I"$cpu")
aarch64-linux-gnu-g++ "${flags[@]}" -S "$cpu/vec.cpp" -o "$tmp/vec.s"
aarch64-linux-gnu-gcc "${flags[@]}" -S "$cpu/arch/arm/quants.c" -o "$tmp/quants.s"

gens=(gen-kern-f-arm64.py gen-quantize-act-arm64.py gen-attn-arm64.py gen-attn-group-arm64.py gen-exp-arm64.py)
for g in "${gens[@]}"; do python3 "$root/scripts/$g" --mca; done >"$tmp/loops.txt"

# Every WORD of the generated .s files against binutils.
for s in "$root"/compute/kern_f_arm64.s "$root"/compute/quantize_act_arm64.s "$root"/compute/attn_arm64.s "$root"/compute/attn_group_arm64.s "$root"/compute/exp_arm64.s; do
	grep -o 'WORD \$0x[0-9a-f]* // gnu: .*' "$s" | sort -u >"$tmp/words"
	sed 's|.* // gnu: ||' "$tmp/words" >"$tmp/w.s"
	aarch64-linux-gnu-as -march=armv8.2-a+fp16+dotprod "$tmp/w.s" -o "$tmp/w.o"
	aarch64-linux-gnu-objdump -d "$tmp/w.o" | awk '/^ +[0-9a-f]+:/{print "0x" $2}' >"$tmp/want"
	sed 's|WORD \$\(0x[0-9a-f]*\) .*|\1|' "$tmp/words" >"$tmp/got"
	diff "$tmp/got" "$tmp/want" >/dev/null || die "$(basename "$s"): a WORD differs from binutils' encoding"
	echo "$(basename "$s"): $(wc -l <"$tmp/got") distinct WORDs match binutils" >&2
done

python3 "$root/bench/arm64_mca.py" "$tmp/loops.txt" "$tmp" "${cpus[@]}"
