package sample

import "slices"

// ReasoningBudget bounds the reasoning sections of one sequence's output,
// as llama.cpp's reasoning budget sampler (common/reasoning-budget.cpp,
// llama-server's reasoning_budget_tokens): a section opens with a start
// sequence of tokens (<think>) and closes with an end sequence (</think>).
// Once a section holds Budget tokens, and the last of them completes a
// UTF-8 character, the forced tokens (an optional message, then the first
// end sequence) are forced one per step; a new start sequence after that
// opens a new section with a fresh budget.
//
// It is the sequence's state, driven by the tokens it accepts: Forced
// tells what the next token must be. Not safe for concurrent use.
type ReasoningBudget struct {
	start, end tokenMatcher
	forced     []int32
	budget     int
	remaining  int
	state      budgetState
	forcePos   int
	complete   func(id int32) bool
}

type budgetState int

const (
	budgetIdle        budgetState = iota // outside a section: watching for a start sequence
	budgetCounting                       // inside one: counting its tokens, watching for an end sequence
	budgetWaitingUTF8                    // the budget is spent: waiting for a character to complete
	budgetForcing                        // forcing the forced tokens
	budgetDone                           // closed: watching for a new start sequence
)

// NewReasoningBudget returns the budget of budget tokens (0: a section is
// closed as soon as it opens) for sections opened by any of starts and
// closed by any of ends, forcing forced (a message and ends[0]) when the
// budget is spent. complete reports whether a token's text ends with a
// whole UTF-8 character (nil: every token does). Empty sequences are
// ignored.
func NewReasoningBudget(starts, ends [][]int32, forced []int32, budget int, complete func(id int32) bool) *ReasoningBudget {
	if complete == nil {
		complete = func(int32) bool { return true }
	}
	return &ReasoningBudget{start: newTokenMatcher(starts), end: newTokenMatcher(ends), forced: slices.Clone(forced),
		budget: budget, remaining: budget, complete: complete}
}

// Prefill accepts the prompt's open reasoning section, if it has one: the
// tokens from its last start sequence on, when no end sequence follows it
// (a template that opens the section for the model, as llama.cpp's
// generation prompt does). Tokens of the prompt after the start count.
func (b *ReasoningBudget) Prefill(prompt []int32) {
	from := -1
	start, end := tokenMatcher{seqs: b.start.seqs}, tokenMatcher{seqs: b.end.seqs}
	for i, tok := range prompt {
		if n := start.advance(tok); n > 0 {
			from = i + 1 - n
			end.reset()
		} else if end.advance(tok) > 0 {
			from = -1
		}
	}
	if from < 0 {
		return
	}
	for _, tok := range prompt[from:] {
		b.Accept(tok)
	}
}

// Forced returns the token the next sample must be, when the budget is
// forcing the end of a section.
func (b *ReasoningBudget) Forced() (int32, bool) {
	if b.state != budgetForcing || b.forcePos >= len(b.forced) {
		return 0, false
	}
	return b.forced[b.forcePos], true
}

// Accept advances the budget past one token of the sequence.
func (b *ReasoningBudget) Accept(tok int32) {
	switch b.state {
	case budgetIdle, budgetDone:
		if b.start.advance(tok) > 0 {
			b.state, b.remaining = budgetCounting, b.budget
			b.end.reset()
			if b.remaining <= 0 {
				b.force()
			}
		}
	case budgetCounting, budgetWaitingUTF8:
		if b.end.advance(tok) > 0 {
			b.state = budgetDone
			return
		}
		complete := b.complete(tok)
		if b.state == budgetWaitingUTF8 {
			if complete {
				b.force()
			}
			return
		}
		if b.remaining--; b.remaining <= 0 {
			b.end.reset()
			if complete {
				b.force()
			} else {
				b.state = budgetWaitingUTF8
			}
		}
	case budgetForcing:
		b.end.advance(tok)
		if b.forcePos++; b.forcePos >= len(b.forced) {
			b.state = budgetDone
		}
	}
}

func (b *ReasoningBudget) force() {
	b.state, b.forcePos = budgetForcing, 0
	b.end.reset()
	if len(b.forced) == 0 {
		b.state = budgetDone
	}
}

// tokenMatcher finds token sequences in a stream, as llama.cpp's
// Aho-Corasick token_matcher: advance reports the length of the longest
// sequence ending at the token (0: none), and a match starts the search
// over.
type tokenMatcher struct {
	seqs [][]int32
	tail []int32 // the tokens since the last match, at most the longest sequence
}

func newTokenMatcher(seqs [][]int32) tokenMatcher {
	var m tokenMatcher
	for _, s := range seqs {
		if len(s) > 0 && !slices.ContainsFunc(m.seqs, func(t []int32) bool { return slices.Equal(s, t) }) {
			m.seqs = append(m.seqs, slices.Clone(s))
		}
	}
	return m
}

func (m *tokenMatcher) reset() { m.tail = m.tail[:0] }

func (m *tokenMatcher) advance(tok int32) int {
	longest := 0
	for _, s := range m.seqs {
		longest = max(longest, len(s))
	}
	if longest == 0 {
		return 0
	}
	if len(m.tail) == longest {
		m.tail = append(m.tail[:0], m.tail[1:]...)
	}
	m.tail = append(m.tail, tok)
	n := 0
	for _, s := range m.seqs {
		if len(s) > n && len(s) <= len(m.tail) && slices.Equal(s, m.tail[len(m.tail)-len(s):]) {
			n = len(s)
		}
	}
	if n > 0 {
		m.reset()
	}
	return n
}
