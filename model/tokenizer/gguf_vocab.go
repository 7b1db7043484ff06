package tokenizer

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/troupe-llm/troupe/model/gguf"
)

// FromFile builds the Tokenizer of a GGUF file's vocabulary:
// New(FromGGUF(f)).
func FromFile(f *gguf.File) (*Tokenizer, error) {
	v, err := FromGGUF(f)
	if err != nil {
		return nil, err
	}
	return New(v)
}

// FromGGUF reads the vocabulary in a GGUF file's tokenizer.ggml.* keys the
// way llama.cpp's llama_vocab::impl::load does: its defaults per tokenizer
// family and pre-tokenizer, its checks on special token ids, and its
// detection of end-of-turn and end-of-generation tokens by their text. It
// supports the families New can tokenize: "llama", "gpt2" and "bert".
func FromGGUF(f *gguf.File) (*Vocab, error) {
	v := &Vocab{}
	var ok bool
	if v.Model, ok = f.String("tokenizer.ggml.model"); !ok {
		return nil, errors.New("tokenizer: gguf: no tokenizer.ggml.model")
	}
	v.Pre, _ = f.String("tokenizer.ggml.pre")
	if v.Tokens, ok = f.Strings("tokenizer.ggml.tokens"); !ok || len(v.Tokens) == 0 {
		return nil, errors.New("tokenizer: gguf: no tokenizer.ggml.tokens")
	}
	n := len(v.Tokens)
	v.Tokens = append([]string(nil), v.Tokens...)
	for i, tok := range v.Tokens {
		if tok == "" {
			v.Tokens[i] = "[EMPTY_" + strconv.Itoa(i) + "]" // as llama.cpp renames them
		}
	}
	if err := readTokenArrays(f, v); err != nil {
		return nil, err
	}

	// Family defaults (llama.cpp's load, "determine vocab type").
	v.BOS, v.EOS, v.EOT, v.EOM, v.UNK, v.PAD, v.SEP, v.MASK, v.NL = -1, -1, -1, -1, -1, -1, -1, -1, -1
	v.EscapeWhitespaces = true
	switch v.Model {
	case "llama":
		v.BOS, v.EOS, v.UNK = 1, 2, 0
		v.AddSpacePrefix, v.AddBOS = true, true
	case "bert":
		v.BOS, v.UNK, v.SEP, v.PAD, v.MASK = 101, 100, 102, 0, 103
		v.AddBOS, v.AddSEP, v.CleanSpaces = true, true, true
	case "gpt2":
		if v.Merges, ok = f.Strings("tokenizer.ggml.merges"); !ok {
			return nil, errors.New("tokenizer: gguf: no tokenizer.ggml.merges")
		}
		v.BOS, v.EOS = 11, 11
		v.EscapeWhitespaces, v.CleanSpaces = false, true
		applyBPEPre(v)
	default:
		return nil, fmt.Errorf("tokenizer: gguf: tokenizer.ggml.model %q: %w", v.Model, ErrUnsupported)
	}
	readBool(f, "tokenizer.ggml.add_space_prefix", &v.AddSpacePrefix)
	readBool(f, "tokenizer.ggml.remove_extra_whitespaces", &v.RemoveExtraWhitespaces)

	// Special token ids: a default outside the vocabulary is dropped, a key
	// outside it is ignored.
	for _, s := range []struct {
		key string
		id  *int32
	}{
		{"bos_token_id", &v.BOS}, {"eos_token_id", &v.EOS}, {"eot_token_id", &v.EOT},
		{"eom_token_id", &v.EOM}, {"unknown_token_id", &v.UNK}, {"seperator_token_id", &v.SEP},
		{"padding_token_id", &v.PAD}, {"mask_token_id", &v.MASK},
	} {
		if *s.id >= int32(n) {
			*s.id = -1
		}
		readID(f, "tokenizer.ggml."+s.key, n, s.id)
	}
	if _, ok := f.Uint("tokenizer.ggml.bos_token_id"); !ok && v.Model == "bert" {
		readID(f, "tokenizer.ggml.cls_token_id", n, &v.BOS)
	}
	readBool(f, "tokenizer.ggml.add_bos_token", &v.AddBOS)
	readBool(f, "tokenizer.ggml.add_eos_token", &v.AddEOS)
	readBool(f, "tokenizer.ggml.add_sep_token", &v.AddSEP)
	if v.Pre == "gemma4" || v.Pre == "granite-embed-multi-311m" {
		v.AddBOS = true // llama.cpp's Gemma 4 workaround
	}
	for _, c := range []struct {
		add  bool
		id   int32
		what string
	}{{v.AddBOS, v.BOS, "add_bos_token"}, {v.AddEOS, v.EOS, "add_eos_token"}, {v.AddSEP, v.SEP, "add_sep_token"}} {
		if c.add && c.id < 0 {
			return nil, fmt.Errorf("tokenizer: gguf: %s is set but its token id is not", c.what)
		}
	}
	v.Lowercase = true
	readBool(f, "tokenizer.ggml.normalizer.lowercase", &v.Lowercase)
	v.StripAccents = v.Lowercase
	readBool(f, "tokenizer.ggml.normalizer.strip_accents", &v.StripAccents)

	detectSpecialTokens(f, v)
	v.NL = newlineToken(v)
	v.ChatTemplate, _ = f.String("tokenizer.chat_template")
	return v, nil
}

