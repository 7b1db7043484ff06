package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/troupe-llm/troupe/grammar"
)

// ErrNoGrammar: the format's calls cannot be written as a grammar (yet).
var ErrNoGrammar = errors.New("toolcall: no grammar for this format")

// ToolError is a tool whose calls Grammar could not write: a bad name, or
// parameters outside grammar's subset or past its work bound. Index
// is the tool's place in Calls.Tools.
type ToolError struct {
	Index int
	Err   error
}

func (e *ToolError) Error() string { return e.Err.Error() }
func (e *ToolError) Unwrap() error { return e.Err }

// Calls says which calls a Grammar allows.
type Calls struct {
	Tools []Tool
	// Name, when set, is the one tool that may be called (tool_choice
	// naming a function); it must be one of Tools.
	Name string
	// Parallel allows one or more calls; otherwise exactly one. Formats
	// that write one call per message (llama 3, harmony) always allow one.
	Parallel bool
	// Template is the chat template's source, for formats whose syntax
	// changed between versions (mistral's [ARGS]).
	Template string
	// ReasoningOpen: the prompt opened a reasoning block (see
	// PromptOpensReasoning), which the output must close before its calls.
	// Otherwise a format with reasoning may write a reasoning block first
	// when Template has its marker.
	ReasoningOpen bool
	// Converter converts the tools' schemas, under its budget and context
	// (the runtime's: Runtime.BuildGrammar hands one to GrammarBuild's
	// function); nil: one of Grammar's own, unbounded in time.
	Converter *grammar.Converter
}

// callSyntax is how a format writes its calls: open, the calls separated
// by sep, close; call writes one call of tool t (the i-th) in g.
type callSyntax struct {
	open, sep, close string
	single           bool // one call per message
	call             func(g *gbuild, t Tool, i int) (grammar.Expr, error)
}

// gbuild is a grammar being built: its rules, and those written once.
type gbuild struct {
	b    *grammar.Builder
	once map[string]grammar.Expr
}

func newBuild(conv *grammar.Converter) *gbuild {
	return &gbuild{b: grammar.NewBuilder(conv), once: map[string]grammar.Expr{}}
}

// shared is the rule name ::= body, written the first time it is asked for.
func (g *gbuild) shared(name string, body func() grammar.Expr) grammar.Expr {
	if r, ok := g.once[name]; ok {
		return r
	}
	r := g.b.Declare(name)
	g.once[name] = r
	g.b.Define(r, body())
	return r
}

// textWithout is the shared rule of text without the two bytes stop.
func (g *gbuild) textWithout(name, stop string) grammar.Expr {
	return g.shared(name, func() grammar.Expr { return grammar.TextWithout(stop) })
}

// Grammar returns a GBNF grammar (llama.cpp's format, for grammar)
// of outputs that are only tool calls in format f, each call's arguments
// valid under its tool's parameters schema, so that the output always
// parses (tool_choice "required" or a named function). A schema outside
// grammar's subset is its *grammar.UnsupportedError; a format
// without a grammar is ErrNoGrammar.
func Grammar(f Format, c Calls) (string, error) {
	d := f.def()
	if d.calls == nil {
		return "", fmt.Errorf("%w %q", ErrNoGrammar, f)
	}
	syn := d.calls(c.Template)
	g := newBuild(c.Converter)
	var alts []grammar.Expr
	for i, t := range c.Tools {
		if c.Name != "" && t.Name != c.Name {
			continue
		}
		if !isName(t.Name) {
			return "", &ToolError{i, fmt.Errorf("toolcall: tool %q: a name of letters, digits and _-.:/ is needed", t.Name)}
		}
		call, err := syn.call(g, t, i)
		if err != nil {
			return "", &ToolError{i, fmt.Errorf("toolcall: tool %q: %w", t.Name, err)}
		}
		alts = append(alts, g.b.Rule("call-"+strconv.Itoa(i), call))
	}
	if len(alts) == 0 {
		if c.Name != "" {
			return "", fmt.Errorf("toolcall: no tool named %q", c.Name)
		}
		return "", errors.New("toolcall: no tools")
	}
	call := g.b.Rule("call", grammar.Alt(alts...))
	calls := call
	if c.Parallel && !syn.single {
		calls = grammar.List(call, grammar.Lit(syn.sep))
	}
	var think grammar.Expr
	if d.reasoningGrammar != nil {
		think = d.reasoningGrammar(g, c.ReasoningOpen, c.Template)
	} else {
		think = thinkGrammar(g, d, c.ReasoningOpen, c.Template)
	}
	return g.b.GBNF(grammar.Seq(think, grammar.Lit(syn.open), calls, grammar.Lit(syn.close)))
}

// GrammarBuild is Grammar as a build function for the runtime's
// BuildGrammar, which gives it the converter of its budget.
func GrammarBuild(f Format, c Calls) func(*grammar.Converter) (string, error) {
	return func(conv *grammar.Converter) (string, error) {
		c.Converter = conv
		return Grammar(f, c)
	}
}

