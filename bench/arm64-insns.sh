#!/bin/sh
# arm64-insns.sh: instructions that one decode step of troupe executes on
# arm64, counted under qemu-aarch64 (Debian's qemu-user has the plugin API
# but ships no plugin: bench/qemu/insn.c is a counting plugin, built here
# with the host's cc). Not a speed: an instruction count, per ISA level.
#
# Usage: bench/arm64-insns.sh [model.gguf]
#   (default /work/shared/models/synthetic/synth-llama-tiny256-Q4_K_M.gguf)
#   CPUS="cortex-a72 neoverse-n1 max"  (qemu -cpu models: neon, dotprod, i8mm)
#   LLAMA_SIMPLE=path   an aarch64 build of llama.cpp's llama-simple, counted
#                       the same way beside troupe
#   QEMU=qemu-aarch64 SYSROOT=/usr/aarch64-linux-gnu
#
# Each engine runs the same prompt twice, generating 1 and 9 tokens greedily
# (troupe on one thread, GOMAXPROCS=1; llama-simple with its default
# threads); (count(9) − count(1)) / 8 is one decode step, loading and the
# prompt cancelled out (a thread's spinning while it waits counts too).
set -eu
cd "$(dirname "$0")/.."
MODEL=${1:-/work/shared/models/synthetic/synth-llama-tiny256-Q4_K_M.gguf}
QEMU=${QEMU:-qemu-aarch64}
SYSROOT=${SYSROOT:-/usr/aarch64-linux-gnu}
CPUS=${CPUS:-cortex-a72 neoverse-n1 max}
PROMPT="Once upon a time there was"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

${CC:-cc} -O2 -shared -fPIC -o "$tmp/insn.so" bench/qemu/insn.c
CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -o "$tmp/troupe" ./cmd/troupe

count() { # cpu, command...: the plugin's count
	cpu=$1
	shift
	"$QEMU" -L "$SYSROOT" -cpu "$cpu" -plugin "$tmp/insn.so" -d plugin -D "$tmp/log" "$@" >/dev/null 2>&1 || true
	sed -n 's/^insns: //p' "$tmp/log"
}

echo "| engine | qemu -cpu | instructions, 1 token | instructions, 9 tokens | per decode step |"
echo "|---|---|---:|---:|---:|"
for cpu in $CPUS; do
	a=$(GOMAXPROCS=1 count "$cpu" "$tmp/troupe" run -m "$MODEL" -p "$PROMPT" -n 1 --temp 0 -t 1 --device cpu)
	b=$(GOMAXPROCS=1 count "$cpu" "$tmp/troupe" run -m "$MODEL" -p "$PROMPT" -n 9 --temp 0 -t 1 --device cpu)
	echo "| troupe | $cpu | $a | $b | $(((b - a) / 8)) |"
	if [ -n "${LLAMA_SIMPLE:-}" ]; then
		a=$(count "$cpu" "$LLAMA_SIMPLE" -m "$MODEL" -n 1 "$PROMPT")
		b=$(count "$cpu" "$LLAMA_SIMPLE" -m "$MODEL" -n 9 "$PROMPT")
		echo "| llama.cpp | $cpu | $a | $b | $(((b - a) / 8)) |"
	fi
done
