package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrNoGrammar: the format's calls cannot be written as a grammar (yet).
var ErrNoGrammar = errors.New("toolcall: no grammar for this format")

// ToolError is a tool whose calls Grammar could not write: a bad name, or
// parameters outside model/grammar's subset or past its work bound. Index
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
	// SchemaGBNF writes the GBNF of a JSON Schema: model/grammar's
	// JSONSchemaGBNF, which the server reaches through the runtime
	// (actors.Runtime.JSONSchemaGBNF), as the front end imports no model
	// package. Required for the JSON-argument formats.
	SchemaGBNF func(schema []byte) (string, error)
}

// Grammar returns a GBNF grammar (llama.cpp's format, for model/grammar)
// of outputs that are only tool calls in format f, each call's arguments
// valid under its tool's parameters schema, so that the output always
// parses (tool_choice "required" or a named function). A schema outside
// model/grammar's subset is SchemaGBNF's error (its UnsupportedError); a
// format without a grammar is ErrNoGrammar.
func Grammar(f Format, c Calls) (string, error) {
	var b strings.Builder
	sh, ok := shapes[f]
	x, isXML := xmlShapes[f]
	if isXML {
		sh, ok = shape{open: x.listOpen, sep: x.sep, close: x.listClose}, true
		b.WriteString(xmlText)
	}
	if f == Gemma4 {
		sh, ok = shape{}, true
		b.WriteString(gemmaRules)
	}
	if !ok {
		return "", fmt.Errorf("%w %q", ErrNoGrammar, f)
	}
	if f == Mistral && !strings.Contains(c.Template, "[ARGS]") {
		sh = mistralNemo
	}
	var alts []string
	for i, t := range c.Tools {
		if c.Name != "" && t.Name != c.Name {
			continue
		}
		if !isName(t.Name) {
			return "", &ToolError{i, fmt.Errorf("toolcall: tool %q: a name of letters, digits and _-.:/ is needed", t.Name)}
		}
		rule := "call-" + strconv.Itoa(i)
		prefix := "t" + strconv.Itoa(i) + "-"
		if isXML || f == Gemma4 {
			var call string
			var err error
			if isXML {
				call, err = xmlCall(&b, x, t, prefix, c.schemaGBNF)
			} else {
				call, err = (&gemmaConv{b: &b, prefix: prefix}).call(t)
			}
			if err != nil {
				return "", &ToolError{i, fmt.Errorf("toolcall: tool %q: %w", t.Name, err)}
			}
			fmt.Fprintf(&b, "%s ::= %s\n", rule, call)
			alts = append(alts, rule)
			continue
		}
		params := []byte(t.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type": "object"}`)
		}
		src, err := c.schemaGBNF(params)
		if err != nil {
			return "", &ToolError{i, fmt.Errorf("toolcall: tool %q: parameters: %w", t.Name, err)}
		}
		if err := prefixRules(&b, src, prefix); err != nil {
			return "", &ToolError{i, fmt.Errorf("toolcall: tool %q: %w", t.Name, err)}
		}
		fmt.Fprintf(&b, "%s ::= %s\n", rule, sh.call(t.Name, prefix+"root"))
		alts = append(alts, rule)
	}
	if len(alts) == 0 {
		if c.Name != "" {
			return "", fmt.Errorf("toolcall: no tool named %q", c.Name)
		}
		return "", errors.New("toolcall: no tools")
	}
	fmt.Fprintf(&b, "call ::= %s\n", strings.Join(alts, " | "))
	calls := "call"
	if c.Parallel && !sh.single {
		calls = "call (" + cat(lit(sh.sep), "call") + ")*"
	}
	think := reasoningRule(&b, f, c.ReasoningOpen, c.Template)
	fmt.Fprintf(&b, "root ::= %s\n", cat(think, lit(sh.open), calls, lit(sh.close)))
	return b.String(), nil
}

// reasoningRule writes the rules of the reasoning a format lets the model
// write before its calls and returns its GBNF: the block, optional, where
// the chat template knows it (a model that does not reason would only
// ramble in it), or, when the prompt opened it, its rest and its end.
func reasoningRule(b *strings.Builder, f Format, open bool, template string) string {
	if f == OpenAI { // harmony: an analysis message first
		b.WriteString(textWithout("think-text", "<|"))
		return `("<|channel|>analysis<|message|>" think-text "<|end|><|start|>assistant")?`
	}
	d := f.def()
	if !d.reasoning || d.thinkStart == "" {
		return ""
	}
	end := ""
	for _, bl := range d.blocks {
		if bl.modes == inReasoning {
			end = bl.start
		}
	}
	if len(end) < 2 || !open && !strings.Contains(template, d.thinkStart) {
		return ""
	}
	b.WriteString(textWithout("think-text", end[:2]))
	b.WriteString(`think-space ::= [ \t\n]{0,4}` + "\n")
	if open {
		return cat("think-text", lit(end), "think-space")
	}
	return "(" + cat(lit(d.thinkStart), "think-text", lit(end), "think-space") + ")?"
}

// textWithout is the rule name ::= any text without the two bytes stop.
func textWithout(name, stop string) string {
	return fmt.Sprintf("%s ::= ([^%s] | %s [^%s])*\n", name, classChar(stop[0]), lit(stop[:1]), classChar(stop[1]))
}

