#!/bin/sh
# lora-ref.sh makes the LoRA references of model/testdata/lora: random
# adapters (troupe synth --lora-of, the ranks, alphas and seeds below) for
# stories260K (F32) and synth-llama-tiny256-Q8_0, and llama.cpp's logits
# (scripts/lora-dump.cpp, linked against libllama) of one token sequence
# decoded with them at the scales below; model's TestLoRAParity writes the
# same adapters and compares. It compiles the dumper against a llama.cpp
# build; it never builds llama.cpp.
#
#   LLAMA=/work/peer/llama.cpp MODELS=../shared/models sh scripts/lora-ref.sh
. scripts/ref-env.sh
OUT=${OUT:-model/testdata/lora}
IDS=1,15,30,100,200,7,42,300,11,400,5,99 # TestLoRAParity's loraIDs
mkdir -p "$OUT"
build_dump lora-dump lora-dump.cpp -lllama

for m in stories260K synthetic/synth-llama-tiny256-Q8_0; do
	name=$(basename "$m")
	"$tmp/troupe" synth --lora-of "$MODELS/$m.gguf" --rank 8 --alpha 16 --seed 1 -o "$tmp/$name-a.gguf" >/dev/null
	"$tmp/troupe" synth --lora-of "$MODELS/$m.gguf" --rank 4 --alpha 0 --seed 2 -o "$tmp/$name-b.gguf" >/dev/null
	"$tmp/lora-dump" "$MODELS/$m.gguf" "$OUT/$name-a0.75.f32" "$IDS" "$tmp/$name-a.gguf" 0.75 2>/dev/null
	"$tmp/lora-dump" "$MODELS/$m.gguf" "$OUT/$name-a0.75-b-0.5.f32" "$IDS" "$tmp/$name-a.gguf" 0.75 "$tmp/$name-b.gguf" -0.5 2>/dev/null
done
