package tokenizer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// FromHFFiles builds a Vocab from a Hugging Face tokenizer.json and its
// tokenizer_config.json (nil when there is none), giving what llama.cpp
// would load from the GGUF that convert_hf_to_gguf.py makes of them:
//   - a byte-level BPE (ByteLevel pre-tokenizer or decoder) becomes Model
//     "gpt2", its Pre named after its Split regex (Llama 3 → "llama-bpe",
//     Qwen2 → "qwen2", plain ByteLevel → "gpt-2", Digits + ByteLevel →
//     "starcoder"); a pre-tokenizer llama.cpp has no name for is kept in
//     PreRegexes;
//   - a SentencePiece-style BPE (byte fallback, ▁ for spaces) becomes Model
//     "llama" as gguf-py's LlamaHfVocab writes it: every score -1000, so
//     llama.cpp merges leftmost first, not in HF's merge order;
//   - added tokens become control tokens when special (or looking special,
//     like "<|...|>"), user-defined otherwise;
//   - BOS/EOS/UNK/PAD come from tokenizer_config.json, add_bos/add_eos from
//     it or from the post-processor's template.
func FromHFFiles(tokenizerJSON, tokenizerConfigJSON []byte) (*Vocab, error) {
	var hf hfTokenizer
	if err := json.Unmarshal(tokenizerJSON, &hf); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	cfg, err := parseHFConfig(tokenizerConfigJSON)
	if err != nil {
		return nil, err
	}
	if hf.Model.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer.json: model type %q: %w", hf.Model.Type, ErrUnsupported)
	}
	v := &Vocab{BOS: -1, EOS: -1, EOT: -1, EOM: -1, UNK: -1, PAD: -1, SEP: -1, MASK: -1, NL: -1}
	if v.Merges, err = hfMerges(hf.Model.Merges); err != nil {
		return nil, err
	}
	pads, err := hfTokens(v, &hf)
	if err != nil {
		return nil, err
	}
	byteLevel := hf.PreTokenizer.has("ByteLevel") || hf.Decoder.has("ByteLevel")
	switch {
	case byteLevel:
		v.Model = "gpt2"
		if err := hfBytePre(v, hf.PreTokenizer); err != nil {
			return nil, err
		}
		v.CleanSpaces = true
		applyBPEPre(v) // llama.cpp's per-pre defaults: ignore_merges, add_bos, clean_spaces, ...
		v.IgnoreMerges = v.IgnoreMerges || hf.Model.IgnoreMerges
		v.Types = hfTypes(v, &hf, cfg, pads)
	case hf.Model.ByteFallback || hf.Decoder.has("ByteFallback") || hf.Normalizer.has("Prepend") || hf.PreTokenizer.has("Metaspace"):
		v.Model, v.Pre = "llama", "default"
		v.BOS, v.EOS, v.UNK = 1, 2, 0 // llama.cpp's defaults for SentencePiece
		v.AddSpacePrefix, v.EscapeWhitespaces, v.AddBOS = true, true, true
		v.Scores = slices.Repeat([]float32{-1000}, len(v.Tokens))
		v.Types = hfTypes(v, &hf, cfg, pads)
	default:
		return nil, fmt.Errorf("tokenizer.json: a BPE that is neither byte-level nor SentencePiece-style: %w", ErrUnsupported)
	}
	hfSpecials(v, &hf, cfg)
	// EOT, EOM and EOG by token text, as FromGGUF finds them in a file that
	// has no keys for them.
	detectSpecialTokens(noMetadata{}, v)
	v.NL = newlineToken(v)
	v.ChatTemplate = cfg.chatTemplate()
	return v, nil
}

func ptr[T any](x T) *T { return &x }

// hfTokens fills Tokens by id: the model's vocabulary, then the added tokens;
// ids nothing names become "[PAD<id>]", as convert_hf_to_gguf.py writes them,
// and are returned.
func hfTokens(v *Vocab, hf *hfTokenizer) (pads []int32, err error) {
	n := 0
	for _, id := range hf.Model.Vocab {
		n = max(n, int(id)+1)
	}
	for _, t := range hf.AddedTokens {
		n = max(n, int(t.ID)+1)
	}
	if limit := len(hf.Model.Vocab) + len(hf.AddedTokens) + 1<<16; n > limit {
		return nil, fmt.Errorf("tokenizer.json: token id %d for %d tokens", n-1, limit-1<<16)
	}
	v.Tokens = make([]string, n)
	named := make([]bool, n)
	for text, id := range hf.Model.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("tokenizer.json: token %q has id %d", text, id)
		}
		v.Tokens[id], named[id] = text, true
	}
	for _, t := range hf.AddedTokens {
		if t.ID < 0 {
			return nil, fmt.Errorf("tokenizer.json: added token %q has id %d", t.Content, t.ID)
		}
		v.Tokens[t.ID], named[t.ID] = t.Content, true
	}
	for i, ok := range named {
		if !ok {
			v.Tokens[i] = fmt.Sprintf("[PAD%d]", i)
			pads = append(pads, int32(i))
		}
	}
	return pads, nil
}