// classChar is c as written inside a GBNF character class.
func classChar(c byte) string {
	if strings.IndexByte(`\"[]-^`, c) >= 0 {
		return `\` + string(c)
	}
	return string(c)
}

// shape is how a format writes its calls: open, the calls separated by
// sep, close; call is one call's GBNF, of the tool name and the rule of
// its arguments (a JSON object).
type shape struct {
	open, sep, close string
	single           bool // one call per message
	call             func(name, args string) string
}

// jsonCall is {"<nameKey>": "NAME", "<argsKey>": ARGS} with head before it.
func jsonCall(head, nameKey, argsKey string) func(name, args string) string {
	return func(name, args string) string {
		return cat(lit(head+`{"`+nameKey+`": `+quote(name)+`, "`+argsKey+`": `), args, lit("}"))
	}
}

// around is before NAME after, then the arguments, then end.
func around(before, after, end string) func(name, args string) string {
	return func(name, args string) string { return cat(lit(before+name+after), args, lit(end)) }
}

var mistralNemo = shape{open: "[TOOL_CALLS][", sep: ", ", close: "]", call: jsonCall("", "name", "arguments")}

var shapes = map[Format]shape{
	Hermes: {sep: "\n", call: func(name, args string) string {
		return cat(lit("<tool_call>\n"), jsonCall("", "name", "arguments")(name, args), lit("\n</tool_call>"))
	}},
	Llama3JSON: {single: true, call: jsonCall("", "name", "parameters")},
	Mistral:    {call: around("[TOOL_CALLS]", "[ARGS]", "")},
	Granite:    {open: "<|tool_call|>[", sep: ", ", close: "]", call: jsonCall("", "name", "arguments")},
	FireFunction2: {open: "functools[", sep: ", ", close: "]",
		call: jsonCall("", "name", "arguments")},
	CommandR7B: {open: "<|START_ACTION|>[\n    ", sep: ",\n    ", close: "\n]<|END_ACTION|>", call: func(name, args string) string {
		return cat(lit(`{"tool_call_id": "`), "[0-9]{1,3}", lit(`", "tool_name": `+quote(name)+`, "parameters": `), args, lit("}"))
	}},
	CommandRPlus: {open: "Action: ```json\n[\n    ", sep: ",\n    ", close: "\n]\n```",
		call: jsonCall("", "tool_name", "parameters")},
	DeepSeekV31: {open: "<｜tool▁calls▁begin｜>", close: "<｜tool▁calls▁end｜>",
		call: around("<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>")},
	DeepSeekR1: {open: "<｜tool▁calls▁begin｜>", sep: "\n", close: "<｜tool▁calls▁end｜>",
		call: around("<｜tool▁call▁begin｜>function<｜tool▁sep｜>", "\n```json\n", "\n```<｜tool▁call▁end｜>")},
	KimiK2: {open: "<|tool_calls_section_begin|>", close: "<|tool_calls_section_end|>", call: func(name, args string) string {
		return cat(lit("<|tool_call_begin|>functions."+name+":"), "[0-9]{1,3}", lit("<|tool_call_argument_begin|>"), args, lit("<|tool_call_end|>"))
	}},
	OpenAI:        {single: true, call: around("<|channel|>commentary to=functions.", " <|constrain|>json<|message|>", "")},
	FunctionaryV3: {sep: ">>>", call: around("", "\n", "")},
	Functionary31: {call: around("<function=", ">", "</function>")},
}

// cat joins GBNF items, leaving out empty ones.
func cat(items ...string) string {
	var out []string
	for _, it := range items {
		if it != "" {
			out = append(out, it)
		}
	}
	return strings.Join(out, " ")
}

// lit is s as a GBNF string literal ("" for an empty s).
func lit(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\x%02X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// prefixRules writes src's rules ("name ::= body" lines, as
// grammar.JSONSchemaGBNF writes them) with every rule name, defined or
// referenced, prefixed: the rules of several schemas then live in one
// grammar.
func prefixRules(b *strings.Builder, src, prefix string) error {
	for _, line := range strings.Split(strings.TrimSpace(src), "\n") {
		name, body, ok := strings.Cut(line, " ::= ")
		if !ok {
			return fmt.Errorf("unexpected grammar line %q", line)
		}
		b.WriteString(prefix + name + " ::= ")
		for i := 0; i < len(body); {
			c := body[i]
			switch {
			case c == '"' || c == '[':
				end := byte('"')
				if c == '[' {
					end = ']'
				}
				j := i + 1
				for j < len(body) && body[j] != end {
					if body[j] == '\\' {
						j++
					}
					j++
				}
				j = min(j+1, len(body))
				b.WriteString(body[i:j])
				i = j
			case c == '{':
				j := strings.IndexByte(body[i:], '}')
				if j < 0 {
					return fmt.Errorf("unclosed { in %q", line)
				}
				b.WriteString(body[i : i+j+1])
				i += j + 1
			case wordChar(c):
				j := i
				for j < len(body) && wordChar(body[j]) {
					j++
				}
				b.WriteString(prefix + body[i:j])
				i = j
			default:
				b.WriteByte(c)
				i++
			}
		}
		b.WriteByte('\n')
	}
	return nil
}

func wordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

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

// schemaGBNF is c.SchemaGBNF, or an error when the caller gave none.
func (c *Calls) schemaGBNF(schema []byte) (string, error) {
	if c.SchemaGBNF == nil {
		return "", errors.New("toolcall: Calls.SchemaGBNF is not set")
	}
	return c.SchemaGBNF(schema)
}
