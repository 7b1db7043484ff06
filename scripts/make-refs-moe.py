#!/usr/bin/env python3
"""Make llama.cpp reference cases for the mixture-of-experts models `troupe synth` writes.

The same procedure as scripts/make-refs.py (the Gemma references), whose
synth_cases it runs with an f16 KV cache only: for each model below `bin/troupe synth`
writes the GGUF file (fixed seed, so the test writes the same bytes again),
then ref-dump (scripts/ref-dump.cpp, built against a llama.cpp build as its
header says; never committed) gives llama.cpp's tokenization, greedy
continuation and teacher-forced logits of the four prompts of
../shared/reference, written as model/testdata/reference/<name>/caseN.json
and caseN.logits in that directory's layout.

Run from the repository root after `go build -o bin/troupe ./cmd/troupe`:

    python3 scripts/make-refs-moe.py [REF_DUMP]   # REF_DUMP defaults to /tmp/ref-dump

The references committed were made with llama.cpp b10573 (d775b8967), CPU,
2 threads, f16 KV cache, on an AVX-512 machine.
"""
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("make_refs", os.path.join(ROOT, "scripts", "make-refs.py"))
refs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(refs)

# name: (shape, type, vocab file, seed)
MODELS = {
    "synth-qwen3moe-tiny-Q8_0": ("qwen3moe-tiny", "Q8_0", "../shared/models/stories260K.gguf", 1),
    "synth-qwen2moe-tiny-Q8_0": ("qwen2moe-tiny", "Q8_0", "../shared/models/stories260K.gguf", 1),
    # MXFP4 experts, every other matrix Q8_0 (llama.cpp's MXFP4_MOE)
    "synth-qwen3moe-tiny-MXFP4_MOE": ("qwen3moe-tiny", "MXFP4_MOE", "../shared/models/stories260K.gguf", 1),
}


def main():
    refs.synth_cases(sys.argv[1] if len(sys.argv) > 1 else "/tmp/ref-dump", MODELS, ("f16",))


if __name__ == "__main__":
    main()
