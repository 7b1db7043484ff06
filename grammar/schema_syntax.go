package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// Syntax is how the values of a tool's parameters are written: as JSON,
// or in a model's own syntax.
type Syntax uint8

const (
	// JSON values, valid under their schemas (Builder.Schema's).
	JSON Syntax = iota
	// Text writes strings bare, as text without "</" (an enum's values as
	// written), other values as JSON: the XML formats' parameters.
	Text
)

// GemmaQuote is Gemma 4's string quote. Gemma 4 writes its values as its
// template's format_argument does (GemmaArgs): strings between GemmaQuote,
// numbers, true, false, null, {key:value} with bare keys, [a,b]. Of a
// schema GemmaArgs follows the types, enums and consts, objects'
// properties (the required ones always) and arrays' items; what else it
// says (bounds, patterns, anyOf, $ref) is not checked: the value is then
// any value.
const GemmaQuote = `<|"|>`

// Param is one property of an object schema: its key, its value's
// expression, and whether it is required.
type Param struct {
	Key      string
	Value    Expr
	Required bool
}

// Params converts the properties of an object schema (a tool's
// parameters), in order, each value in syntax syn, its rules named after
// name. check checks each key before its value is
// converted. A schema without properties has none.
func (b *Builder) Params(name string, schema []byte, syn Syntax, check func(key string) error) ([]Param, error) {
	schema = bytes.TrimSpace(schema)
	keys, props, required, err := properties(schema)
	if err != nil {
		return nil, err
	}
	var params []Param
	for k, key := range keys {
		if err := check(key); err != nil {
			return nil, err
		}
		v, err := b.textValue(props[k], schema, name+"-p"+strconv.Itoa(k), syn == JSON)
		if err != nil {
			return nil, fmt.Errorf("parameter %q: %w", key, err)
		}
		params = append(params, Param{key, v, slices.Contains(required, key)})
	}
	return params, nil
}

// properties reads an object schema's properties, in order, and its
// required keys.
func properties(schema []byte) (keys []string, props []json.RawMessage, required []string, err error) {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if len(schema) > 0 && string(schema) != "null" {
		if err := json.Unmarshal(schema, &s); err != nil {
			return nil, nil, nil, fmt.Errorf("parameters: %v", err)
		}
	}
	keys, props, err = orderedObject(s.Properties)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("parameters.properties: %v", err)
	}
	return keys, props, s.Required, nil
}

// Fields is the required items in order, then any of the optional ones,
// in order, sep between them; with none required, the first optional one
// present, then any of those after it.
func Fields(req, opt []Expr, sep string) Expr {
	s := Lit(sep)
	var items []Expr
	for i, r := range req {
		if i > 0 {
			items = append(items, s)
		}
		items = append(items, r)
	}
	if len(req) > 0 || sep == "" {
		for _, o := range opt {
			items = append(items, Opt(Seq(s, o)))
		}
		return Seq(items...)
	}
	var alts []Expr
	for i, o := range opt {
		items := []Expr{o}
		for _, after := range opt[i+1:] {
			items = append(items, Opt(Seq(s, after)))
		}
		alts = append(alts, Seq(items...))
	}
	if len(alts) == 0 {
		return Expr{}
	}
	return Opt(Alt(alts...))
}

// textValue is a Text value of schema prop (a JSON one with asJSON);
// root's $defs resolve its $refs.
func (b *Builder) textValue(prop, root json.RawMessage, name string, asJSON bool) (Expr, error) {
	var s struct {
		Type json.RawMessage   `json:"type"`
		Enum []json.RawMessage `json:"enum"`
	}
	if err := json.Unmarshal(prop, &s); err != nil {
		return Expr{}, err
	}
	var one string
	typed := json.Unmarshal(s.Type, &one) == nil
	if len(s.Enum) > 0 && (!typed || one == "string") && !asJSON {
		var alts []Expr
		for _, e := range s.Enum {
			var v string
			if json.Unmarshal(e, &v) != nil {
				alts = nil
				break
			}
			alts = append(alts, Lit(v))
		}
		if len(alts) > 0 {
			return Alt(alts...), nil
		}
	}
	if typed && one == "string" && !asJSON {
		return b.Rule("xml-text", TextWithout("</")), nil
	}
	return b.Schema(name, withDefs(prop, root))
}

// withDefs is a property's schema with the root schema's $defs and
// definitions (where it has none of its own), so that its $refs resolve.
func withDefs(prop, root json.RawMessage) []byte {
	var r, own struct {
		Defs  json.RawMessage `json:"$defs"`
		Defs2 json.RawMessage `json:"definitions"`
	}
	json.Unmarshal(root, &r)
	json.Unmarshal(prop, &own)
	p := bytes.TrimSpace(prop)
	for _, d := range []struct {
		key string
		v   json.RawMessage
	}{{"$defs", r.Defs}, {"definitions", r.Defs2}} {
		if own.Defs != nil || len(d.v) == 0 || len(p) < 2 || p[0] != '{' {
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