// thinkGrammar is the reasoning a format with a think pair lets the
// model write before its calls: the block, optional, where the chat
// template knows it (a model that does not reason would only ramble in
// it), or, when the prompt opened it, its rest and its end.
func thinkGrammar(g *gbuild, d *format, open bool, template string) grammar.Expr {
	start, end := d.think.open, d.think.close
	if start == "" || len(end) < 2 || !open && !strings.Contains(template, start) {
		return grammar.Expr{}
	}
	text := g.textWithout("think-text", end[:2])
	space := g.shared("think-space", func() grammar.Expr { return grammar.Repeat(grammar.Class(` \t\n`), 0, 4) })
	if open {
		return grammar.Seq(text, grammar.Lit(end), space)
	}
	return grammar.Opt(grammar.Seq(grammar.Lit(start), text, grammar.Lit(end), space))
}

// AnswerGrammar returns the grammar of an answer constrained to a JSON
// schema, wrapped so that a model of format f may reason first, as its
// chat template teaches it (harmony's analysis messages and final
// channel's header). ok is false for the other formats: their answer is
// constrained from the output's first token, by the schema alone. conv
// converts the schema (nil: one of its own).
func AnswerGrammar(f Format, schema []byte, conv *grammar.Converter) (src string, ok bool, err error) {
	d := f.def()
	if d.answer == nil {
		return "", false, nil
	}
	g := newBuild(conv)
	answer, err := g.b.Schema("answer", schema)
	if err != nil {
		return "", false, err
	}
	src, err = g.b.GBNF(d.answer(g, answer))
	return src, err == nil, err
}

// WrapsAnswer reports whether AnswerGrammar wraps f's constrained answers.
func (f Format) WrapsAnswer() bool { return f.def().answer != nil }

// AnswerBuild is AnswerGrammar as a build function for the runtime's
// BuildGrammar.
func AnswerBuild(f Format, schema []byte) func(*grammar.Converter) (string, error) {
	return func(conv *grammar.Converter) (string, error) {
		src, _, err := AnswerGrammar(f, schema, conv)
		return src, err
	}
}

// jsonCalls is a syntax whose calls' arguments are JSON, valid under the
// tool's parameters schema; wrap writes a call around its name and them.
func jsonCalls(open, sep, close string, wrap func(name string, args grammar.Expr) grammar.Expr) *callSyntax {
	return &callSyntax{open: open, sep: sep, close: close, call: func(g *gbuild, t Tool, i int) (grammar.Expr, error) {
		params := []byte(t.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type": "object"}`)
		}
		args, err := g.b.Schema("t"+strconv.Itoa(i), params)
		if err != nil {
			return grammar.Expr{}, fmt.Errorf("parameters: %w", err)
		}
		return wrap(t.Name, args), nil
	}}
}

// jsonCall is {"<nameKey>": "NAME", "<argsKey>": ARGS}.
func jsonCall(nameKey, argsKey string) func(name string, args grammar.Expr) grammar.Expr {
	return func(name string, args grammar.Expr) grammar.Expr {
		return grammar.Seq(grammar.Lit(`{"`+nameKey+`": `+quote(name)+`, "`+argsKey+`": `), args, grammar.Lit("}"))
	}
}

// around is before NAME after, then the arguments, then end.
func around(before, after, end string) func(name string, args grammar.Expr) grammar.Expr {
	return func(name string, args grammar.Expr) grammar.Expr {
		return grammar.Seq(grammar.Lit(before+name+after), args, grammar.Lit(end))
	}
}

// fixed is a format's syntax, whatever its template.
func fixed(s *callSyntax) func(string) *callSyntax { return func(string) *callSyntax { return s } }

// ToolsFromJSON reads OpenAI tool definitions ({"type": "function",
// "function": {"name", "parameters", ...}}) into Tools.
func ToolsFromJSON(defs []json.RawMessage) ([]Tool, error) {
	tools := make([]Tool, 0, len(defs))
	for i, d := range defs {
		var def struct {
			Type     string `json:"type"`
			Function *struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(d, &def); err != nil {
			return nil, fmt.Errorf("tools[%d]: expected an object {\"type\": \"function\", \"function\": {...}}", i)
		}
		if def.Type != "function" {
			return nil, fmt.Errorf("tools[%d].type %q: only \"function\" is supported", i, def.Type)
		}
		if def.Function == nil || def.Function.Name == "" {
			return nil, fmt.Errorf("tools[%d].function.name is required", i)
		}
		p := def.Function.Parameters
		if len(p) > 0 && string(p) != "null" && p[0] != '{' {
			return nil, fmt.Errorf("tools[%d].function.parameters must be a JSON Schema object", i)
		}
		tools = append(tools, Tool{Name: def.Function.Name, Parameters: p})
	}
	return tools, nil
}
