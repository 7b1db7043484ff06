#!/bin/sh
# vision-ref.sh makes the references of model/vision's TestParityPixels and
# TestParityEmbeddings: random projectors (troupe synth --projector, seed
# 1) of each tiny shape, and llama.cpp's preprocessed pixels (.pix.gz) and
# image embeddings (.emb) of testdata/img's images (written by
# TestWriteParityImages), by scripts/vision-dump.cpp linked against
# libmtmd. With GGML_ONLY=1 (a build with libggml but no libmtmd yet) it
# keeps the committed pixels and remakes only the embeddings, by
# scripts/vision-ggml-dump.cpp (clip's graph transcribed onto libggml).
# SHAPES (default: all) names the projector shapes to remake.
# It compiles the dumpers against a llama.cpp build; it never builds
# llama.cpp.
#
#   LLAMA=/work/peer/llama.cpp sh scripts/vision-ref.sh
. scripts/ref-env.sh
OUT=${OUT:-model/vision/testdata}
(cd model/vision && TROUPE_WRITE_TESTDATA=1 go test -count=1 -run TestWriteParityImages . >/dev/null)
if [ "${GGML_ONLY:-0}" = 1 ]; then
	build_dump dump vision-ggml-dump.cpp -lggml-cpu
else
	build_dump dump vision-dump.cpp -lmtmd -lllama
fi

for shape in ${SHAPES:-gemma3-tiny idefics3-tiny qwen2vl-tiny qwen2.5vl-tiny qwen3vl-tiny}; do
	"$tmp/troupe" synth --projector "$shape" --seed 1 -o "$tmp/$shape.gguf" >/dev/null
	mkdir -p "$OUT/$shape"
	if [ "${GGML_ONLY:-0}" = 1 ]; then
		for pix in "$OUT/$shape"/*.pix.gz; do
			name=$(basename "$pix" .pix.gz)
			gunzip -c "$pix" >"$tmp/$name.pix"
			"$tmp/dump" "$tmp/$shape.gguf" "$tmp/$name.pix" "$OUT/$shape/$name.emb" >/dev/null
		done
	else
		"$tmp/dump" "$tmp/$shape.gguf" "$OUT/$shape" "$OUT"/img/* 2>/dev/null
		gzip -n -9 -f "$OUT/$shape"/*.pix
	fi
done
