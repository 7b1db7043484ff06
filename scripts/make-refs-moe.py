#!/usr/bin/env python3
"""Make llama.cpp reference cases for the mixture-of-experts models `troupe synth` writes.

The same procedure as scripts/make-refs.py (the Gemma references; this file
can fold into its MODELS table): for each model below `bin/troupe synth`
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
import json
import os
import subprocess
import sys
import tempfile

PROMPTS = ["Once upon a time", "Lily and Tom went to the park. They",
           "The little dog was sad because", "One day, a big red ball"]
N_GEN = 48
# name: (shape, type, vocab file, seed)
MODELS = {
    "synth-qwen3moe-tiny-Q8_0": ("qwen3moe-tiny", "Q8_0", "../shared/models/stories260K.gguf", 1),
    "synth-qwen2moe-tiny-Q8_0": ("qwen2moe-tiny", "Q8_0", "../shared/models/stories260K.gguf", 1),
    # MXFP4 experts, every other matrix Q8_0 (llama.cpp's MXFP4_MOE)
    "synth-qwen3moe-tiny-MXFP4_MOE": ("qwen3moe-tiny", "MXFP4_MOE", "../shared/models/stories260K.gguf", 1),
}


def main():
    ref_dump = sys.argv[1] if len(sys.argv) > 1 else "/tmp/ref-dump"
    for name, (shape, typ, vocab, seed) in MODELS.items():
        out_dir = os.path.join("model", "testdata", "reference", name)
        os.makedirs(out_dir, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, name + ".gguf")
            subprocess.run(["bin/troupe", "synth", "--shape", shape, "--type", typ, "--vocab", vocab,
                            "--seed", str(seed), "-t", "1", "-o", path], check=True)
            for i, prompt in enumerate(PROMPTS):
                base = os.path.join(out_dir, "case%d" % i)
                res = subprocess.run([ref_dump, path, prompt, str(N_GEN), base], check=True,
                                     capture_output=True, text=True)
                lines = dict(l.split(" ", 1) for l in res.stdout.strip().split("\n"))
                prompt_ids = [int(x) for x in lines["prompt_ids"].split()]
                greedy_ids = [int(x) for x in lines["greedy_ids"].split()]
                text = b"".join(b"" if p == "-" else bytes.fromhex(p) for p in lines["pieces"].split())
                case = {
                    "model": name,
                    "prompt": prompt,
                    "n_vocab": int(lines["n_vocab"]),
                    "prompt_ids": prompt_ids,
                    "greedy_ids": greedy_ids,
                    "greedy_text": text.decode("utf-8", errors="replace"),
                    "logit_rows": len(prompt_ids) + len(greedy_ids) - 1,
                    "greedy_min_gap": float(lines["min_gap"]),
                    "logits_file": "case%d.logits" % i,
                }
                with open(base + ".json", "w") as f:
                    json.dump(case, f, indent=1)
                    f.write("\n")
                print(name, i, case["logit_rows"], "rows, min gap", case["greedy_min_gap"])


if __name__ == "__main__":
    main()
