#!/bin/sh
# vision-ref.sh makes the references of model/vision's TestParity: random
# projectors (troupe synth --projector, seed 1) of each tiny shape, and
# llama.cpp's preprocessed pixels and image embeddings (scripts/vision-dump.cpp,
# linked against libmtmd) of testdata/img's images (written by
# TestWriteParityImages). It compiles the dumper against a llama.cpp build;
# it never builds llama.cpp.
#
#   LLAMA=/work/peer/llama.cpp sh scripts/vision-ref.sh
set -eu
L=${LLAMA:-/work/peer/llama.cpp}
OUT=${OUT:-model/vision/testdata}
tmp=$(mktemp -d)
trap 'rm -r "$tmp"' EXIT

g++ -O2 -std=c++17 -o "$tmp/vision-dump" scripts/vision-dump.cpp -I"$L/tools/mtmd" -I"$L/include" -I"$L/ggml/include" \
	-L"$L/build/bin" -lmtmd -lllama -lggml -lggml-base -Wl,-rpath,"$L/build/bin"
go build -o "$tmp/troupe" ./cmd/troupe
(cd model/vision && TROUPE_WRITE_TESTDATA=1 go test -count=1 -run TestWriteParityImages . >/dev/null)

for shape in gemma3-tiny idefics3-tiny; do
	"$tmp/troupe" synth --projector "$shape" --seed 1 -o "$tmp/$shape.gguf" >/dev/null
	mkdir -p "$OUT/$shape"
	"$tmp/vision-dump" "$tmp/$shape.gguf" "$OUT/$shape" "$OUT"/img/* 2>/dev/null
	gzip -n -9 -f "$OUT/$shape"/*.pix
done