// readTokenArrays reads the scores and token types.
func readTokenArrays(f *gguf.File, v *Vocab) error {
	n := len(v.Tokens)
	if _, present := f.Value("tokenizer.ggml.scores"); present {
		scores, ok := f.Float32s("tokenizer.ggml.scores")
		if !ok {
			ints, okInt := f.Int32s("tokenizer.ggml.scores")
			if !okInt {
				return errors.New("tokenizer: gguf: tokenizer.ggml.scores is not a number array")
			}
			scores = make([]float32, len(ints))
			for i, x := range ints {
				scores[i] = float32(x)
			}
		}
		if len(scores) < n {
			return fmt.Errorf("tokenizer: gguf: %d scores for %d tokens", len(scores), n)
		}
		v.Scores = scores[:n:n]
	}
	if _, present := f.Value("tokenizer.ggml.token_type"); present {
		types, ok := f.Int32s("tokenizer.ggml.token_type")
		if !ok || len(types) < n {
			return fmt.Errorf("tokenizer: gguf: tokenizer.ggml.token_type: not %d integers", n)
		}
		v.Types = make([]TokenType, n)
		for i := range v.Types {
			if t := TokenType(types[i]); t >= TypeNormal && t <= TypeByte {
				v.Types[i] = t
			}
		}
	}
	return nil
}

// applyBPEPre sets the flags llama.cpp ties to a byte-level BPE pre-tokenizer.
func applyBPEPre(v *Vocab) {
	switch v.Pre {
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano":
		v.IgnoreMerges, v.AddBOS = true, true
	case "minicpm5":
		v.IgnoreMerges = true
	case "tekken":
		v.IgnoreMerges, v.AddBOS, v.CleanSpaces = true, true, false
	case "youtu", "granite-embed-multi-97m":
		v.IgnoreMerges, v.CleanSpaces = true, false
	case "chameleon":
		v.AddBOS, v.CleanSpaces = true, false
	case "gemma4", "granite-embed-multi-311m":
		v.EscapeWhitespaces = true
	case "sarvam-moe":
		v.EscapeWhitespaces, v.CleanSpaces = true, false
	case "jina-v1-en", "jina-v2-code", "roberta-bpe":
		v.AddSEP = true
	case "glm4", "chatglm-bpe":
		v.BOS = -1
	case "deepseek-llm", "deepseek-coder", "deepseek-v3", "spark2_5", "command-r", "qwen2",
		"deepseek-r1-qwen", "kormo", "f2llmv2", "qwen35", "poro-chat", "viking", "smollm",
		"gpt-4o", "llama4", "kanana2", "talkie", "tiny_aya", "cohere2moe", "superbpe", "trillion",
		"granite-docling", "bailingmoe", "bailingmoe2", "llada-moe", "seed-coder", "hunyuan",
		"hunyuan-dense", "hy_v4", "joyai-llm", "kimi-k2", "ufakzeka", "grok-2", "afmoe", "laguna",
		"minimax-m2", "solar-open":
		v.CleanSpaces = false
	}
}

func readBool(f *gguf.File, key string, dst *bool) {
	if b, ok := f.Bool(key); ok {
		*dst = b
	}
}

// readID sets *dst from key when the key holds an id inside the vocabulary.
func readID(f *gguf.File, key string, n int, dst *int32) {
	if id, ok := f.Uint(key); ok && id < uint64(n) {
		*dst = int32(id)
	}
}

// newlineToken is llama.cpp's linefeed_id.
func newlineToken(v *Vocab) int32 {
	switch v.Model {
	case "llama":
		for i, tok := range v.Tokens {
			if tok == "<0x0A>" {
				return int32(i)
			}
		}
		for i, tok := range v.Tokens {
			if tok == "\n" {
				return int32(i)
			}
		}
	case "gpt2":
		if enc, err := newBPE(v); err == nil {
			if ids := enc.encode("\n", nil); len(ids) > 0 {
				return ids[0]
			}
		}
	}
	return v.PAD
}
