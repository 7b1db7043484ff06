package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Gemma 4 writes a call as <|tool_call>call:NAME{key:value,...}<tool_call|>,
// its values as the template's format_argument does: strings between
// <|"|> quotes, numbers, true, false, null, {key:value} with bare keys,
// [a,b]. gemmaConv turns a JSON Schema into rules for that syntax: the
// types, enums and consts, objects' properties (the required ones always)
// and arrays' items; what else a schema says (bounds, patterns, anyOf,
// $ref) is not checked, the value is then any value.
type gemmaConv struct {
	b      *strings.Builder
	prefix string
	n      int
}

// gemmaRules are the shared rules of Gemma 4 values.
const gemmaRules = `g-text ::= ([^<] | "<" [^|])*
g-str ::= "<|\"|>" g-text "<|\"|>"
g-int ::= "-"? ("0" | [1-9] [0-9]{0,15})
g-num ::= g-int ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
g-bool ::= "true" | "false"
g-key ::= [a-zA-Z_] [a-zA-Z0-9_]{0,63}
g-any ::= g-str | g-num | g-bool | "null" | g-obj | g-arr
g-obj ::= "{" (g-key ":" g-any ("," g-key ":" g-any)*)? "}"
g-arr ::= "[" (g-any ("," g-any)*)? "]"
`

// gemmaMaxDepth bounds the schema nesting followed, deeper values are any
// value; gemmaMaxRules bounds the rules one tool's schema makes.
const (
	gemmaMaxDepth = 16
	gemmaMaxRules = 4096
)

// call returns the GBNF of one call of t.
func (g *gemmaConv) call(t Tool) (string, error) {
	args := "\"{}\""
	if p := t.Parameters; len(p) > 0 && string(p) != "null" {
		var err error
		if args, err = g.object(p, 0, true); err != nil {
			return "", err
		}
	}
	return cat(lit("<|tool_call>call:"+t.Name), args, lit("<tool_call|>")), nil
}

type gemmaSchema struct {
	Type       json.RawMessage   `json:"type"`
	Enum       []json.RawMessage `json:"enum"`
	Const      json.RawMessage   `json:"const"`
	Properties json.RawMessage   `json:"properties"`
	Required   []string          `json:"required"`
	Items      json.RawMessage   `json:"items"`
}

// value returns the GBNF of a value of schema raw.
func (g *gemmaConv) value(raw json.RawMessage, depth int) (string, error) {
	var s gemmaSchema
	if json.Unmarshal(raw, &s) != nil || depth > gemmaMaxDepth {
		return "g-any", nil
	}
	if len(s.Const) > 0 {
		return gemmaLiteral(s.Const)
	}
	if len(s.Enum) > 0 {
		var alts []string
		for _, e := range s.Enum {
			a, err := gemmaLiteral(e)
			if err != nil {
				return "", err
			}
			alts = append(alts, a)
		}
		return "(" + strings.Join(alts, " | ") + ")", nil
	}
	var types []string
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		types = []string{one}
	} else {
		json.Unmarshal(s.Type, &types)
	}
	if len(types) == 0 {
		return "g-any", nil
	}
	var alts []string
	seen := map[string]bool{}
	for _, t := range types {
		if seen[t] {
			continue
		}
		seen[t] = true
		switch t {
		case "string":
			alts = append(alts, "g-str")
		case "integer":
			alts = append(alts, "g-int")
		case "number":
			alts = append(alts, "g-num")
		case "boolean":
			alts = append(alts, "g-bool")
		case "null":
			alts = append(alts, `"null"`)
		case "object":
			o, err := g.object(raw, depth, false)
			if err != nil {
				return "", err
			}
			alts = append(alts, o)
		case "array":
			item := "g-any"
			if len(s.Items) > 0 && s.Items[0] == '{' {
				var err error
				if item, err = g.value(s.Items, depth+1); err != nil {
					return "", err
				}
			}
			arr, err := g.rule(`"[" (` + item + ` ("," ` + item + `)*)? "]"`)
			if err != nil {
				return "", err
			}
			alts = append(alts, arr)
		default:
			return "", fmt.Errorf("type %q", t)
		}
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return "(" + strings.Join(alts, " | ") + ")", nil
}

// object returns the GBNF of an object of schema raw: its properties, the
// required ones always; one without properties is any object (the call's
// arguments: no argument).
func (g *gemmaConv) object(raw json.RawMessage, depth int, args bool) (string, error) {
	var s gemmaSchema
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("parameters: %v", err)
	}
	keys, props, err := orderedObject(s.Properties)
	if err != nil {
		return "", fmt.Errorf("properties: %v", err)
	}
	if len(keys) == 0 {
		if args {
			return `"{}"`, nil
		}
		return "g-obj", nil
	}
	var req, opt []string
	for k, key := range keys {
		if !isName(key) || strings.ContainsAny(key, ":") {
			return "", fmt.Errorf("property %q: a name of letters, digits and _-./ is needed", key)
		}
		v, err := g.value(props[k], depth+1)
		if err != nil {
			return "", fmt.Errorf("property %q: %w", key, err)
		}
		item := cat(lit(key+":"), v)
		if contains(s.Required, key) {
			req = append(req, item)
		} else {
			opt = append(opt, item)
		}
	}
	return g.rule(cat(lit("{"), paramList(req, opt, ","), lit("}")))
}

// ErrTooComplex: a schema needs more rules than a gemma4 call grammar may
// have (gemmaMaxRules).
var ErrTooComplex = errors.New("grammar too complex")

// rule writes body as a new rule and returns its name.
func (g *gemmaConv) rule(body string) (string, error) {
	if g.n++; g.n > gemmaMaxRules {
		return "", fmt.Errorf("the schema: %w", ErrTooComplex)
	}
	name := g.prefix + "v" + strconv.Itoa(g.n)
	fmt.Fprintf(g.b, "%s ::= %s\n", name, body)
	return name, nil
}

// gemmaLiteral is a JSON value (an enum's, a const) as Gemma 4 writes it.
func gemmaLiteral(v json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		if strings.Contains(s, `<|"|>`) {
			return "", fmt.Errorf("the value %q holds Gemma's quote", s)
		}
		return lit(`<|"|>` + s + `<|"|>`), nil
	}
	var x any
	if json.Unmarshal(v, &x) != nil {
		return "", fmt.Errorf("the value %s", v)
	}
	switch x.(type) {
	case float64, bool, nil:
		return lit(string(v)), nil
	}
	return "", fmt.Errorf("the value %s (an object or array in an enum)", v)
}
