package tokenizer

import (
	"slices"
	"strings"
)

// Token texts llama.cpp's load recognises (its "auto-detect special tokens by
// text" workaround), copied from src/llama-vocab.cpp.
var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
		"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	eomTexts    = []string{"<|eom_id|>"}
	fimPreTexts = []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"}
	fimSufTexts = []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"}
	fimMidTexts = []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}
	fimPadTexts = []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}
	fimRepTexts = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}
	fimSepTexts = []string{"<|file_sep|>"}
	eogTexts    = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
		"<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]",
		"[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
		"<｜end▁of▁sentence｜>", "[e~["}
	alwaysRendered = []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"} // gpt-oss
)

// metadata is the part of a GGUF file's key lookup the vocabulary needs.
type metadata interface {
	Uint(key string) (uint64, bool)
	String(key string) (string, bool)
}

// noMetadata has no keys: a tokenizer.json's vocabulary is read as a GGUF
// file without tokenizer keys would be.
type noMetadata struct{}

func (noMetadata) Uint(string) (uint64, bool)   { return 0, false }
func (noMetadata) String(string) (string, bool) { return "", false }

// detectSpecialTokens finishes FromGGUF as llama.cpp's load does: it finds
// EOT, EOM and the FIM tokens by their text when no key names them, makes
// every token it recognises a control token, builds the EOG set, and sets
// the per-model strip attributes.
//
// llama.cpp walks an unordered map, so when several texts qualify for EOT it
// is unspecified which wins; here the lowest id does.
//
// meta is the GGUF file's metadata (noMetadata for a tokenizer.json).
func detectSpecialTokens(meta metadata, v *Vocab) {
	n := len(v.Tokens)
	if v.Types == nil {
		v.Types = slices.Repeat([]TokenType{TypeNormal}, n)
	}
	setControl := func(id int32) { v.Types[id] = TypeControl }
	var fimPre, fimSuf, fimMid, fimPad, fimRep, fimSep int32 = -1, -1, -1, -1, -1, -1
	for _, k := range []struct {
		keys []string // later keys win, as in llama.cpp (the deprecated names come last)
		id   *int32
	}{
		{[]string{"fim_pre", "prefix"}, &fimPre}, {[]string{"fim_suf", "suffix"}, &fimSuf},
		{[]string{"fim_mid", "middle"}, &fimMid}, {[]string{"fim_pad"}, &fimPad},
		{[]string{"fim_rep"}, &fimRep}, {[]string{"fim_sep"}, &fimSep},
	} {
		for _, key := range k.keys {
			if id, ok := meta.Uint("tokenizer.ggml." + key + "_token_id"); ok && id < uint64(n) {
				*k.id = int32(id)
			}
		}
	}
	byText := []struct {
		id    *int32
		texts []string
	}{
		{&v.EOT, eotTexts}, {&v.EOM, eomTexts}, {&fimPre, fimPreTexts}, {&fimSuf, fimSufTexts},
		{&fimMid, fimMidTexts}, {&fimPad, fimPadTexts}, {&fimRep, fimRepTexts}, {&fimSep, fimSepTexts},
	}
	for i, text := range v.Tokens {
		for _, d := range byText {
			if *d.id < 0 && slices.Contains(d.texts, text) {
				*d.id = int32(i)
				setControl(int32(i))
			}
		}
	}

	v.FIM = FIMTokens{Pre: fimPre, Suf: fimSuf, Mid: fimMid, Pad: fimPad, Rep: fimRep, Sep: fimSep, Set: true}
	eog := map[int32]bool{}
	for _, id := range []int32{fimPad, fimRep, fimSep} {
		if id >= 0 {
			eog[id] = true
		}
	}
	for i, text := range v.Tokens {
		if slices.Contains(eogTexts, text) {
			eog[int32(i)] = true
			setControl(int32(i))
		}
	}
	for i, text := range v.Tokens {
		if slices.Contains(alwaysRendered, text) {
			v.Types[i] = TypeUserDefined
		}
	}
	for _, id := range []int32{v.EOS, v.EOT, v.EOM} {
		if id >= 0 {
			eog[id] = true
		}
	}
	// gpt-oss and solar-open: <|end|> ends a message, not the generation.
	has := map[string]int32{}
	for id := range eog {
		has[v.Tokens[id]] = id
	}
	_, ret := has["<|return|>"]
	_, call := has["<|call|>"]
	_, calls := has["<|calls|>"]
	_, flush := has["<|flush|>"]
	if end, ok := has["<|end|>"]; ok && ((ret && (call || calls)) || ((call || calls) && flush)) {
		delete(eog, end)
		v.Types[end] = TypeUserDefined
	}
	// Gemma 4: </s> is an ordinary token.
	if s, ok := has["</s>"]; ok {
		if _, tool := has["<|tool_response>"]; tool {
			delete(eog, s)
			v.Types[s] = TypeNormal
		}
	}
	v.EOG = v.EOG[:0]
	for id := range eog {
		v.EOG = append(v.EOG, id)
	}
	slices.Sort(v.EOG)
	setStripAttrs(meta, v)
}

// setStripAttrs applies llama.cpp's per-model LSTRIP/RSTRIP attributes.
func setStripAttrs(meta metadata, v *Vocab) {
	name, _ := meta.String("general.name")
	name = strings.ToLower(name)
	arch, _ := meta.String("general.architecture")
	containsAny := func(s string, subs ...string) bool {
		return slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(s, sub) })
	}
	set := func(text string, s Strip, on bool) {
		i := slices.Index(v.Tokens, text)
		if i < 0 {
			return
		}
		if v.Strip == nil {
			v.Strip = make([]Strip, len(v.Tokens))
		}
		if on {
			v.Strip[i] |= s
		} else {
			v.Strip[i] &^= s
		}
	}
	switch {
	case containsAny(v.Pre, "jina-v2-de", "jina-v2-es", "jina-v2-code") || containsAny(arch, "nomic-bert-moe", "jina-bert-v3"):
		set("<mask>", StripLeft, true)
	case containsAny(name, "phi-3", "phi3"):
		for i, typ := range v.Types {
			if typ == TypeControl || typ == TypeUserDefined || typ == TypeUnknown {
				set(v.Tokens[i], StripRight, true)
			}
		}
		set("</s>", StripRight, true)
		for _, text := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			set(text, StripRight, false)
		}
	case containsAny(name, "modern-bert"):
		set("[MASK]", StripLeft, true)
	}
}
