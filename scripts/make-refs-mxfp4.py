#!/usr/bin/env python3
"""Make the llama.cpp references of troupe's MXFP4 quantization and dequantization.

`bin/troupe synth` writes qwen3moe-tiny (seed 1) in F32; llama-quantize
turns it into MXFP4_MOE (its expert tensors MXFP4, by ggml's
quantize_row_mxfp4_ref); ggml-dequant (scripts/ggml-dequant.cpp, built
against a llama.cpp build as its header says; never committed) gives each
expert tensor's bytes and ggml's dequantization of them. Their SHA-256
digests go to model/testdata/reference/synth-qwen3moe-tiny-MXFP4_MOE/
ggml-quants.json, which TestMXFP4MatchesGGML compares with the file troupe
synth writes as MXFP4_MOE from the same values and with troupe's
dequantization.

Run from the repository root after `go build -o bin/troupe ./cmd/troupe`:

    python3 scripts/make-refs-mxfp4.py [LLAMA_QUANTIZE [GGML_DEQUANT]]

(defaults /work/peer/llama.cpp/build/bin/llama-quantize, /tmp/ggml-dequant).
The reference committed was made with llama.cpp b10573 (d775b8967).
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

SHAPE, LAYERS, VOCAB, SEED = "qwen3moe-tiny", 4, "../shared/models/stories260K.gguf", 1
OUT = os.path.join("model", "testdata", "reference", "synth-qwen3moe-tiny-MXFP4_MOE", "ggml-quants.json")


def main():
    quantize = sys.argv[1] if len(sys.argv) > 1 else "/work/peer/llama.cpp/build/bin/llama-quantize"
    dequant = sys.argv[2] if len(sys.argv) > 2 else "/tmp/ggml-dequant"
    refs = {}
    with tempfile.TemporaryDirectory() as tmp:
        f32, q = os.path.join(tmp, "f32.gguf"), os.path.join(tmp, "mxfp4.gguf")
        subprocess.run(["bin/troupe", "synth", "--shape", SHAPE, "--type", "F32", "--vocab", VOCAB,
                        "--seed", str(SEED), "-t", "1", "-o", f32], check=True)
        subprocess.run([quantize, f32, q, "MXFP4_MOE", "1"], check=True, capture_output=True)
        for l in range(LAYERS):
            for kind in ("gate", "up", "down"):
                name = "blk.%d.ffn_%s_exps.weight" % (l, kind)
                raw = subprocess.run([dequant, q, name, "raw"], check=True, capture_output=True).stdout
                vals = subprocess.run([dequant, q, name], check=True, capture_output=True).stdout
                refs[name] = {"type": "MXFP4", "bytes": len(raw),
                              "sha256": hashlib.sha256(raw).hexdigest(),
                              "f32_sha256": hashlib.sha256(vals).hexdigest()}
    with open(OUT, "w") as f:
        json.dump(refs, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", OUT, len(refs), "tensors")


if __name__ == "__main__":
    main()
