package grammar

import (
	"errors"
	"strings"
)

// FromChoices compiles a grammar matching exactly one of the choices
// (vLLM's guided_choice).
func FromChoices(choices []string) (*Grammar, error) {
	if len(choices) == 0 {
		return nil, errors.New("grammar: no choices")
	}
	alts := make([]string, len(choices))
	for i, c := range choices {
		alts[i] = literal(c)
	}
	return Compile("root ::= " + strings.Join(alts, " | ") + "\n")
}
