#!/bin/sh
# Checks Phi-3.5-mini, Phi-4-mini and SmolLM3-3B at their real widths (the
# first 4 layers of each shape, Q4_0) against llama.cpp: troupe synth writes
# each file, scripts/make-refs.py --model runs llama.cpp (scripts/ref-dump.cpp,
# built as its header says; this script builds nothing) for the four
# prompts, and TestParityEnv compares troupe's teacher-forced logits and
# greedy ids. The references (tens of MB of logits) stay in DIR.
#
# Run from the repository root after `go build -o bin/troupe ./cmd/troupe`:
#
#	sh scripts/parity-phi-smollm3.sh [DIR] [REF_DUMP]
#
# Measured with llama.cpp b10573 (d775b8967): 0.0000% of row std on every
# case of all three, greedy ids identical where the reference's gap exceeds
# 0.005.
set -eu
dir=${1:-/tmp/parity-phi}
ref_dump=${2:-/tmp/ref-dump}
mkdir -p "$dir"
for spec in phi4-mini-l4:llama-spm phi3.5-mini-l4:phi-3 smollm3-3b-l4:llama-spm; do
	shape=${spec%%:*}
	vocab=../shared/models/vocab/ggml-vocab-${spec#*:}.gguf
	f=$dir/$shape-Q4_0.gguf
	[ -f "$f" ] || bin/troupe synth --shape "$shape" --type Q4_0 --vocab "$vocab" -o "$f"
	python3 scripts/make-refs.py --model "$f" --out "$dir/ref-$shape" "$ref_dump"
	TROUPE_REF_MODEL=$f TROUPE_REF_DIR=$dir/ref-$shape go test ./model -run TestParityEnv -v -count=1 -timeout 30m |
		grep -E 'case [0-9]|^(ok|FAIL|---)'
done
