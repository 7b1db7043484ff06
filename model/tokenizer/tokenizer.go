package tokenizer

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnsupported is wrapped by New for a vocabulary family troupe cannot
// tokenize (llama.cpp's UGM, RWKV, PLaMo-2, ...).
var ErrUnsupported = errors.New("unsupported tokenizer")

// fragmentEncoder turns a fragment of raw text (no special tokens in it) into
// ids, appending to out. Implementations are immutable and safe for
// concurrent use; per-call scratch lives on the stack of encode.
type fragmentEncoder interface {
	encode(text string, out []int32) []int32
}

// Tokenizer encodes text to token ids and back, as llama.cpp's llama_vocab
// does. It is immutable after New and safe for concurrent use.
type Tokenizer struct {
	v       *Vocab
	kind    kind
	enc     fragmentEncoder
	ids     map[string]int32 // token text → id
	special []int32          // control, user-defined and unknown tokens, longest text first (cache_special_tokens)
	pieces  [][]byte         // (n_vocab) token_to_piece(special=true)
	types   []TokenType      // (n_vocab) never nil
	eog     map[int32]bool
}

// kind is the tokenizer family: llama.cpp's llama_vocab_type.
type kind int

const (
	kindSPM kind = iota // "llama": SentencePiece
	kindBPE             // "gpt2": byte-level BPE
	kindWPM             // "bert": WordPiece
)

// New builds a Tokenizer from v. v must not be changed afterwards.
func New(v *Vocab) (*Tokenizer, error) {
	if len(v.Tokens) == 0 {
		return nil, errors.New("tokenizer: vocabulary has no tokens")
	}
	n := len(v.Tokens)
	if v.Scores != nil && len(v.Scores) < n {
		return nil, fmt.Errorf("tokenizer: %d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) < n {
		return nil, fmt.Errorf("tokenizer: %d token types for %d tokens", len(v.Types), n)
	}
	t := &Tokenizer{v: v, ids: make(map[string]int32, n), eog: map[int32]bool{}}
	for id, text := range v.Tokens {
		if prev, dup := t.ids[text]; dup {
			return nil, fmt.Errorf("tokenizer: duplicate token %q has ids %d and %d", text, prev, id)
		}
		t.ids[text] = int32(id)
	}
	t.types = make([]TokenType, n)
	for id := range t.types {
		t.types[id] = TypeNormal
		if v.Types != nil {
			t.types[id] = v.Types[id]
		}
	}
	for _, id := range []int32{v.BOS, v.EOS, v.UNK, v.SEP} {
		if id < -1 || int(id) >= n {
			return nil, fmt.Errorf("tokenizer: special token id %d outside the vocabulary (%d tokens)", id, n)
		}
	}
	if v.AddBOS && v.BOS < 0 {
		return nil, errors.New("tokenizer: add_bos_token is set but the vocabulary has no BOS")
	}
	if v.AddEOS && v.EOS < 0 {
		return nil, errors.New("tokenizer: add_eos_token is set but the vocabulary has no EOS")
	}
	var err error
	switch v.Model {
	case "llama":
		t.kind, t.enc = kindSPM, newSPM(t)
	case "gpt2":
		t.kind = kindBPE
		if t.enc, err = newBPE(v); err != nil {
			return nil, err
		}
	case "bert":
		t.kind, t.enc = kindWPM, newWPM(t)
	default:
		return nil, fmt.Errorf("tokenizer: model %q: %w", v.Model, ErrUnsupported)
	}
	for id, typ := range t.types {
		if typ == TypeControl || typ == TypeUserDefined || typ == TypeUnknown {
			t.special = append(t.special, int32(id))
		}
	}
	// llama.cpp sorts by length only (unstable); ties go to the lower id here.
	slices.SortStableFunc(t.special, func(a, b int32) int {
		return cmp.Compare(len(v.Tokens[b]), len(v.Tokens[a]))
	})
	t.pieces = make([][]byte, n)
	for id := range t.pieces {
		t.pieces[id] = t.piece(int32(id))
	}
	for _, id := range v.EOG {
		t.eog[id] = true
	}
	return t, nil
}

// Encode tokenizes text as llama_tokenize does. addSpecial adds the
// vocabulary's BOS/EOS (CLS/SEP for WordPiece); parseSpecial lets control
// tokens written in the text (such as "<|im_end|>") become those tokens.
// User-defined tokens are always matched.
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	v := t.v
	var out []int32
	frags := t.partition(text, parseSpecial)
	switch t.kind {
	case kindSPM:
		if addSpecial && v.AddBOS {
			out = append(out, v.BOS)
		}
		prevSpecial := true // the first raw fragment, and any after a special token, gets the space prefix
		for _, f := range frags {
			if f.id >= 0 {
				out = append(out, f.id)
				prevSpecial = true
				continue
			}
			s := text[f.start:f.end]
			if v.AddSpacePrefix && prevSpecial {
				s = " " + s
			}
			out = t.enc.encode(strings.ReplaceAll(s, " ", spmSpace), out)
			prevSpecial = false
		}
		if addSpecial && v.AddEOS {
			out = append(out, v.EOS)
		}
	case kindWPM:
		if addSpecial && v.BOS >= 0 {
			out = append(out, v.BOS)
		}
		out = t.encodeFragments(text, frags, out)
		if addSpecial && v.SEP >= 0 {
			out = append(out, v.SEP)
		}
	default:
		if addSpecial && v.AddBOS {
			out = append(out, v.BOS)
		}
		out = t.encodeFragments(text, frags, out)
		if addSpecial && v.AddEOS {
			out = append(out, v.EOS)
		}
	}
	return out, nil
}

// encodeFragments encodes the raw fragments and copies the special ones.
func (t *Tokenizer) encodeFragments(text string, frags []fragment, out []int32) []int32 {
	for _, f := range frags {
		if f.id >= 0 {
			out = append(out, f.id)
			continue
		}
		s := text[f.start:f.end]
		if t.kind == kindBPE && t.v.EscapeWhitespaces {
			s = strings.ReplaceAll(s, " ", spmSpace)
		}
		out = t.enc.encode(s, out)
	}
	return out
}

// Vocab returns the vocabulary the Tokenizer was built from; do not change it.
func (t *Tokenizer) Vocab() *Vocab { return t.v }

// VocabSize is the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.v.Tokens) }

// BOS, EOS, EOT, UNK and SEP return those special token ids, -1 when absent.
func (t *Tokenizer) BOS() int32 { return t.v.BOS }
func (t *Tokenizer) EOS() int32 { return t.v.EOS }
func (t *Tokenizer) EOT() int32 { return t.v.EOT }
func (t *Tokenizer) UNK() int32 { return t.v.UNK }
func (t *Tokenizer) SEP() int32 { return t.v.SEP }

// AddBOS reports whether Encode with addSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.v.AddBOS }

// IsEOG reports whether id ends generation (EOS, EOT, EOM and the tokens
// llama.cpp recognises by their text).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// TokenID returns the id of the token whose text is exactly text.
func (t *Tokenizer) TokenID(text string) (int32, bool) {
	id, ok := t.ids[text]
	return id, ok
}

// TokenType returns the type of id (TypeUndefined when out of range).
func (t *Tokenizer) TokenType(id int32) TokenType {
	if id < 0 || int(id) >= len(t.types) {
		return TypeUndefined
	}
	return t.types[id]
}
