package spec

import "slices"

// NGram proposes by prompt lookup (vLLM's ngram proposer, llama.cpp's
// ngram-simple): it finds the latest earlier occurrence, in the prompt and
// the generated tokens, of the sequence's last n tokens, for n from MaxN
// down to MinN, and proposes the tokens that followed it. Text that quotes
// or edits its prompt, code and lists repeat themselves, and are where it
// is right.
type NGram struct {
	MinN, MaxN int // lengths of the suffix matched; see WithDefaults
}

// Default suffix lengths (vLLM's prompt_lookup_min and prompt_lookup_max
// are 1 and 5 in its examples; a 1-token match proposes too eagerly on
// short vocabularies, so 2).
const (
	DefaultMinN = 2
	DefaultMaxN = 4
)

// WithDefaults returns g with its zero fields set: MinN 2, MaxN 4 (at least
// MinN).
func (g NGram) WithDefaults() NGram {
	if g.MinN <= 0 {
		g.MinN = DefaultMinN
	}
	if g.MaxN <= 0 {
		g.MaxN = DefaultMaxN
	}
	g.MaxN = max(g.MaxN, g.MinN)
	return g
}

// Propose appends to dst k tokens to follow tokens (the prompt and the
// tokens generated so far) and returns it: the continuation of the latest
// earlier match of the longest suffix of tokens that has one (repeating
// with the match's period where it reaches the end). It appends nothing
// when no suffix of MinN or more tokens occurred before.
func (g NGram) Propose(dst, tokens []int32, k int) []int32 {
	g = g.WithDefaults()
	if k <= 0 {
		return dst
	}
	for n := min(g.MaxN, len(tokens)-1); n >= g.MinN; n-- {
		suffix := tokens[len(tokens)-n:]
		// The match ends before the suffix's own last token, so at least
		// one token follows it.
		for i := len(tokens) - n - 1; i >= 0; i-- {
			if tokens[i+n-1] == suffix[n-1] && slices.Equal(tokens[i:i+n], suffix) {
				return appendContinuation(dst, tokens, i+n, k)
			}
		}
	}
	return dst
}

// appendContinuation appends k tokens from tokens[from:] to dst. Where
// they run past the end of tokens, the text is repeating with period
// len(tokens)-from (its suffix occurred that far back), so the proposal
// goes on repeating it: its own tokens continue it.
func appendContinuation(dst, tokens []int32, from, k int) []int32 {
	start := len(dst)
	for j := range k {
		if src := from + j; src < len(tokens) {
			dst = append(dst, tokens[src])
		} else {
			dst = append(dst, dst[start+src-len(tokens)])
		}
	}
	return dst
}
