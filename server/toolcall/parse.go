package toolcall

import (
	"crypto/rand"
	"encoding/json"
	"strings"
)

// Call is one tool call: Arguments is a JSON object's text.
type Call struct {
	ID        string // the model's own id where its format has one, else made by the Parser
	Name      string
	Arguments string

	// XML formats: the parameters' text, typed by finish from the tools' schemas.
	params     []param
	textParams bool
}

// param is one parameter as an XML format writes it: a name and its text.
type param struct{ name, text string }

// Result is a whole output, parsed. Content and Reasoning are trimmed of
// surrounding space.
type Result struct {
	Content   string
	Reasoning string
	Calls     []Call
}

// Parser parses one format's output.
type Parser struct {
	Format Format
	// ReasoningOpen: the prompt ended inside a reasoning block (e.g. with
	// "<think>\n"), so the output begins as reasoning. See PromptOpensReasoning.
	ReasoningOpen bool
	// NewID makes call ids; nil: "call_" and 24 random letters and digits.
	NewID func() string
	// NoCalls reads calls as content (a request without tools, or with
	// tool_choice "none"); reasoning is still parsed.
	NoCalls bool
	// CallsOnly drops content: the output was constrained to calls
	// (tool_choice "required" or a named function), so text that is not
	// a whole call is a call cut short (by max_tokens), never content.
	CallsOnly bool
	// Tools are the functions the request offers. The XML formats
	// (qwen3_coder, glm45) write parameters as bare text: a parameter whose
	// schema type is "string" stays a string; others are read as JSON
	// when they parse. Without a schema, text that parses as JSON (other
	// than a JSON string) is taken as JSON.
	Tools []Tool
}

// Tool is a function offered to the model.
type Tool struct {
	Name       string
	Parameters json.RawMessage // its JSON schema, an object's
}

// Parse parses a whole output. It never fails: what does not parse is content.
func (p *Parser) Parse(text string) Result {
	s := newScanner(p)
	s.buf += text
	s.step(true)
	var c, r strings.Builder
	var res Result
	for _, pc := range s.out {
		switch {
		case pc.call != nil:
			res.Calls = append(res.Calls, p.finish(*pc.call))
		case pc.reasoning:
			r.WriteString(pc.text)
		case !p.CallsOnly:
			c.WriteString(pc.text)
		}
	}
	res.Content = strings.TrimSpace(c.String())
	res.Reasoning = strings.TrimSpace(r.String())
	return res
}

// finish gives a call its id and its typed arguments.
func (p *Parser) finish(c Call) Call {
	if c.textParams {
		var o object
		for _, pr := range c.params {
			o.add(pr.name, typedValue(pr.text, p.paramTypes(c.Name, pr.name)))
		}
		c.Arguments, c.params, c.textParams = o.String(), nil, false
	}
	if c.ID != "" {
		return c
	}
	if p.NewID != nil {
		c.ID = p.NewID()
	} else if f := p.Format.def(); f.newID != nil {
		c.ID = f.newID()
	} else {
		c.ID = NewCallID()
	}
	return c
}

// NewCallID returns an id like OpenAI's: "call_" and 24 random letters and digits.
func NewCallID() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	var b [24]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "call_" + string(b[:])
}

// paramTypes returns the JSON schema types of a tool's parameter (none
// when the tool or its schema is unknown).
func (p *Parser) paramTypes(tool, name string) []string {
	for _, t := range p.Tools {
		if t.Name != tool {
			continue
		}
		var schema struct {
			Properties map[string]struct {
				Type json.RawMessage `json:"type"`
			} `json:"properties"`
		}
		if json.Unmarshal(t.Parameters, &schema) != nil {
			return nil
		}
		raw := schema.Properties[name].Type
		var one string
		if json.Unmarshal(raw, &one) == nil {
			return []string{one}
		}
		var many []string
		json.Unmarshal(raw, &many)
		return many
	}
	return nil
}

// typedValue writes a parameter's text as JSON, by its schema types.
func typedValue(text string, types []string) string {
	if len(types) == 0 {
		return xmlValue(text)
	}
	if len(types) == 1 && types[0] == "string" {
		return quote(text)
	}
	if t := strings.TrimSpace(text); json.Valid([]byte(t)) {
		return t
	}
	return quote(text)
}
