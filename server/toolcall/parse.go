package toolcall

import (
	"crypto/rand"
	"strings"
)

// Call is one tool call: Arguments is a JSON object's text.
type Call struct {
	ID        string // the model's own id where its format has one, else made by the Parser
	Name      string
	Arguments string
}

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
}

// Parse parses a whole output. It never fails: what does not parse is content.
func (p *Parser) Parse(text string) Result {
	s := newScanner(p.Format.def(), p.ReasoningOpen)
	s.buf += text
	s.step(true)
	var c, r strings.Builder
	var res Result
	for _, pc := range s.out {
		switch {
		case pc.call != nil:
			res.Calls = append(res.Calls, p.withID(*pc.call))
		case pc.reasoning:
			r.WriteString(pc.text)
		default:
			c.WriteString(pc.text)
		}
	}
	res.Content = strings.TrimSpace(c.String())
	res.Reasoning = strings.TrimSpace(r.String())
	return res
}

func (p *Parser) withID(c Call) Call {
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

// PromptOpensReasoning reports whether a rendered prompt ends inside the
// format's reasoning block (its template opened "<think>" for the model).
func PromptOpensReasoning(f Format, prompt string) bool {
	d := f.def()
	if !d.reasoning || d.thinkStart == "" {
		return false
	}
	t := strings.TrimRight(prompt, " \t\r\n")
	return strings.HasSuffix(t, d.thinkStart)
}
