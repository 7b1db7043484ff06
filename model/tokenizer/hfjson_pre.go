package tokenizer

import (
	"fmt"
	"slices"

	"github.com/dlclark/regexp2"
)

// gpt2HFPattern is the regex of a ByteLevel pre-tokenizer with use_regex.
const gpt2HFPattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// gpt4oHFPattern is o200k's regex as its tokenizer.json writes it (GPT-4o,
// gpt-oss), in a Split that keeps the matches and removes what lies between
// them (behavior Removed, invert true): the pattern matches every
// character, so that is the usual split.
const gpt4oHFPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// hfBytePre sets v.Pre (or v.PreRegexes) from a byte-level pre-tokenizer:
// its Split, Digits and ByteLevel steps, in order, become a regex list, which
// is named when it is one llama.cpp knows.
func hfBytePre(v *Vocab, pre *hfComponent) error {
	var patterns []string
	for _, p := range pre.flatten() {
		switch p.Type {
		case "Sequence":
		case "Split":
			isolated := !p.Invert && p.Behavior == "Isolated"
			o200k := p.Invert && p.Behavior == "Removed" && p.Pattern.Regex != nil && *p.Pattern.Regex == gpt4oHFPattern
			if !isolated && !o200k {
				return fmt.Errorf("tokenizer.json: Split with behavior %q, invert %v: %w", p.Behavior, p.Invert, ErrUnsupported)
			}
			switch {
			case p.Pattern.Regex != nil:
				patterns = append(patterns, *p.Pattern.Regex)
			case p.Pattern.String != nil:
				patterns = append(patterns, regexp2.Escape(*p.Pattern.String))
			}
		case "Digits":
			if p.IndividualDigits {
				patterns = append(patterns, `\p{N}`)
			} else {
				patterns = append(patterns, `\p{N}+`)
			}
		case "ByteLevel":
			if p.UseRegex == nil || *p.UseRegex {
				patterns = append(patterns, gpt2HFPattern)
			}
		default:
			return fmt.Errorf("tokenizer.json: pre-tokenizer %q: %w", p.Type, ErrUnsupported)
		}
	}
	switch {
	case slices.Equal(patterns, []string{llama3HFPattern}):
		v.Pre = "llama-bpe"
	case slices.Equal(patterns, []string{qwen2HFPattern}):
		v.Pre = "qwen2"
	case slices.Equal(patterns, []string{gpt2HFPattern}):
		v.Pre = "gpt-2"
	case slices.Equal(patterns, []string{gpt4oHFPattern}):
		v.Pre = "gpt-4o" // llama.cpp's form of the pattern, as for Llama 3's and Qwen2's
	case slices.Equal(patterns, []string{`\p{N}`, gpt2HFPattern}):
		v.Pre = "starcoder"
	case len(patterns) == 0:
		v.Pre, v.PreRegexes = "default", []string{`[\s\S]+`} // no pre-tokenization: the text is one word
	default:
		v.Pre, v.PreRegexes = "default", patterns
		for _, p := range patterns {
			if _, err := regexp2.Compile(p, regexp2.None); err != nil {
				return fmt.Errorf("tokenizer.json: pre-tokenizer regex %q: %w", p, err)
			}
		}
	}
	return nil
}
