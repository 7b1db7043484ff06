package actors

import (
	"encoding/json"
	"fmt"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model/grammar"
)

// grammarCacheSize is the compiled grammars a runtime keeps (by kind and
// source), least recently used out first.
const grammarCacheSize = 256

// CompileGrammar compiles g, or finds it in the runtime's cache, so that a
// front end can answer a bad schema, pattern or grammar with a 400 before
// it admits the request. The error wraps ErrInvalidRequest.
func (r *Runtime) CompileGrammar(g *messages.Grammar) error {
	_, err := r.grammar(g)
	return err
}

// grammar returns g compiled, from the runtime's cache when it is there.
func (r *Runtime) grammar(g *messages.Grammar) (*grammar.Grammar, error) {
	c, err := r.grammars.Get(g.Kind+"\x00"+g.Source, func() (*grammar.Grammar, error) { return compileGrammar(g) })
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidRequest, g.Kind, err)
	}
	return c, nil
}

func compileGrammar(g *messages.Grammar) (*grammar.Grammar, error) {
	switch g.Kind {
	case messages.GrammarJSONSchema:
		return grammar.FromJSONSchema([]byte(g.Source))
	case messages.GrammarJSONObject:
		return grammar.JSONObject()
	case messages.GrammarRegex:
		return grammar.FromRegex(g.Source)
	case messages.GrammarChoice:
		var choices []string
		if err := json.Unmarshal([]byte(g.Source), &choices); err != nil {
			return nil, fmt.Errorf("the choices are not a JSON array of strings: %v", err)
		}
		return grammar.FromChoices(choices)
	case messages.GrammarGBNF:
		return grammar.Compile(g.Source)
	}
	return nil, fmt.Errorf("unknown grammar kind %q", g.Kind)
}
