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

    python3 scripts/make-refs.py [REF_DUMP [NAME...]]   # REF_DUMP defaults to /tmp/ref-dump; NAMEs: only those models

or, for any GGUF file (e.g. a gemma3-1b shape from `troupe synth`), into DIR,
for TROUPE_REF_MODEL=MODEL TROUPE_REF_DIR=DIR go test ./model -run TestParityEnv:

    python3 scripts/make-refs.py --model MODEL.gguf --out DIR [REF_DUMP] [--gen N]

--gen N generates N tokens instead of 48 (ref-dump's context is 256): the
gpt-oss-20b-l4 references take 160, so that positions pass its sliding
window of 128:

    bin/troupe synth --shape gpt-oss-20b-l4 --type Q8_0 --vocab ../shared/models/stories260K.gguf -o /tmp/goss.gguf
    python3 scripts/make-refs.py --model /tmp/goss.gguf --out /tmp/goss-ref --gen 160
    TROUPE_REF_MODEL=/tmp/goss.gguf TROUPE_REF_DIR=/tmp/goss-ref go test ./model -run TestParityEnv

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
    # every matrix MXFP4 but the tied output (see internal/synth/mxfp4.go)
    "synth-smollm3-tiny-MXFP4": ("smollm3-tiny", "MXFP4", "../shared/models/stories260K.gguf", 1),
    # original context 128 < ref-dump's n_ctx 256: LongRoPE's long factors
    "synth-phi4-tiny-long-Q8_0": ("phi4-tiny-long", "Q8_0", "../shared/models/stories260K.gguf", 1),
    # sliding window 16 < the 50-odd positions of each case
    "synth-gpt-oss-tiny-Q8_0": ("gpt-oss-tiny", "Q8_0", "../shared/models/stories260K.gguf", 1),
    # gpt-oss's own expert type (llama.cpp's MXFP4_MOE: experts MXFP4, the rest Q8_0)
    "synth-gpt-oss-tiny-MXFP4_MOE": ("gpt-oss-tiny", "MXFP4_MOE", "../shared/models/stories260K.gguf", 1),
}


def main():
    args = sys.argv[1:]
    n_gen = N_GEN
    if "--gen" in args:
        i = args.index("--gen")
        n_gen = int(args[i + 1])
        del args[i:i + 2]
    if args[:1] == ["--model"]:
        model, out_dir = args[1], args[3]
        ref_dump = args[4] if len(args) > 4 else "/tmp/ref-dump"
        dump_cases(ref_dump, os.path.basename(model), model, out_dir, ("f16",), n_gen)
        return
    ref_dump = args[0] if args else "/tmp/ref-dump"
    only = set(args[1:])
    synth_cases(ref_dump, {n: m for n, m in MODELS.items() if not only or n in only}, ("f16", "q8_0"), n_gen)


def synth_cases(ref_dump, models, kv_types, n_gen=N_GEN):
    """Writes each of models (MODELS' shape) by `bin/troupe synth` and runs
    dump_cases on it into model/testdata/reference/<name>."""
    for name, (shape, typ, vocab, seed) in models.items():
        out_dir = os.path.join("model", "testdata", "reference", name)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, name + ".gguf")
            subprocess.run(["bin/troupe", "synth", "--shape", shape, "--type", typ, "--vocab", vocab,
                            "--seed", str(seed), "-t", "1", "-o", path], check=True)
            dump_cases(ref_dump, name, path, out_dir, kv_types, n_gen)


def dump_cases(ref_dump, name, path, out_dir, kv_types, n_gen=N_GEN):
    """Runs ref-dump on path for every prompt and KV cache type."""
    for i, (prompt, kv) in enumerate((p, kv) for kv in kv_types for p in PROMPTS):
        i %= len(PROMPTS)
        d = out_dir if kv == "f16" else os.path.join(out_dir, "kv-" + kv)
        os.makedirs(d, exist_ok=True)
        base = os.path.join(d, "case%d" % i)
        res = subprocess.run([ref_dump, path, prompt, str(n_gen), base, kv], check=True,
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
