package actors_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/model/grammar"
	"github.com/troupe-llm/troupe/model/tokenizer"
)

// modelVocab is a tokenizer's vocabulary as the grammar matcher sees it.
func modelVocab(t testing.TB, tok *tokenizer.Tokenizer) *grammar.Vocab {
	t.Helper()
	pieces := make([][]byte, tok.VocabSize())
	var eog []int32
	for id := range int32(len(pieces)) {
		if tok.IsEOG(id) {
			eog = append(eog, id)
			pieces[id] = []byte{0} // any non-empty piece: an EOG id is allowed only where the grammar ends
			continue
		}
		pieces[id] = tok.TokenPiece(id, false)
	}
	v, err := grammar.NewVocab(pieces, eog...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// walk samples one output of g by picking tokens uniformly among those the
// mask allows, until an end-of-generation token or maxTokens; ok is false
// when the budget ran out.
func walk(t testing.TB, g *grammar.Grammar, v *grammar.Vocab, r *rand.Rand, maxTokens int) (string, bool) {
	t.Helper()
	m, err := g.NewMatcher(v)
	if err != nil {
		t.Fatal(err)
	}
	mask := make([]uint64, v.MaskWords())
	var out strings.Builder
	for range maxTokens {
		if err := m.Mask(mask); err != nil {
			if errors.Is(err, grammar.ErrTooComplex) {
				return out.String(), false
			}
			t.Fatal(err)
		}
		var allowed []int32
		for id := range int32(v.Size()) {
			if grammar.Allowed(mask, id) {
				allowed = append(allowed, id)
			}
		}
		if len(allowed) == 0 {
			t.Fatalf("no token allowed after %q", out.String())
		}
		tok := allowed[r.IntN(len(allowed))]
		if v.IsEOG(tok) {
			return out.String(), true
		}
		if err := m.Accept(tok); err != nil {
			t.Fatalf("token %d allowed after %q but Accept: %v", tok, out.String(), err)
		}
		out.Write(v.Piece(tok))
	}
	return out.String(), false
}

// TestSchemaCorpusWalk samples each corpus schema's grammar without a
// model: uniformly random tokens of stories260K's vocabulary among those
// the mask allows. Every finished output validates. It checks the corpus
// and the compiler apart from the runtime; the outputs are longer than a
// model's (nothing favours closing a string), so the budget is larger.
func TestSchemaCorpusWalk(t *testing.T) {
	own := ownSchemas(t)
	suite, _ := suiteSchemas(t)
	v := modelVocab(t, openModel(t, "stories260K.gguf").Tokenizer)
	const walks, maxTokens = 8, 1500
	unfinished := 0
	for i, sc := range append(own, suite...) {
		g, err := grammar.FromJSONSchema([]byte(sc.source))
		if err != nil {
			t.Errorf("%s: %v", sc.name, err)
			continue
		}
		val := schemaValidator(t, sc)
		r := rand.New(rand.NewPCG(uint64(i), 18))
		for range walks {
			out, ok := walk(t, g, v, r, maxTokens)
			if !ok {
				unfinished++
				continue
			}
			if why := validate(val, out); why != "" {
				t.Errorf("%s: %q %s", sc.name, out, why)
			}
		}
	}
	t.Logf("%d schemas x %d walks: %d unfinished in %d tokens", len(own)+len(suite), walks, unfinished, maxTokens)
}
