package toolcall

import (
	"fmt"
	"strconv"

	"github.com/troupe-llm/troupe/grammar"
)

// The XML formats (qwen3_coder, glm45) write each parameter as bare text
// between tags, which Parser.finish types by the tool's schema: a
// parameter of type "string" is its text, others JSON. Their grammar
// writes the schema's properties in its order, the required ones always,
// string values as text without "</" (an enum's values as written),
// others as JSON valid under the property's schema (grammar.Text). LFM2
// writes Python calls, f(k=v, ...): its values are JSON (which Python
// literals read).

// xmlShape is how a format writes a call: open(NAME), then each
// parameter as before KEY mid VALUE after, psep between them, then close.
type xmlShape struct {
	open               func(name string) string
	before, mid, after string
	psep               string // between parameters ("" for none)
	close              string
	json               bool // every value JSON, strings too
}

// xmlCalls is the syntax of calls in shape x, surrounded by open and
// close and separated by sep.
func xmlCalls(x xmlShape, open, sep, close string) *callSyntax {
	return &callSyntax{open: open, sep: sep, close: close, call: x.call}
}

// call returns one call of t, its values' rules named after tool i.
func (x xmlShape) call(g *gbuild, t Tool, i int) (grammar.Expr, error) {
	syn := grammar.Text
	if x.json {
		syn = grammar.JSON
	}
	params, err := g.b.Params("t"+strconv.Itoa(i), t.Parameters, syn, func(key string) error {
		if !isName(key) {
			return fmt.Errorf("parameter %q: a name of letters, digits and _-.:/ is needed", key)
		}
		return nil
	})
	if err != nil {
		return grammar.Expr{}, err
	}
	var req, opt []grammar.Expr
	for _, p := range params {
		item := grammar.Seq(grammar.Lit(x.before+p.Key+x.mid), p.Value, grammar.Lit(x.after))
		if p.Required {
			req = append(req, item)
		} else {
			opt = append(opt, item)
		}
	}
	return grammar.Seq(grammar.Lit(x.open(t.Name)), grammar.Fields(req, opt, x.psep), grammar.Lit(x.close)), nil
}
