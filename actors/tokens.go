package actors

import (
	"fmt"

	"github.com/troupe-llm/troupe/model/tokenizer"
)

// The model facts and tokenizer services a front end needs, so that it does
// not import package model (see the package graph in DESIGN.md).

// VocabSize is the model's vocabulary size.
func (r *Runtime) VocabSize() int { return r.model.Config.VocabSize }

// MaxModelLen is the positions a sequence may use (prompt and output).
func (r *Runtime) MaxModelLen() int { return r.cfg.MaxModelLen }

// ChatTemplate is the Jinja chat template shipped with the model, "" if none.
func (r *Runtime) ChatTemplate() string { return r.tok.Vocab().ChatTemplate }

// SpecialTokens returns the text of the BOS and EOS tokens ("" when the
// vocabulary has none), for chat templates.
func (r *Runtime) SpecialTokens() (bos, eos string) {
	return string(r.tok.TokenPiece(r.tok.BOS(), true)), string(r.tok.TokenPiece(r.tok.EOS(), true))
}

// TokenizeText encodes text; addSpecial adds BOS (and the like) as the
// vocabulary asks, parseSpecial turns special-token text into those tokens.
func (r *Runtime) TokenizeText(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	return r.tok.Encode(text, addSpecial, parseSpecial)
}

// Detokenize turns ids back into text (special tokens rendered as their
// text). An id outside the vocabulary is an error wrapping ErrInvalidRequest.
func (r *Runtime) Detokenize(ids []int32) (string, error) {
	for i, id := range ids {
		if id < 0 || int(id) >= r.VocabSize() {
			return "", fmt.Errorf("%w: token %d: id %d is outside the vocabulary (%d)", ErrInvalidRequest, i, id, r.VocabSize())
		}
	}
	return r.tok.Detokenize(ids, false, true), nil
}

// TokenBytes returns the bytes token id stands for, special tokens as their
// text (for logprobs, which report each token's text and bytes).
func (r *Runtime) TokenBytes(id int32) []byte { return r.tok.TokenPiece(id, true) }

// NumRequests is the number of requests in flight (admitted, not yet done).
func (r *Runtime) NumRequests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.requests)
}

// MaxTokenBytes bounds the bytes of text one token can stand for, so that a
// text of n bytes (whitespace aside: special tokens may swallow it, and
// some vocabularies collapse it) becomes at least n / MaxTokenBytes tokens.
// 0: there is no such bound (WordPiece drops and folds characters; a
// SentencePiece vocabulary with neither byte tokens nor UNK drops unknown
// characters).
func (r *Runtime) MaxTokenBytes() int {
	v := r.tok.Vocab()
	if v.Model != "llama" && v.Model != "gpt2" {
		return 0
	}
	longest, bytes := 4, 0 // an unknown character (up to 4 bytes) may become one UNK
	for id, text := range v.Tokens {
		longest = max(longest, len(text), len(r.tok.TokenPiece(int32(id), true)))
		if v.Types != nil && v.Types[id] == tokenizer.TypeByte {
			bytes++
		}
	}
	if v.Model == "llama" && v.UNK < 0 && bytes < 256 {
		return 0
	}
	return longest
}

// FIMTokens are a vocabulary's fill-in-the-middle tokens: model/tokenizer's,
// copied into a type of this package so that front ends name no type of
// package model (internal/depgraph checks the server for that). An id is -1
// when the vocabulary lacks the token.
type FIMTokens struct {
	Pre, Suf, Mid, Pad, Rep, Sep int32
	// Set is true once the ids were looked for (by the vocabulary's loader).
	Set bool
}

// Infill reports whether the vocabulary can fill in the middle: it has the
// prefix, suffix and middle tokens.
func (f FIMTokens) Infill() bool { return f.Set && f.Pre >= 0 && f.Suf >= 0 && f.Mid >= 0 }

// FIMTokens returns the vocabulary's fill-in-the-middle tokens.
func (r *Runtime) FIMTokens() FIMTokens { return FIMTokens(r.tok.Vocab().FIM) }

// PrependsBOS returns the BOS token when the vocabulary prepends it to a
// prompt encoded with special tokens, -1 otherwise.
func (r *Runtime) PrependsBOS() int32 {
	if v := r.tok.Vocab(); v.AddBOS && v.BOS >= 0 {
		return v.BOS
	}
	return -1
}
