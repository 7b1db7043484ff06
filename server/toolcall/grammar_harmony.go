package toolcall

import (
	"fmt"
	"strings"
)

// AnswerGrammar wraps the GBNF of a constrained answer (a JSON schema's,
// as grammar.JSONSchemaGBNF writes it: one rule a line) so that a model of
// format f may reason first, as its chat template teaches it. For harmony
// (gpt-oss), as llama.cpp's gpt-oss grammar and vLLM's structured output
// after the reasoning: analysis messages, then the final channel's header
// (its content type optional), then the answer. ok is false for the other
// formats: their answer is constrained from the output's first token.
func AnswerGrammar(f Format, answer string) (src string, ok bool, err error) {
	if f != OpenAI {
		return "", false, nil
	}
	var b strings.Builder
	if err := prefixRules(&b, answer, "answer-"); err != nil {
		return "", false, fmt.Errorf("toolcall: the answer's grammar: %w", err)
	}
	b.WriteString(textWithout("think-text", "<|"))
	b.WriteString(`analysis ::= "<|channel|>analysis<|message|>" think-text "<|end|><|start|>assistant"` + "\n")
	b.WriteString(`final ::= "<|channel|>final" (" "? "<|constrain|>" [a-z]+ | " " [a-z]+)? "<|message|>"` + "\n")
	b.WriteString("root ::= analysis* final answer-root\n")
	return b.String(), true, nil
}
