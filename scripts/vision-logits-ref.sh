#!/bin/sh
# vision-logits-ref.sh makes the references of model's
# TestVisionLogitsParity in model/vision/testdata/logits: stories260K
# (llama, width 64), and a random gemma3-tiny text model (troupe synth,
# F32, stories260K's vocabulary, seed 11; gemma3, width 256), each with a
# random gemma3-tiny projector of its width (troupe synth --projector
# gemma3-tiny --text-dim, seed 1); a prompt with one image
# (testdata/img/wide.png), llama.cpp's token layout, image rows,
# teacher-forced logits of every text position and greedy ids
# (scripts/vision-logits-dump.cpp, linked against libmtmd and libllama):
# once as mtmd decodes the image (non-causal attention over its rows, as
# for every Gemma 3 projector) and once with causal attention (CAUSAL=1).
# Then Qwen2.5-VL: a random qwen2vl-tiny text model (troupe synth, F32,
# stories260K's vocabulary, seed 11; M-RoPE, width 256) with a random
# qwen2.5vl-tiny projector (seed 1), the same prompt and image, decoded
# as mtmd does (causal, M-RoPE positions: NAME.pos).
# It compiles the dumper against a llama.cpp build; it never builds
# llama.cpp.
#
#   LLAMA=/work/peer/llama.cpp MODELS=../shared/models sh scripts/vision-logits-ref.sh
. scripts/ref-env.sh
OUT=${OUT:-model/vision/testdata/logits}
PROMPT='Once upon a time <__media__> there was a little'
NGEN=8
mkdir -p "$OUT"
build_dump dump vision-logits-dump.cpp -lmtmd -lllama
"$tmp/troupe" synth --shape gemma3-tiny --type F32 --vocab "$MODELS/stories260K.gguf" --seed 11 -o "$tmp/gemma3-tiny.gguf" >/dev/null
for c in "stories260K $MODELS/stories260K.gguf 64" "gemma3-tiny $tmp/gemma3-tiny.gguf 256"; do
	set -- $c
	"$tmp/troupe" synth --projector gemma3-tiny --text-dim "$3" --seed 1 -o "$tmp/mmproj.gguf" >/dev/null
	"$tmp/dump" "$2" "$tmp/mmproj.gguf" model/vision/testdata/img/wide.png "$PROMPT" $NGEN "$OUT/$1-gemma3-tiny" 2>/dev/null
	CAUSAL=1 "$tmp/dump" "$2" "$tmp/mmproj.gguf" model/vision/testdata/img/wide.png "$PROMPT" $NGEN "$OUT/$1-gemma3-tiny-causal" 2>/dev/null
done
"$tmp/troupe" synth --shape qwen2vl-tiny --type F32 --vocab "$MODELS/stories260K.gguf" --seed 11 -o "$tmp/qwen2vl-tiny.gguf" >/dev/null
"$tmp/troupe" synth --projector qwen2.5vl-tiny --text-dim 256 --seed 1 -o "$tmp/mmproj.gguf" >/dev/null
"$tmp/dump" "$tmp/qwen2vl-tiny.gguf" "$tmp/mmproj.gguf" model/vision/testdata/img/wide.png "$PROMPT" $NGEN "$OUT/qwen2vl-tiny-qwen2.5vl-tiny" 2>/dev/null
# Qwen2-VL: the same text model with a random qwen2vl-tiny projector.
"$tmp/troupe" synth --projector qwen2vl-tiny --text-dim 256 --seed 1 -o "$tmp/mmproj.gguf" >/dev/null
"$tmp/dump" "$tmp/qwen2vl-tiny.gguf" "$tmp/mmproj.gguf" model/vision/testdata/img/wide.png "$PROMPT" $NGEN "$OUT/qwen2vl-tiny-qwen2vl-tiny" 2>/dev/null
# Qwen3-VL: a random qwen3vl-tiny text model (interleaved M-RoPE, two
# deepstack layers; seed 11) with a random qwen3vl-tiny projector (seed 1):
# its rows carry the merger's and the two deepstack layers' values.
"$tmp/troupe" synth --shape qwen3vl-tiny --type F32 --vocab "$MODELS/stories260K.gguf" --seed 11 -o "$tmp/qwen3vl-tiny.gguf" >/dev/null
"$tmp/troupe" synth --projector qwen3vl-tiny --text-dim 256 --seed 1 -o "$tmp/mmproj.gguf" >/dev/null
"$tmp/dump" "$tmp/qwen3vl-tiny.gguf" "$tmp/mmproj.gguf" model/vision/testdata/img/wide.png "$PROMPT" $NGEN "$OUT/qwen3vl-tiny-qwen3vl-tiny"
