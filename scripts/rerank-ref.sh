#!/bin/sh
# rerank-ref.sh makes the rerank references of model/testdata/rerank: the
# synthetic rerankers (troupe synth, seed 1, F16: bge-reranker-tiny with the
# bge WordPiece vocabulary, qwen3-reranker-tiny with stories260K's
# SentencePiece one), each scored by llama.cpp (scripts/rerank-dump.cpp,
# llama-server's format_prompt_rerank and rank pooling) on a few
# query-document pairs; model's TestRerankParity reads them. It compiles
# the dumper against a llama.cpp build; it never builds llama.cpp.
#
#   LLAMA=/work/peer/llama.cpp MODELS=../shared/models sh scripts/rerank-ref.sh
. scripts/ref-env.sh
OUT=${OUT:-model/testdata/rerank}
mkdir -p "$OUT"
build_dump rerank-dump rerank-dump.cpp -lllama

TAB=$(printf '\t')
cat >"$tmp/pairs" <<PAIRS
What is the capital of France?${TAB}Paris is the capital and largest city of France.
What is the capital of France?${TAB}The little dog ran to the park and saw a big red ball.
What is the capital of France?${TAB}Berlin is the capital of Germany.
Who wrote Hamlet?${TAB}Hamlet is a tragedy written by William Shakespeare around 1600.
Who wrote Hamlet?${TAB}Lily
how do plants make food${TAB}Plants use sunlight, water and carbon dioxide to make sugar in a process called photosynthesis.
PAIRS

ref() { # ref SHAPE VOCAB
	shape=$1 vocab=$2
	"$tmp/troupe" synth --shape "$shape" --type F16 --seed 1 --vocab "$vocab" -o "$tmp/$shape.gguf" >/dev/null
	"$tmp/rerank-dump" "$tmp/$shape.gguf" <"$tmp/pairs" >"$tmp/$shape.jsonl"
	python3 - "$tmp/$shape.jsonl" "$shape" "$OUT/$shape-F16.json" <<'PY'
import json, sys
src, shape, out = sys.argv[1:]
pairs = [json.loads(l) for l in open(src) if l.strip()]
ref = {"shape": shape, "type": "F16", "seed": 1, "pairs": pairs}
with open(out, "w") as f:
    json.dump(ref, f, separators=(",", ":"))
    f.write("\n")
PY
}

ref bge-reranker-tiny "$MODELS/vocab/ggml-vocab-bert-bge.gguf"
ref qwen3-reranker-tiny "$MODELS/stories260K.gguf"
