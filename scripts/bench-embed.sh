#!/bin/sh
# bench-embed.sh: embedding sentences/s of troupe and llama.cpp on the same
# file and machine, at batch 1 and about 32. It runs llama.cpp's tools; it
# never builds them.
#
#   sh scripts/bench-embed.sh [MODEL.gguf]   (default: ~/.cache/troupe-bench/bge-small-F16.gguf,
#       made by: troupe synth --shape bge-small --type F16 --vocab ../shared/models/vocab/ggml-vocab-bert-bge.gguf)
#
# troupe: `troupe bench embed` (Runtime.Embed calls of B sentences, one after
# another). llama.cpp: batch 1 from llama-bench -embd 1 (one sequence of the
# sentences' mean token count: its t/s over that count); batch ~32 from
# llama-embedding's wall time over 128 sentences (it packs them into
# batches of up to n_ctx = 512 tokens, about 35 sentences) less its wall
# time over 1 sentence (loading).
set -eu
BIN=${LLAMA_BIN:-/work/peer/llama.cpp/build/bin}
MODEL=${1:-$HOME/.cache/troupe-bench/bge-small-F16.gguf}
T=${T:-2}
tmp=$(mktemp -d)
go build -o "$tmp/troupe" ./cmd/troupe
"$tmp/troupe" bench embed --print-sentences >"$tmp/s32"
head -1 "$tmp/s32" >"$tmp/s1"
cat "$tmp/s32" "$tmp/s32" "$tmp/s32" "$tmp/s32" >"$tmp/s128"

echo "== troupe bench embed"
"$tmp/troupe" bench embed -m "$MODEL" -b 1,32 -n 128 -t "$T" | tee "$tmp/troupe.out"
avg=$(sed -n 's/.* sentences of \([0-9.]*\) tokens.*/\1/p' "$tmp/troupe.out")
p=$(printf '%.0f' "$avg")

echo "== llama-bench -embd 1 -p $p (batch 1: t/s / $avg = sentences/s)"
"$BIN/llama-bench" -m "$MODEL" -embd 1 -p "$p" -n 0 -t "$T" -r 5 | grep "pp$p" |
	awk -F'|' -v avg="$avg" '{ split($(NF-1), a, " "); printf "%s t/s -> %.2f sentences/s\n", a[1], a[1] / avg }'

wall() { s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc; }
echo "== llama-embedding wall time, 128 sentences less 1 sentence"
t1=$(wall "$BIN/llama-embedding" -m "$MODEL" -f "$tmp/s1" -t "$T")
t128=$(wall "$BIN/llama-embedding" -m "$MODEL" -f "$tmp/s128" -t "$T")
echo "1 sentence ${t1}s, 128 sentences ${t128}s -> $(echo "127 / ($t128 - $t1)" | bc -l | cut -c1-6) sentences/s"
rm -r "$tmp"
