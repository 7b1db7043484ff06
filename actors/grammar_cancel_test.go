package actors_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/grammar"
	"github.com/troupe-llm/troupe/messages"
)

// TestCompileAbandoned: when the only asker of a compile (or of a build)
// stops waiting, its call returns the context's error at once and the job
// on the compiler's goroutine sees its context end; the compiler then
// serves the next grammar.
func TestCompileAbandoned(t *testing.T) {
	noLeaks(t)
	rt := start(t, openModel(t, "stories260K.gguf"), actors.Config{})
	entered, stopped := make(chan struct{}, 1), make(chan error, 1)
	actors.SetGrammarCompilerContext(rt, func(ctx context.Context, g *messages.Grammar) (*grammar.Grammar, error) {
		if g.Source == "held" {
			entered <- struct{}{}
			<-ctx.Done()
			stopped <- ctx.Err()
			return nil, ctx.Err()
		}
		return actors.CompileSource(g)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- rt.CompileGrammarContext(ctx, &messages.Grammar{Kind: messages.GrammarRegex, Source: "held"})
	}()
	<-entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("CompileGrammarContext: %v, want context.Canceled", err)
	}
	waitCanceled(t, stopped, "the abandoned compile")

	// A build: its converter stops with the request.
	ctx, cancel = context.WithCancel(context.Background())
	built := make(chan error, 1)
	go func() {
		_, err := rt.BuildGrammar(ctx, func(conv *grammar.Converter) (string, error) {
			cancel()
			for { // converts until the converter sees the context end
				if _, err := conv.JSONSchemaGBNF([]byte(`{"type": "object", "properties": {"a": {"type": "string"}}}`)); err != nil {
					stopped <- err
					return "", err
				}
			}
		})
		built <- err
	}()
	if err := <-built; !errors.Is(err, context.Canceled) {
		t.Fatalf("BuildGrammar: %v, want context.Canceled", err)
	}
	waitCanceled(t, stopped, "the abandoned build")
	if err := rt.CompileGrammar(&messages.Grammar{Kind: messages.GrammarRegex, Source: "[a-z]{3}"}); err != nil {
		t.Fatalf("the compiler after: %v", err)
	}
}

// TestBuildGrammar: a build's source is compiled and cached (the request's
// sequences find it), its conversions counted; a build error or a schema
// past the work bound wraps ErrInvalidRequest and the build's error.
func TestBuildGrammar(t *testing.T) {
	rt := start(t, openModel(t, "stories260K.gguf"), actors.Config{})
	before := rt.GrammarStats()
	g, err := rt.BuildGrammar(context.Background(), func(conv *grammar.Converter) (string, error) {
		return conv.JSONSchemaGBNF([]byte(`{"type": ["string", "null"]}`))
	})
	if err != nil || g.Kind != messages.GrammarGBNF || !strings.Contains(g.Source, "root ::=") {
		t.Fatalf("BuildGrammar: %+v, %v", g, err)
	}
	after := rt.GrammarStats()
	if after.SchemaNodes <= before.SchemaNodes || after.Compiles != before.Compiles+1 {
		t.Errorf("stats before %+v, after %+v: want the schema's nodes and one compile counted", before, after)
	}
	if err := rt.CompileGrammar(g); err != nil || rt.GrammarStats().CacheHits != after.CacheHits+1 {
		t.Errorf("the built grammar is not cached: %v, %+v", err, rt.GrammarStats())
	}
	boom := errors.New("boom")
	_, err = rt.BuildGrammar(context.Background(), func(*grammar.Converter) (string, error) { return "", boom })
	if !errors.Is(err, actors.ErrInvalidRequest) || !errors.Is(err, boom) {
		t.Errorf("a failed build: %v", err)
	}
	// Refs that fan out 16 ways under oneOf: past the work bound.
	var defs []string
	for i := range 8 {
		refs := strings.Repeat(fmt.Sprintf(`{"$ref": "#/$defs/d%d"}, `, i+1), 15) + fmt.Sprintf(`{"$ref": "#/$defs/d%d"}`, i+1)
		defs = append(defs, fmt.Sprintf(`"d%d": {"anyOf": [%s]}`, i, refs))
	}
	fan := `{"$defs": {` + strings.Join(defs, ", ") + `, "d8": {"type": "string"}}, "oneOf": [{"$ref": "#/$defs/d0"}, {"type": "integer"}]}`
	_, err = rt.BuildGrammar(context.Background(), func(conv *grammar.Converter) (string, error) {
		return conv.JSONSchemaGBNF([]byte(fan))
	})
	if !errors.Is(err, actors.ErrInvalidRequest) || !errors.Is(err, grammar.ErrTooComplex) {
		t.Errorf("a build past the work bound: %v", err)
	}
}

// waitCanceled waits (a minute at most: a hang, not a slow machine) for
// what to stop, and checks that it stopped with context.Canceled.
func waitCanceled(t *testing.T, stopped <-chan error, what string) {
	t.Helper()
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s stopped with %v, want context.Canceled", what, err)
		}
	case <-time.After(gateWait):
		t.Fatalf("%s was not stopped", what)
	}
}
