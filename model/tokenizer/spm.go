package tokenizer

import "fmt"

// SentencePiece BPE (tokenizer.ggml.model "llama"), as llama.cpp's
// llm_tokenizer_spm_session does it: split the text into UTF-8 characters,
// then repeatedly merge the adjacent pair whose concatenation is the
// highest-scoring token (leftmost on ties); a final symbol that is not a
// token falls back to its bytes' <0xNN> tokens.
//
// Where llama.cpp aborts (a character that is no token, in a vocabulary
// without byte tokens, as in TinyStories-656K), troupe emits UNK instead: one
// per such character.

// spmSpace is SentencePiece's escaped space, U+2581 (▁).
const spmSpace = "\u2581"

// spmEncoder is immutable after newSPM.
type spmEncoder struct {
	ids     map[string]int32
	scores  []float32  // nil: all 0
	byteIDs [256]int32 // llama.cpp's byte_to_token: <0xNN>, else the one-byte token, else -1
	unk     int32
}

func newSPM(t *Tokenizer) *spmEncoder {
	e := &spmEncoder{ids: t.ids, scores: t.v.Scores, unk: t.v.UNK}
	for b := range e.byteIDs {
		id, ok := t.ids[fmt.Sprintf("<0x%02X>", b)]
		if !ok {
			if id, ok = t.ids[string([]byte{byte(b)})]; !ok {
				id = -1
			}
		}
		e.byteIDs[b] = id
	}
	return e
}

// spmSymbol is a run of text[start:start+n], linked to its live neighbours;
// n is 0 once merged into its left neighbour.
type spmSymbol struct {
	prev, next int32
	start, n   int
}

// spmBigram is a candidate merge of symbols left and right.
type spmBigram struct {
	left, right int32
	score       float32
	size        int // bytes of the merged text when the candidate was made
}

// before is the priority order: higher score first, then leftmost.
func (a spmBigram) before(b spmBigram) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

type spmSession struct {
	e     *spmEncoder
	text  string
	syms  []spmSymbol
	queue []spmBigram // binary heap ordered by before
}

// encode appends the ids of text, whose spaces are already escaped.
func (e *spmEncoder) encode(text string, out []int32) []int32 {
	if text == "" {
		return out
	}
	s := spmSession{e: e, text: text, syms: make([]spmSymbol, 0, len(text))}
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		i := int32(len(s.syms))
		next := i + 1
		if off+n == len(text) {
			next = -1
		}
		s.syms = append(s.syms, spmSymbol{prev: i - 1, next: next, start: off, n: n})
		off += n
	}
	for i := 1; i < len(s.syms); i++ {
		s.tryAdd(int32(i-1), int32(i))
	}
	for len(s.queue) > 0 {
		var b spmBigram
		b, s.queue = heapPop(s.queue, spmBigram.before)
		l, r := &s.syms[b.left], &s.syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue // stale: one side has merged since
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			s.syms[r.next].prev = b.left
		}
		s.tryAdd(l.prev, b.left)
		s.tryAdd(b.left, l.next)
	}
	for i := int32(0); i != -1; i = s.syms[i].next {
		sym := s.syms[i]
		out = e.resegment(text[sym.start:sym.start+sym.n], out)
	}
	return out
}

// resegment appends the id of a final symbol, or its byte fallback.
func (e *spmEncoder) resegment(sym string, out []int32) []int32 {
	if id, ok := e.ids[sym]; ok {
		return append(out, id)
	}
	for i := 0; i < len(sym); i++ {
		if e.byteIDs[sym[i]] < 0 {
			if e.unk >= 0 {
				out = append(out, e.unk)
			}
			return out
		}
	}
	for i := 0; i < len(sym); i++ {
		out = append(out, e.byteIDs[sym[i]])
	}
	return out
}

func (s *spmSession) tryAdd(left, right int32) {
	if left < 0 || right < 0 {
		return
	}
	l, r := s.syms[left], s.syms[right]
	merged := s.text[l.start : l.start+l.n+r.n]
	id, ok := s.e.ids[merged]
	if !ok {
		return
	}
	var score float32
	if s.e.scores != nil {
		score = s.e.scores[id]
	}
	s.queue = heapPush(s.queue, spmBigram{left: left, right: right, score: score, size: len(merged)}, spmBigram.before)
}

// utf8Len is llama.cpp's unicode_len_utf8: the sequence length announced by
// a lead byte, 1 for a continuation or invalid byte.
func utf8Len(b byte) int {
	switch {
	case b < 0xC0:
		return 1
	case b < 0xE0:
		return 2
	case b < 0xF0:
		return 3
	default:
		return 4
	}
}
