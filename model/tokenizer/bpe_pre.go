package tokenizer

import (
	"fmt"

	"github.com/dlclark/regexp2"
)

// The pre-tokenizer of each tokenizer.ggml.pre, as llama.cpp's
// llm_tokenizer_bpe lists it: regexes applied one after another, each cutting
// the pieces the previous ones left. The GPT-2 and Llama 3 patterns run as
// hand-written splitters (bpe_split.go); the others run through regexp2 the
// way llama.cpp runs them through std::regex (see regexSplit).

const (
	gpt2Pattern   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`
	llama3Pattern = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// llama3HFPattern is Llama 3's regex as tokenizer.json writes it.
	llama3HFPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Pattern    = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// qwen2HFPattern is Qwen2's regex as tokenizer.json writes it.
	qwen2HFPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

	// deepseekLetters is DeepSeek LLM's cased-letter class, written with
	// escapes: several of its code points (U+1F7D, U+1FBE, U+2126, U+212A...)
	// would not survive Unicode normalization of the source.
	deepseekLetters = "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF" +
		"\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481" +
		"\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B" +
		"\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D" +
		"\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC" +
		"\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D" +
		"\u212F-\u2134\u2139\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3" +
		"\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17" +
		"\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3\U000104D8-\U000104FB\U00010C80-\U00010CB2" +
		"\U00010CC0-\U00010CF2\U000118A0-\U000118DF\U0001E900-\U0001E943]+"
	tekkenPattern = `[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	gpt4oPattern  = `[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	cjkPattern    = "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+"
)

// bpePrePatterns returns the regexes llama.cpp uses for pre-tokenizer name
// pre; a name it does not know gets its "default" list, as in llama.cpp.
func bpePrePatterns(pre string) []string {
	switch pre {
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "dbrx", "smaug-bpe",
		"glm4", "chatglm-bpe":
		return []string{llama3Pattern}
	case "qwen2", "deepseek-r1-qwen", "kormo", "megrez", "stablelm2", "hunyuan", "grok-2":
		return []string{qwen2Pattern}
	case "deepseek-llm":
		return []string{"[\r\n]", deepseekLetters,
			"\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+", `\s+$`, cjkPattern, `\p{N}+`}
	case "deepseek-coder":
		return []string{"[\r\n]", `\s?\p{L}+`, `\s?\p{P}+`, cjkPattern, `\p{N}`}
	case "falcon":
		return []string{`[\p{P}\$\+<=>\^~\|` + "`" + `]+`, gpt2Pattern, `[0-9][0-9][0-9]`}
	case "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b":
		return []string{`\p{N}`, gpt2Pattern}
	case "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
		"jina-v1-en", "jina-v2-code", "roberta-bpe", "exaone4", "mpt", "olmo", "jais", "trillion", "granite-docling":
		return []string{gpt2Pattern}
	case "tekken":
		return []string{tekkenPattern}
	case "gpt-4o", "llama4", "minimax-m2":
		return []string{gpt4oPattern}
	case "chameleon":
		return []string{`<sentinel:[0-9]+>`, `(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z`, `([\t\n]|    |  )`, `\p{N}`,
			`[\p{P}!-/:-@\[-` + "`" + `{-~]`, gpt2Pattern}
	}
	return []string{`[\p{P}\$\+<=>\^~\|]+`, gpt2Pattern, `\p{N}+`, `[0-9][0-9][0-9]`}
}

// newSplitters compiles a pattern list as llama.cpp's unicode_regex_split
// would run it. unicodeRegex (tokenizer.json patterns llama.cpp has no name
// for) runs the patterns on the real code points, as Hugging Face does.
func newSplitters(patterns []string, unicodeRegex bool) ([]splitter, error) {
	out := make([]splitter, 0, len(patterns))
	for _, p := range patterns {
		switch {
		case p == gpt2Pattern:
			out = append(out, gpt2Split{})
		case p == llama3Pattern || p == llama3HFPattern:
			out = append(out, llama3Split{digits: 3})
		case p == qwen2Pattern || p == qwen2HFPattern:
			out = append(out, llama3Split{digits: 1})
		default:
			s := &regexSplit{mode: regexCodepoints}
			expr := p
			if unicodeRegex {
				s.mode = regexUnicode
			} else if usesCategories(p) {
				s.mode = regexCollapsed
				var err error
				if expr, err = collapseRegex(p); err != nil {
					return nil, err
				}
			}
			re, err := regexp2.Compile(ecmaEnd(expr), regexp2.None)
			if err != nil {
				return nil, fmt.Errorf("tokenizer: pre-tokenizer regex %q: %w", p, err)
			}
			s.re = re
			out = append(out, s)
		}
	}
	return out, nil
}
