package actors

import (
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model/grammar"
)

// SetGrammarCompiler replaces how r compiles a grammar source (a test
// holds or fails a compile with it). Call it before any request.
func SetGrammarCompiler(r *Runtime, f func(*messages.Grammar) (*grammar.Grammar, error)) {
	r.compileFn = f
}

// CompileSource is the runtime's own compile of a grammar source.
var CompileSource = compileSource

// GrammarVocab is the vocabulary the runtime's grammar matchers run over
// for a model with tokenizer tok and logits rows n wide (special: control
// tokens' text allowed).
var GrammarVocab = vocabOf
