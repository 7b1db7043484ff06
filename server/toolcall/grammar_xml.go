package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/troupe-llm/troupe/model/grammar"
)

// The XML formats (qwen3_coder, glm45) write each parameter as bare text
// between tags, which Parser.finish types by the tool's schema: a
// parameter of type "string" is its text, others JSON. Their grammar
// writes the schema's properties in its order, the required ones always,
// string values as text without "</" (an enum's values as written),
// others as JSON valid under the property's schema. LFM2 writes Python
// calls, f(k=v, ...): its values are JSON (which Python literals read).

// xmlShape is how a format writes a call: open(NAME), then each
// parameter as before KEY mid VALUE after, psep between them, then close.
type xmlShape struct {
	open               func(name string) string
	before, mid, after string
	psep               string // between parameters ("" for none)
	close              string
	json               bool // every value JSON, strings too
}

// param is one parameter of the shape.
func (x xmlShape) param(key string, value grammar.Expr) grammar.Expr {
	return grammar.Seq(grammar.Lit(x.before+key+x.mid), value, grammar.Lit(x.after))
}

// xmlCalls is the syntax of calls in shape x, surrounded by open and
// close and separated by sep.
func xmlCalls(x xmlShape, open, sep, close string) *callSyntax {
	return &callSyntax{open: open, sep: sep, close: close, call: x.call}
}

// call returns one call of t, its values' rules named after tool i.
func (x xmlShape) call(g *gbuild, t Tool, i int) (grammar.Expr, error) {
	params := bytes.TrimSpace(t.Parameters)
	var schema struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if len(params) > 0 && string(params) != "null" {
		if err := json.Unmarshal(params, &schema); err != nil {
			return grammar.Expr{}, fmt.Errorf("parameters: %v", err)
		}
	}
	keys, props, err := orderedObject(schema.Properties)
	if err != nil {
		return grammar.Expr{}, fmt.Errorf("parameters.properties: %v", err)
	}
	var req, opt []grammar.Expr
	for k, key := range keys {
		if !isName(key) {
			return grammar.Expr{}, fmt.Errorf("parameter %q: a name of letters, digits and _-.:/ is needed", key)
		}
		value, err := x.value(g, props[k], params, "t"+strconv.Itoa(i)+"-p"+strconv.Itoa(k))
		if err != nil {
			return grammar.Expr{}, fmt.Errorf("parameter %q: %w", key, err)
		}
		if slices.Contains(schema.Required, key) {
			req = append(req, x.param(key, value))
		} else {
			opt = append(opt, x.param(key, value))
		}
	}
	return grammar.Seq(grammar.Lit(x.open(t.Name)), paramList(req, opt, x.psep), grammar.Lit(x.close)), nil
}

// paramList is the required parameters in order, then any of the optional
// ones, in order, separated by sep.
func paramList(req, opt []grammar.Expr, sep string) grammar.Expr {
	s := grammar.Lit(sep)
	var items []grammar.Expr
	for i, r := range req {
		if i > 0 {
			items = append(items, s)
		}
		items = append(items, r)
	}
	if len(req) > 0 || sep == "" {
		for _, o := range opt {
			items = append(items, grammar.Opt(grammar.Seq(s, o)))
		}
		return grammar.Seq(items...)
	}
	if len(opt) == 0 {
		return grammar.Expr{}
	}
	// None required: the first one present, then any of those after it.
	var alts []grammar.Expr
	for i, o := range opt {
		items := []grammar.Expr{o}
		for _, after := range opt[i+1:] {
			items = append(items, grammar.Opt(grammar.Seq(s, after)))
		}
		alts = append(alts, grammar.Seq(items...))
	}
	return grammar.Opt(grammar.Alt(alts...))
}

// value returns one parameter's value, its rules named after name.
func (x xmlShape) value(g *gbuild, prop, root json.RawMessage, name string) (grammar.Expr, error) {
	var s struct {
		Type json.RawMessage   `json:"type"`
		Enum []json.RawMessage `json:"enum"`
		Defs json.RawMessage   `json:"$defs"`
	}
	if err := json.Unmarshal(prop, &s); err != nil {
		return grammar.Expr{}, err
	}
	var one string
	typed := json.Unmarshal(s.Type, &one) == nil
	if len(s.Enum) > 0 && (!typed || one == "string") && !x.json {
		var alts []grammar.Expr
		for _, e := range s.Enum {
			var v string
			if json.Unmarshal(e, &v) != nil {
				alts = nil
				break
			}
			alts = append(alts, grammar.Lit(v))
		}
		if len(alts) > 0 {
			return grammar.Alt(alts...), nil
		}
	}
	if typed && one == "string" && !x.json {
		return g.textWithout("xml-text", "</"), nil
	}
	return g.b.Schema(name, withDefs(prop, root, s.Defs == nil))
}

// withDefs is a property's schema with the root schema's $defs and
// definitions, so that its $refs resolve.
func withDefs(prop, root json.RawMessage, add bool) []byte {
	var r struct {
		Defs  json.RawMessage `json:"$defs"`
		Defs2 json.RawMessage `json:"definitions"`
	}
	json.Unmarshal(root, &r)
	p := bytes.TrimSpace(prop)
	for _, d := range []struct {
		key string
		v   json.RawMessage
	}{{"$defs", r.Defs}, {"definitions", r.Defs2}} {
		if !add || len(d.v) == 0 || len(p) < 2 || p[0] != '{' {
			continue
		}
		rest := bytes.TrimSpace(p[1:])
		head := `{"` + d.key + `": ` + string(d.v)
		if len(rest) > 0 && rest[0] != '}' {
			head += ", "
		}
		p = append([]byte(head), rest...)
	}
	return p
}

// orderedObject returns a JSON object's keys in order and their values.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("expected an object")
	}
	var keys []string
	var vals []json.RawMessage
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys, vals = append(keys, tok.(string)), append(vals, v)
	}
	return keys, vals, nil
}
