#!/bin/sh
# embed-ref.sh makes the embedding references of model/testdata/embed: for
# each model and pooling, llama.cpp's llama-embedding (default L2
# normalization) over a few prompts, with the prompts' token ids from
# llama-tokenize, written as JSON that model's TestEmbedParity reads.
# The encoders (bert-tiny, nomic-bert-tiny) are synthesized first by
# `troupe synth` (seed 1, F16, the bge WordPiece vocabulary), as
# TestEmbedParity synthesizes them. It runs llama.cpp's tools; it never
# builds them.
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
	# llama-embedding prints through its log thread, whose last output is
	# sometimes lost at exit on a busy machine (b10573): run it until the
	# array parses with one row per prompt.
	n=$(printf '%s\n' "$PROMPTS" | wc -l)
	try=0
	until "$BIN/llama-embedding" -m "$file" -p "$PROMPTS" --pooling "$pooling" --embd-output-format array \
		-t 2 -c 512 >"$tmp/out" 2>/dev/null &&
		grep '^\[' "$tmp/out" >"$tmp/embd" &&
		python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))) == int(sys.argv[2])' "$tmp/embd" "$n" 2>/dev/null; do
		try=$((try + 1))
		[ $try -lt 40 ] || { echo "embed-ref: $name: llama-embedding output did not parse" >&2; exit 1; }
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

synth=$(mktemp -d)
go build -o "$synth/troupe" ./cmd/troupe
for shape in bert-tiny nomic-bert-tiny; do
	"$synth/troupe" synth --shape $shape --type F16 --seed 1 --vocab "$MODELS/vocab/ggml-vocab-bert-bge.gguf" -o "$synth/$shape-F16.gguf" >/dev/null
done
ref bert-tiny-F16 "$synth/bert-tiny-F16.gguf" cls # the pooling its file names
ref bert-tiny-F16 "$synth/bert-tiny-F16.gguf" mean
ref nomic-bert-tiny-F16 "$synth/nomic-bert-tiny-F16.gguf" mean
rm -r "$synth"
