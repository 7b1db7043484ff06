package actors_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
)

// TestGrammarTooComplexToMask: a GBNF grammar that compiles but whose
// first mask passes grammar's work bound is refused by
// CompileGrammar (the front's 400), not at its sequence's first step; one
// whose bound is passed only some tokens in compiles, and its choices end
// with an error naming it, the runtime still serving.
func TestGrammarTooComplexToMask(t *testing.T) {
	rt := start(t, openModel(t, "stories260K.gguf"), actors.Config{})
	heavy := strings.Repeat(`("a" | "") `, 3000)
	first := &messages.Grammar{Kind: messages.GrammarGBNF, Source: "root ::= " + heavy}
	for range 2 { // the second from the cache: an error is not kept
		err := rt.CompileGrammar(first)
		if !errors.Is(err, actors.ErrInvalidRequest) || !strings.Contains(err.Error(), "too complex") {
			t.Fatalf("CompileGrammar: %v, want ErrInvalidRequest naming the grammar too complex", err)
		}
	}
	// After "xxxxxxx" (stories260K has no "xx" token: seven steps), the
	// next mask passes the bound.
	later := &messages.Grammar{Kind: messages.GrammarGBNF, Source: `root ::= "xxxxxxxx" ` + heavy}
	if err := rt.CompileGrammar(later); err != nil {
		t.Fatalf("CompileGrammar: %v", err)
	}
	for _, g := range []*messages.Grammar{first, later} {
		outs, err := generateConstrained(rt, []int32{1}, g, 7)
		if err != nil {
			t.Logf("Generate: %v", err)
		}
		for i, o := range outs {
			if o.finish != messages.FinishError || !strings.Contains(o.err, "too complex") {
				t.Errorf("%.40s: choice %d: finish %q (%s) after %q, want an error naming the grammar too complex", g.Source, i, o.finish, o.err, o.text)
			}
			if g == later && o.text != "xxxxxxx" {
				t.Errorf("choice %d: %q before the error, want the seven x's", i, o.text)
			}
		}
	}
	if err := rt.CompileGrammar(&messages.Grammar{Kind: messages.GrammarRegex, Source: "[a-z]{3}"}); err != nil {
		t.Fatalf("the runtime after: %v", err)
	}
}
