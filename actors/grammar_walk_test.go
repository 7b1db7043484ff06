package actors_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/grammar"
	"github.com/troupe-llm/troupe/model/tokenizer"
)

// modelVocab is the vocabulary the runtime's grammar matchers run over
// for a model with tokenizer tok.
func modelVocab(t testing.TB, tok *tokenizer.Tokenizer) *grammar.Vocab {
	t.Helper()
	v, err := actors.GrammarVocab(tok, tok.VocabSize(), false)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// walkStatus is how a walk ended.
type walkStatus int

const (
	walkFinished walkStatus = iota // an end-of-generation token
	walkCut                        // the budget ran out
	walkDead                       // no token of the vocabulary continues
)

// walk samples one output of g by picking tokens uniformly among those the
// mask allows, until an end-of-generation token, a dead end or maxTokens.
func walk(t testing.TB, g *grammar.Grammar, v *grammar.Vocab, r *rand.Rand, maxTokens int) (string, walkStatus) {
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
				return out.String(), walkCut
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
			return out.String(), walkDead
		}
		tok := allowed[r.IntN(len(allowed))]
		if v.IsEOG(tok) {
			return out.String(), walkFinished
		}
		if err := m.Accept(tok); err != nil {
			t.Fatalf("token %d allowed after %q but Accept: %v", tok, out.String(), err)
		}
		out.Write(v.Piece(tok))
	}
	return out.String(), walkCut
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
	var firstMask []int64
	for i, sc := range append(own, suite...) {
		start := time.Now()
		g, err := grammar.FromJSONSchema([]byte(sc.source))
		if err != nil {
			t.Errorf("%s: %v", sc.name, err)
			continue
		}
		// The automaton grows lazily: the first mask is part of the cost
		// of a new grammar.
		m, err := g.NewMatcher(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Mask(make([]uint64, v.MaskWords())); err != nil {
			t.Fatal(err)
		}
		firstMask = append(firstMask, time.Since(start).Microseconds())
		val := schemaValidator(t, sc)
		r := rand.New(rand.NewPCG(uint64(i), 18))
		for range walks {
			out, st := walk(t, g, v, r, maxTokens)
			if st == walkDead {
				t.Errorf("%s: dead end after %q", sc.name, out)
			}
			if st != walkFinished {
				unfinished++
				continue
			}
			if why := validate(val, out); why != "" {
				t.Errorf("%s: %q %s", sc.name, out, why)
			}
		}
	}
	t.Logf("%d schemas x %d walks: %d unfinished in %d tokens; compile and first mask over stories260K's vocabulary: median %.3f ms",
		len(own)+len(suite), walks, unfinished, maxTokens, float64(median(firstMask))/1000)
}
