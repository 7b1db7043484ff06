#!/bin/sh
# embed-ref.sh makes the embedding references of model/testdata/embed: for
# each model and pooling, llama.cpp's llama-embedding (default L2
# normalization) over a few prompts, with the prompts' token ids from
# llama-tokenize, written as JSON that model's TestEmbedParity reads.
# It runs llama.cpp's tools; it never builds them.
#
#   LLAMA_BIN=/work/peer/llama.cpp/build/bin MODELS=../shared/models sh scripts/embed-ref.sh
set -eu
BIN=${LLAMA_BIN:-/work/peer/llama.cpp/build/bin}
MODELS=${MODELS:-../shared/models}
OUT=${OUT:-model/testdata/embed}
mkdir -p "$OUT"

PROMPTS='Once upon a time
The little dog ran to the park and saw a big red ball. He was very happy and played all day with his friends.
Lily
She said hello to the sun, the moon and the stars, and then she went home to sleep.'

ref() { # ref NAME FILE POOLING
	name=$1 file=$2 pooling=$3
	tmp=$(mktemp -d)
	printf '%s\n' "$PROMPTS" | while IFS= read -r p; do
		"$BIN/llama-tokenize" -m "$file" -p "$p" --ids --log-disable </dev/null 2>/dev/null
	done >"$tmp/tokens"
	# llama-embedding prints through its log thread, whose output sometimes
	# comes out cut short or garbled (b10573): run it until the array parses.
	for try in 1 2 3 4 5 6 7 8; do
		"$BIN/llama-embedding" -m "$file" -p "$PROMPTS" --pooling "$pooling" --embd-output-format array \
			-t 2 -c 512 >"$tmp/out" 2>/dev/null
		grep '^\[' "$tmp/out" >"$tmp/embd" || true
		python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/embd" 2>/dev/null && break
		[ $try -lt 8 ] || { echo "embed-ref: llama-embedding output did not parse" >&2; exit 1; }
	done
	printf '%s\n' "$PROMPTS" >"$tmp/prompts"
	python3 - "$tmp" "$name" "$pooling" "$OUT/$name-$pooling.json" <<'PY'
import json, sys
tmp, name, pooling, out = sys.argv[1:]
prompts = open(tmp + "/prompts").read().splitlines()
tokens = [json.loads(l) for l in open(tmp + "/tokens").read().splitlines() if l.strip()]
embd = json.loads(open(tmp + "/embd").read())
assert len(prompts) == len(tokens) == len(embd), (len(prompts), len(tokens), len(embd))
ref = {"model": name, "pooling": pooling, "normalize": 2,
       "inputs": [{"text": p, "tokens": t, "embedding": e} for p, t, e in zip(prompts, tokens, embd)]}
with open(out, "w") as f:
    json.dump(ref, f, separators=(",", ":"))
    f.write("\n")
PY
	rm -r "$tmp"
}

for pooling in mean cls last; do
	ref stories260K "$MODELS/stories260K.gguf" $pooling
	ref synth-llama-tiny256-Q8_0 "$MODELS/synthetic/synth-llama-tiny256-Q8_0.gguf" $pooling
done
