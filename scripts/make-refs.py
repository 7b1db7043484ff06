#!/usr/bin/env python3
"""Make llama.cpp reference cases for models `troupe synth` writes.

For each model below: `bin/troupe synth` writes the GGUF file (fixed seed,
so the test can write the same bytes again), then ref-dump (scripts/ref-dump.cpp,
built against a llama.cpp build as its header says) gives llama.cpp's
tokenization, greedy continuation and teacher-forced logits of the four
prompts of ../shared/reference, written as model/testdata/reference/<name>/caseN.json
and caseN.logits in that directory's layout; with a Q8_0 KV cache too, into
<name>/kv-q8_0/.

Run from the repository root after `go build -o bin/troupe ./cmd/troupe`:

    python3 scripts/make-refs.py [REF_DUMP]   # REF_DUMP defaults to /tmp/ref-dump

or, for any GGUF file (e.g. a gemma3-1b shape from `troupe synth`), into DIR,
for TROUPE_REF_MODEL=MODEL TROUPE_REF_DIR=DIR go test ./model -run TestParityEnv:

    python3 scripts/make-refs.py --model MODEL.gguf --out DIR [REF_DUMP]

The references committed were made with llama.cpp b10573 (d775b8967).
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
    "synth-gemma3-tiny-Q8_0": ("gemma3-tiny", "Q8_0", "../shared/models/stories260K.gguf", 1),
    "synth-gemma2-tiny-Q8_0": ("gemma2-tiny", "Q8_0", "../shared/models/stories260K.gguf", 1),
    "synth-smollm3-tiny-Q8_0": ("smollm3-tiny", "Q8_0", "../shared/models/stories260K.gguf", 1),
    "synth-phi4-tiny-Q8_0": ("phi4-tiny", "Q8_0", "../shared/models/stories260K.gguf", 1),
    # original context 128 < ref-dump's n_ctx 256: LongRoPE's long factors
    "synth-phi4-tiny-long-Q8_0": ("phi4-tiny-long", "Q8_0", "../shared/models/stories260K.gguf", 1),
}


def main():
    args = sys.argv[1:]
    if args[:1] == ["--model"]:
        model, out_dir = args[1], args[3]
        ref_dump = args[4] if len(args) > 4 else "/tmp/ref-dump"
        dump_cases(ref_dump, os.path.basename(model), model, out_dir, ("f16",))
        return
    ref_dump = args[0] if args else "/tmp/ref-dump"
    for name, (shape, typ, vocab, seed) in MODELS.items():
        out_dir = os.path.join("model", "testdata", "reference", name)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, name + ".gguf")
            subprocess.run(["bin/troupe", "synth", "--shape", shape, "--type", typ, "--vocab", vocab,
                            "--seed", str(seed), "-t", "1", "-o", path], check=True)
            dump_cases(ref_dump, name, path, out_dir, ("f16", "q8_0"))


def dump_cases(ref_dump, name, path, out_dir, kv_types):
    """Runs ref-dump on path for every prompt and KV cache type."""
    for i, (prompt, kv) in enumerate((p, kv) for kv in kv_types for p in PROMPTS):
        i %= len(PROMPTS)
        d = out_dir if kv == "f16" else os.path.join(out_dir, "kv-" + kv)
        os.makedirs(d, exist_ok=True)
        base = os.path.join(d, "case%d" % i)
        res = subprocess.run([ref_dump, path, prompt, str(N_GEN), base, kv], check=True,
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
        print(name, kv, i, case["logit_rows"], "rows, min gap", case["greedy_min_gap"])


if __name__ == "__main__":
    main()
