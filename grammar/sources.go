package grammar

import "errors"

// FromChoices compiles a grammar matching exactly one of the choices
// (vLLM's guided_choice).
func FromChoices(choices []string) (*Grammar, error) {
	if len(choices) == 0 {
		return nil, errors.New("grammar: no choices")
	}
	out := make([]Expr, len(choices))
	for i, c := range choices {
		out[i] = Lit(c)
		if c == "" {
			out[i] = emptyLit
		}
	}
	src, err := NewBuilder(nil).GBNF(alts(out...))
	if err != nil {
		return nil, err
	}
	return Compile(src)
}
