#!/usr/bin/env python3
"""Makes the llama.cpp token-id references for the Gemma 3 and gpt-oss vocabs
that model/tokenizer's TestFamilyVocabVectors checks troupe against.

Usage: scripts/make-vocab-refs.py [TOKENIZE_DUMP]
  TOKENIZE_DUMP  scripts/tokenize-dump.cpp built against llama.cpp (default
                 /tmp/tokenize-dump; its header says how to build it)
Env: TROUPE_NPM_DIR (as scripts/testdata-npm.sh), TROUPE_MODELS (the shared
models dir, default ../shared/models).

For each vocab (the GGUFs scripts/testdata-vocab.sh writes with
scripts/vocab-gguf.py under $TROUPE_NPM_DIR/vocab) it writes, under
model/tokenizer/testdata/vectors:
  NAME.out                one line of ids per case of llama.cpp's shared
                          tokenizer texts (vocab/ggml-vocab-llama-spm.gguf.inp)
                          followed by the cases of extra.inp, tokenized as
                          test-tokenizer-0 does: no BOS/EOS, special tokens
                          not parsed;
  NAME.special.out        the cases of special.inp (chat-format strings) with
                          special tokens parsed and BOS added where the vocab
                          asks;
  NAME.random.out,
  NAME.random.special.out random.inp's cases both ways, and
  NAME.random.detok       their special-mode ids detokenized back, with
                          unparse_special false and true: a JSON list of the
                          two strings per line.
random.inp: 250 strings drawn (seed 23) from letters of every case class,
scripts, marks, digits, whitespace, contractions and the families' special
token texts; written when missing.
tokenize-dump gives the same ids as `llama-tokenize -f FILE --no-escape --ids
[--no-bos --no-parse-special]` (checked on NAME.out and NAME.special.out),
in one process per file.
"""
import json
import os
import random
import subprocess
import sys

SEP = "\n__ggml_vocab_test__\n"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "model", "tokenizer", "testdata", "vectors")
VOCABS = ["gemma3", "gpt-oss"]

POOLS = [
    "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    " ", "  ", "\n", "\t", "\r\n", "\u00a0", "\u3000", "\u2581",
    "àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝßþÞ",
    "\u0301\u0308\u0327\u030a\u0323", "αβγδεζηθλμπσωΑΒΓΔΕΘΛΠΣΩάέή", "абвгдежзийклмнопрстуфхцчшщыьэюяАБВГДЕЖЗИЙ",
    "日本語中文字符漢字テキストひらがなカタカナ", "한국어텍스트", "हिन्दीभाषा", "ภาษาไทย", "العربيةمرحبا", "עברית",
    "ǅǈǋǲ", "ʰʲʷˡˢˣ", "ﬁﬂ", "①②③", "½¼¾", "٣٤٥", "𝐀𝐁𝐂𝒜", "ℌℍℎ",
]
WORDS = [
    "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'RE", "don't", "I'M", "camelCase", "XMLHttp", "iPhone",
    "<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>", "</s>", "<mask>", "[multimodal]", "<unused7>", "<pad>",
    "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|call|>", "<|constrain|>", "<|endoftext|>",
    "<|reserved_200100|>", "<|startoftext|>", "<start_of_image>", "\U0001f44d\U0001f3fd",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\U0001f999", "\u200d", "\ufeff", "http://example.com/a?b=c",
    "    ", "\n\n\n", "\t\t", "1234567", "3.14", "——", "...", "\x00", "\x1b[0m",
]


def random_cases(n=250):
    rng = random.Random(23)
    cases = []
    while len(cases) < n:
        parts = []
        for _ in range(rng.randint(1, 25)):
            if rng.random() < 0.25:
                parts.append(rng.choice(WORDS))
            else:
                pool = rng.choice(POOLS)
                parts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 6))))
        cases.append("".join(parts))
    return cases


def write_cases(path, cases):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(SEP.join(cases))


def dump(tool, gguf, inp, mode, out):
    r = subprocess.run([tool, gguf, inp, mode], capture_output=True, check=True)
    lines = r.stdout.decode().splitlines()
    with open(out, "w") as f:
        if mode == "detok":
            for line in lines:
                texts = [bytes.fromhex(h).decode("utf-8") for h in line.split(" ")]
                f.write(json.dumps(texts, ensure_ascii=False) + "\n")
        else:
            f.write("".join(" " + line.strip() + "\n" for line in lines))
    return len(lines)


def main():
    tool = sys.argv[1] if len(sys.argv) > 1 else "/tmp/tokenize-dump"
    npm = os.environ.get("TROUPE_NPM_DIR") or os.path.expanduser("~/.cache/troupe-npm")
    models = os.environ.get("TROUPE_MODELS") or os.path.join(ROOT, "..", "shared", "models")
    rand = os.path.join(OUT, "random.inp")
    if not os.path.exists(rand):
        write_cases(rand, random_cases())
    plain = os.path.join(OUT, "plain.inp.tmp")
    with open(os.path.join(models, "vocab", "ggml-vocab-llama-spm.gguf.inp"), "rb") as f:
        shared = f.read()  # ends with a separator
    with open(os.path.join(OUT, "extra.inp"), "rb") as f:
        extra = f.read()
    with open(plain, "wb") as f:
        f.write(shared + extra)
    try:
        for name in VOCABS:
            gguf = os.path.join(npm, "vocab", f"ggml-vocab-{name}.gguf")
            n = dump(tool, gguf, plain, "plain", os.path.join(OUT, f"{name}.out"))
            n += dump(tool, gguf, os.path.join(OUT, "special.inp"), "special", os.path.join(OUT, f"{name}.special.out"))
            n += dump(tool, gguf, rand, "plain", os.path.join(OUT, f"{name}.random.out"))
            n += dump(tool, gguf, rand, "special", os.path.join(OUT, f"{name}.random.special.out"))
            dump(tool, gguf, rand, "detok", os.path.join(OUT, f"{name}.random.detok"))
            print(f"make-vocab-refs: {name}: {n} cases")
    finally:
        os.unlink(plain)


if __name__ == "__main__":
    main()
