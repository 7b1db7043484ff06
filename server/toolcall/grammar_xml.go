package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The XML formats (qwen3_coder, glm45) write each parameter as bare text
// between tags, which Parser.finish types by the tool's schema: a
// parameter of type "string" is its text, others JSON. Their grammar
// writes the schema's properties in its order, the required ones always,
// string values as text without "</" (an enum's values as written),
// others as JSON valid under the property's schema. LFM2 writes Python
// calls, f(k=v, ...): its values are JSON (which Python literals read).

// xmlShape is how a format writes a call around its parameters.
type xmlShape struct {
	open  func(name string) string // GBNF before the parameters
	param func(key, value string) string
	psep  string // between parameters ("" for none)
	close string
	// listOpen, sep and listClose surround the calls and separate them.
	listOpen, sep, listClose string
	json                     bool // every value JSON, strings too
}

var xmlShapes = map[Format]xmlShape{
	Qwen3Coder: {
		open: func(name string) string { return lit("<tool_call>\n<function=" + name + ">\n") },
		param: func(key, value string) string {
			return cat(lit("<parameter="+key+">\n"), value, lit("\n</parameter>\n"))
		},
		close: "</function>\n</tool_call>",
		sep:   "\n",
	},
	GLM45: {
		open: func(name string) string { return lit("<tool_call>" + name + "\n") },
		param: func(key, value string) string {
			return cat(lit("<arg_key>"+key+"</arg_key>\n<arg_value>"), value, lit("</arg_value>\n"))
		},
		close: "</tool_call>",
		sep:   "\n",
	},
	LFM2: {
		open:     func(name string) string { return lit(name + "(") },
		param:    func(key, value string) string { return cat(lit(key+"="), value) },
		psep:     ", ",
		close:    ")",
		listOpen: "<|tool_call_start|>[", sep: ", ", listClose: "]<|tool_call_end|>",
		json: true,
	},
}

// xmlText is a bare text value: anything without "</".
const xmlText = `xml-text ::= ([^<] | "<" [^/])*` + "\n"

// xmlCall writes the rules of one tool's call in shape x, prefixed, and
// returns the call's GBNF.
func xmlCall(b *strings.Builder, x xmlShape, t Tool, prefix string, schemaGBNF func([]byte) (string, error)) (string, error) {
	params := bytes.TrimSpace(t.Parameters)
	var schema struct {
		Properties json.RawMessage            `json:"properties"`
		Required   []string                   `json:"required"`
		Defs       map[string]json.RawMessage `json:"$defs"`
		Defs2      map[string]json.RawMessage `json:"definitions"`
	}
	if len(params) > 0 && string(params) != "null" {
		if err := json.Unmarshal(params, &schema); err != nil {
			return "", fmt.Errorf("parameters: %v", err)
		}
	}
	keys, props, err := orderedObject(schema.Properties)
	if err != nil {
		return "", fmt.Errorf("parameters.properties: %v", err)
	}
	var req, opt []string // the parameters' GBNF
	for k, key := range keys {
		if !isName(key) {
			return "", fmt.Errorf("parameter %q: a name of letters, digits and _-.:/ is needed", key)
		}
		value, err := xmlValueRule(b, props[k], params, prefix+"p"+strconv.Itoa(k)+"-", x.json, schemaGBNF)
		if err != nil {
			return "", fmt.Errorf("parameter %q: %w", key, err)
		}
		if contains(schema.Required, key) {
			req = append(req, x.param(key, value))
		} else {
			opt = append(opt, x.param(key, value))
		}
	}
	return cat(x.open(t.Name), paramList(req, opt, x.psep), lit(x.close)), nil
}

// paramList is the required parameters in order, then any of the optional
// ones, in order, separated by sep.
func paramList(req, opt []string, sep string) string {
	if sep == "" {
		items := req
		for _, o := range opt {
			items = append(items, "("+o+")?")
		}
		return cat(items...)
	}
	s := lit(sep)
	if len(req) > 0 {
		items := []string{strings.Join(req, " "+s+" ")}
		for _, o := range opt {
			items = append(items, "("+cat(s, o)+")?")
		}
		return cat(items...)
	}
	if len(opt) == 0 {
		return ""
	}
	// None required: the first one present, then any of those after it.
	var alts []string
	for i, o := range opt {
		items := []string{o}
		for _, after := range opt[i+1:] {
			items = append(items, "("+cat(s, after)+")?")
		}
		alts = append(alts, cat(items...))
	}
	return "(" + strings.Join(alts, " | ") + ")?"
}

// xmlValueRule returns the GBNF of one parameter's value.
func xmlValueRule(b *strings.Builder, prop, root json.RawMessage, prefix string, asJSON bool, schemaGBNF func([]byte) (string, error)) (string, error) {
	var s struct {
		Type json.RawMessage   `json:"type"`
		Enum []json.RawMessage `json:"enum"`
		Defs json.RawMessage   `json:"$defs"`
	}
	if err := json.Unmarshal(prop, &s); err != nil {
		return "", err
	}
	var one string
	typed := json.Unmarshal(s.Type, &one) == nil
	if len(s.Enum) > 0 && (!typed || one == "string") && !asJSON {
		var alts []string
		for _, e := range s.Enum {
			var v string
			if json.Unmarshal(e, &v) != nil {
				alts = nil
				break
			}
			alts = append(alts, lit(v))
		}
		if len(alts) > 0 {
			return "(" + strings.Join(alts, " | ") + ")", nil
		}
	}
	if typed && one == "string" && !asJSON {
		return "xml-text", nil
	}
	src, err := schemaGBNF(withDefs(prop, root, s.Defs == nil))
	if err != nil {
		return "", err
	}
	if err := prefixRules(b, src, prefix); err != nil {
		return "", err
	}
	return prefix + "root", nil
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
