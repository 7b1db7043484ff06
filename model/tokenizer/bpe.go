package tokenizer

import (
	"fmt"
	"strings"
)

// Byte-level BPE (tokenizer.ggml.model "gpt2"), as llama.cpp's
// llm_tokenizer_bpe_session does it: pre-tokenize into words, map each word's
// bytes to GPT-2's byte runes, then merge adjacent symbols lowest merge rank
// first (leftmost on ties). Tokens, merges and words are handled here as the
// raw bytes they stand for, which is the same thing one to one.

// bpePair is a merge: the raw bytes of its left and right halves.
type bpePair struct{ left, right string }

// bpeEncoder is immutable after newBPE; encode keeps its scratch per call.
type bpeEncoder struct {
	splitters    []splitter
	ids          map[string]int32  // raw bytes of each byte-level token → id (the last one, as llama.cpp's token_to_id)
	ranks        map[bpePair]int32 // merge → rank (the first one, as llama.cpp's bpe_ranks)
	byteIDs      [256]int32        // token whose stored text is this single byte, -1 if none (llama.cpp's fallback)
	ignoreMerges bool
}

// newBPE builds the byte-level BPE encoder of v.
func newBPE(v *Vocab) (fragmentEncoder, error) {
	e := &bpeEncoder{
		ids:          make(map[string]int32, len(v.Tokens)),
		ranks:        make(map[bpePair]int32, len(v.Merges)),
		ignoreMerges: v.IgnoreMerges,
	}
	for i := range e.byteIDs {
		e.byteIDs[i] = -1
	}
	for id, tok := range v.Tokens {
		if raw, ok := rawBPEText(tok); ok {
			e.ids[raw] = int32(id)
		}
		if len(tok) == 1 {
			e.byteIDs[tok[0]] = int32(id)
		}
	}
	for rank, m := range v.Merges {
		var first, second string
		if len(m) > 1 { // llama.cpp splits at the first space after the first byte
			if i := strings.IndexByte(m[1:], ' '); i >= 0 {
				first, second = m[:i+1], m[i+2:]
			}
		}
		l, okl := rawBPEText(first)
		r, okr := rawBPEText(second)
		if !okl || !okr {
			continue // halves that are not byte-level text never meet a word
		}
		if _, dup := e.ranks[bpePair{l, r}]; !dup {
			e.ranks[bpePair{l, r}] = int32(rank)
		}
	}
	patterns, unicodeRegex := bpePrePatterns(v.Pre), false
	if len(v.PreRegexes) > 0 {
		patterns, unicodeRegex = v.PreRegexes, true
	}
	var err error
	if e.splitters, err = newSplitters(patterns, unicodeRegex); err != nil {
		return nil, fmt.Errorf("tokenizer: pre-tokenizer %q: %w", v.Pre, err)
	}
	return e, nil
}

// encode appends the ids of text, which holds no special tokens.
func (e *bpeEncoder) encode(text string, out []int32) []int32 {
	if text == "" {
		return out
	}
	t := splitText{cpts: decodeCpts(text, make([]rune, 0, len(text)))}
	t.flags = make([]cptFlags, len(t.cpts))
	for i, r := range t.cpts {
		t.flags[i] = flagsOf(r)
	}
	segs := []int{len(t.cpts)}
	for _, s := range e.splitters {
		segs = s.split(&t, segs, make([]int, 0, len(segs)*2))
	}
	var (
		w   bpeWord
		buf []byte
		pos int
	)
	for _, n := range segs {
		buf = buf[:0]
		for _, r := range t.cpts[pos : pos+n] {
			buf = appendCpt(buf, r)
		}
		pos += n
		out = e.encodeWord(&w, string(buf), out)
	}
	return out
}

// bpeSymbol is a piece of the word being merged: word[start:start+n],
// linked to its neighbours; n == 0 once merged into its left neighbour.
type bpeSymbol struct {
	start, n   int32
	prev, next int32
}

// bpeBigram is a candidate merge of symbols left and right, valid while
// both still have the lengths they had when it was queued.
type bpeBigram struct {
	left, right int32
	nl, nr      int32
	rank        int32
}

// bpeWord is the scratch of one encode call.
type bpeWord struct {
	syms  []bpeSymbol
	queue []bpeBigram // min-heap on (rank, left)
}

func (e *bpeEncoder) encodeWord(w *bpeWord, word string, out []int32) []int32 {
	if word == "" {
		return out
	}
	if e.ignoreMerges {
		if id, ok := e.ids[word]; ok {
			return append(out, id)
		}
	}
	w.syms, w.queue = w.syms[:0], w.queue[:0]
	for i := range len(word) {
		w.syms = append(w.syms, bpeSymbol{start: int32(i), n: 1, prev: int32(i - 1), next: int32(i + 1)})
	}
	w.syms[len(word)-1].next = -1
	for i := 1; i < len(word); i++ {
		e.pushBigram(w, word, int32(i-1), int32(i))
	}
	for len(w.queue) > 0 {
		var b bpeBigram
		b, w.queue = heapPop(w.queue, bpeBigram.less)
		l, r := &w.syms[b.left], &w.syms[b.right]
		if l.n != b.nl || r.n != b.nr || l.n == 0 || r.n == 0 {
			continue // outdated
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			w.syms[r.next].prev = b.left
		}
		e.pushBigram(w, word, l.prev, b.left)
		e.pushBigram(w, word, b.left, l.next)
	}
	for i := int32(0); i >= 0 && int(i) < len(w.syms); i = w.syms[i].next {
		s := w.syms[i]
		piece := word[s.start : s.start+s.n]
		if id, ok := e.ids[piece]; ok {
			out = append(out, id)
			continue
		}
		// No such token: llama.cpp looks up each byte of the piece's
		// byte-level text on its own.
		for j := range len(piece) {
			var enc [4]byte
			for _, c := range appendCpt(enc[:0], byteRunes[piece[j]]) {
				if id := e.byteIDs[c]; id >= 0 {
					out = append(out, id)
				}
			}
		}
	}
	return out
}

func (e *bpeEncoder) pushBigram(w *bpeWord, word string, left, right int32) {
	if left < 0 || right < 0 {
		return
	}
	l, r := w.syms[left], w.syms[right]
	rank, ok := e.ranks[bpePair{word[l.start : l.start+l.n], word[r.start : r.start+r.n]}]
	if !ok {
		return
	}
	w.queue = heapPush(w.queue, bpeBigram{left: left, right: right, nl: l.n, nr: r.n, rank: rank}, bpeBigram.less)
}

func (a bpeBigram) less(b bpeBigram) bool {
	return a.rank < b.rank || a.rank == b.rank && a.left < b.left
}
