package actors

import (
	"context"

	"github.com/troupe-llm/troupe/grammar"
	"github.com/troupe-llm/troupe/messages"
)

// SetGrammarCompiler replaces how r compiles a grammar source (a test
// holds or fails a compile with it). Call it before any request.
func SetGrammarCompiler(r *Runtime, f func(*messages.Grammar) (*grammar.Grammar, error)) {
	r.compileFn = func(_ context.Context, g *messages.Grammar, _ *grammarCounters) (*grammar.Grammar, error) {
		return f(g)
	}
}

// CompileSource is the runtime's own compile of a grammar source.
func CompileSource(g *messages.Grammar) (*grammar.Grammar, error) {
	return compileSource(context.Background(), g, &grammarCounters{})
}

// GrammarVocab is the vocabulary the runtime's grammar matchers run over
// for a model with tokenizer tok and logits rows n wide (special: control
// tokens' text allowed).
var GrammarVocab = vocabOf

// SetGrammarCompilerContext is SetGrammarCompiler for a compile that
// watches its context.
func SetGrammarCompilerContext(r *Runtime, f func(context.Context, *messages.Grammar) (*grammar.Grammar, error)) {
	r.compileFn = func(ctx context.Context, g *messages.Grammar, _ *grammarCounters) (*grammar.Grammar, error) {
		return f(ctx, g)
	}
}

// DraftBlocksInUse is how many of the draft model's KV blocks sequences
// hold (0 without a draft model).
func DraftBlocksInUse(r *Runtime) int {
	if r.drafter == nil {
		return 0
	}
	return r.drafter.usedBlocks()
}

// DraftsAsked is how many asks the draft device drafted for (0 without a
// draft model).
func DraftsAsked(r *Runtime) int64 {
	if r.drafter == nil {
		return 0
	}
	return r.drafter.draftsAsked()
}