var byteTokenRE = regexp.MustCompile(`^<0x[0-9A-Fa-f]{2}>$`)

// hfTypes gives each token its type as convert_hf_to_gguf.py does. Byte-level
// vocabularies (get_vocab_base): added tokens are control when special or
// looking special, user-defined otherwise (with ▁ written as a space).
// SentencePiece-style ones (LlamaHfVocab): "<0xXX>" are byte tokens, special
// tokens control, added tokens past the model's vocabulary user-defined.
// Lstrip/rstrip of added tokens go to v.Strip.
func hfTypes(v *Vocab, hf *hfTokenizer, cfg *hfConfig, pads []int32) []TokenType {
	spm := v.Model == "llama"
	types := slices.Repeat([]TokenType{TypeNormal}, len(v.Tokens))
	for _, id := range pads {
		types[id] = TypeUnused
	}
	if spm {
		for i, t := range v.Tokens {
			if byteTokenRE.MatchString(t) {
				types[i] = TypeByte
			}
		}
	}
	special := map[string]bool{}
	for _, typ := range []string{"bos", "eos", "unk", "sep", "pad", "cls", "mask"} {
		if s := cfg.token(typ); s != "" {
			special[s] = true
		}
	}
	for _, raw := range cfg.Additional {
		special[hfTokenText(raw)] = true
	}
	for _, t := range hf.AddedTokens {
		_, inModel := hf.Model.Vocab[t.Content]
		switch {
		case types[t.ID] == TypeByte:
		case t.Special || special[t.Content] || !spm && hfLooksSpecial(t.Content):
			types[t.ID] = TypeControl
		case spm && inModel:
		case spm:
			types[t.ID] = TypeUserDefined
		default:
			types[t.ID] = TypeUserDefined
			v.Tokens[t.ID] = strings.ReplaceAll(t.Content, "\u2581", " ")
		}
		if t.LStrip || t.RStrip {
			if v.Strip == nil {
				v.Strip = make([]Strip, len(v.Tokens))
			}
			if t.LStrip {
				v.Strip[t.ID] |= StripLeft
			}
			if t.RStrip {
				v.Strip[t.ID] |= StripRight
			}
		}
	}
	return types
}

// hfLooksSpecial is convert_hf_to_gguf.py's does_token_look_special.
func hfLooksSpecial(t string) bool {
	has := func(pre, suf string) bool { return strings.HasPrefix(t, pre) && strings.HasSuffix(t, suf) }
	return slices.Contains([]string{"<pad>", "<mask>", "<2mass>", "[@BOS@]"}, t) ||
		has("<|", "|>") || has("<\uFF5C", "\uFF5C>") || has("<unused", ">")
}

// hfSpecials sets the special ids and AddBOS/AddEOS as gguf-py's
// SpecialVocab reads them; v.AddBOS holds llama.cpp's default on entry.
func hfSpecials(v *Vocab, hf *hfTokenizer, cfg *hfConfig) {
	added := map[string]int32{}
	for _, t := range slices.Backward(hf.AddedTokens) { // the first one with a text wins
		added[t.Content] = t.ID
	}
	bos, eos := cfg.token("bos"), cfg.token("eos")
	if bos == "" {
		bos = cfg.token("cls")
	}
	if eos == "" {
		eos = cfg.token("sep")
	}
	var addBOS, addEOS *bool
	for _, p := range hf.PostProcessor.flatten() {
		switch p.Type {
		case "RobertaProcessing":
			addBOS, addEOS = ptr(true), ptr(true)
		case "TemplateProcessing":
			if len(p.Single) > 1 {
				if first := p.Single[0].SpecialToken; first != nil {
					if tokenizerConfigMissing(cfg) {
						bos = first.ID
					}
					addBOS = ptr(first.ID == bos || first.ID == cfg.token("cls"))
				}
				if last := p.Single[len(p.Single)-1].SpecialToken; last != nil {
					if tokenizerConfigMissing(cfg) {
						eos = last.ID
					}
					addEOS = ptr(last.ID == eos)
				}
			}
		}
	}
	if cfg.AddBOS != nil {
		addBOS = cfg.AddBOS
	}
	if cfg.AddEOS != nil {
		addEOS = cfg.AddEOS
	}
	if !tokenizerConfigMissing(cfg) { // SpecialVocab sets ids only from tokenizer_config.json
		set := func(dst *int32, text string) {
			if id, ok := added[text]; ok && text != "" {
				*dst = id
			}
		}
		set(&v.BOS, bos)
		set(&v.EOS, eos)
		set(&v.UNK, cfg.token("unk"))
		set(&v.SEP, cfg.token("sep"))
		set(&v.PAD, cfg.token("pad"))
		set(&v.MASK, cfg.token("mask"))
	}
	if addBOS == nil {
		addBOS = &v.AddBOS
	}
	v.AddBOS = *addBOS && v.BOS >= 0
	v.AddEOS = addEOS != nil && *addEOS && v.EOS >= 0
}

func tokenizerConfigMissing(cfg *hfConfig) bool { return cfg.Tokens == nil }
