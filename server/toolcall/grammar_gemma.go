package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/troupe-llm/troupe/model/grammar"
)

// Gemma 4 writes a call as <|tool_call>call:NAME{key:value,...}<tool_call|>,
// its values as the template's format_argument does: strings between
// <|"|> quotes, numbers, true, false, null, {key:value} with bare keys,
// [a,b]. gemmaConv turns a JSON Schema into rules for that syntax: the
// types, enums and consts, objects' properties (the required ones always)
// and arrays' items; what else a schema says (bounds, patterns, anyOf,
// $ref) is not checked, the value is then any value.
type gemmaConv struct {
	g    *gbuild
	v    *gemmaValues
	name string // the tool's rules are named after it
	n    int
}

// gemmaValues are the shared rules of Gemma 4 values.
type gemmaValues struct{ str, integer, num, boolean, any, obj grammar.Expr }

func newGemmaValues(g *gbuild) *gemmaValues {
	L, C, S := grammar.Lit, grammar.Class, grammar.Seq
	text := g.textWithout("g-text", "<|")
	v := &gemmaValues{str: g.b.Rule("g-str", S(L(gemmaQuote), text, L(gemmaQuote)))}
	v.integer = g.b.Rule("g-int", S(grammar.Opt(L("-")), grammar.Alt(L("0"), S(C("1-9"), grammar.Repeat(C("0-9"), 0, 15)))))
	v.num = g.b.Rule("g-num", S(v.integer, grammar.Opt(S(L("."), grammar.Repeat(C("0-9"), 1, 16))),
		grammar.Opt(S(C("eE"), grammar.Opt(C("-+")), grammar.Repeat(C("0-9"), 1, 3)))))
	v.boolean = g.b.Rule("g-bool", grammar.Alt(L("true"), L("false")))
	key := g.b.Rule("g-key", S(C("a-zA-Z_"), grammar.Repeat(C("a-zA-Z0-9_"), 0, 63)))
	v.any, v.obj = g.b.Declare("g-any"), g.b.Declare("g-obj")
	arr := g.b.Declare("g-arr")
	g.b.Define(v.any, grammar.Alt(v.str, v.num, v.boolean, L("null"), v.obj, arr))
	g.b.Define(v.obj, S(L("{"), grammar.Opt(grammar.List(S(key, L(":"), v.any), L(","))), L("}")))
	g.b.Define(arr, gemmaArray(v.any))
	return v
}

// gemmaArray is [item,...].
func gemmaArray(item grammar.Expr) grammar.Expr {
	return grammar.Seq(grammar.Lit("["), grammar.Opt(grammar.List(item, grammar.Lit(","))), grammar.Lit("]"))
}

// gemmaMaxDepth bounds the schema nesting followed, deeper values are any
// value; gemmaMaxRules bounds the rules one tool's schema makes.
const (
	gemmaMaxDepth = 16
	gemmaMaxRules = 4096
)

// gemmaCalls is Gemma 4's syntax: one call after another, no separator.
var gemmaCalls = &callSyntax{call: func(g *gbuild, t Tool, i int) (grammar.Expr, error) {
	if g.gemma == nil {
		g.gemma = newGemmaValues(g)
	}
	c := &gemmaConv{g: g, v: g.gemma, name: "t" + strconv.Itoa(i)}
	args := grammar.Lit("{}")
	if p := t.Parameters; len(p) > 0 && string(p) != "null" {
		var err error
		if args, err = c.object(p, 0, true); err != nil {
			return grammar.Expr{}, err
		}
	}
	return grammar.Seq(grammar.Lit("<|tool_call>call:"+t.Name), args, grammar.Lit("<tool_call|>")), nil
}}

type gemmaSchema struct {
	Type       json.RawMessage   `json:"type"`
	Enum       []json.RawMessage `json:"enum"`
	Const      json.RawMessage   `json:"const"`
	Properties json.RawMessage   `json:"properties"`
	Required   []string          `json:"required"`
	Items      json.RawMessage   `json:"items"`
}

// value returns a value of schema raw.
func (c *gemmaConv) value(raw json.RawMessage, depth int) (grammar.Expr, error) {
	var s gemmaSchema
	if json.Unmarshal(raw, &s) != nil || depth > gemmaMaxDepth {
		return c.v.any, nil
	}
	if len(s.Const) > 0 {
		return gemmaLiteral(s.Const)
	}
	if len(s.Enum) > 0 {
		var alts []grammar.Expr
		for _, e := range s.Enum {
			a, err := gemmaLiteral(e)
			if err != nil {
				return grammar.Expr{}, err
			}
			alts = append(alts, a)
		}
		return grammar.Alt(alts...), nil
	}
	var types []string
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		types = []string{one}
	} else {
		json.Unmarshal(s.Type, &types)
	}
	if len(types) == 0 {
		return c.v.any, nil
	}
	var alts []grammar.Expr
	seen := map[string]bool{}
	for _, t := range types {
		if seen[t] {
			continue
		}
		seen[t] = true
		var alt grammar.Expr
		var err error
		switch t {
		case "string":
			alt = c.v.str
		case "integer":
			alt = c.v.integer
		case "number":
			alt = c.v.num
		case "boolean":
			alt = c.v.boolean
		case "null":
			alt = grammar.Lit("null")
		case "object":
			alt, err = c.object(raw, depth, false)
		case "array":
			alt, err = c.array(s.Items, depth)
		default:
			return grammar.Expr{}, fmt.Errorf("type %q", t)
		}
		if err != nil {
			return grammar.Expr{}, err
		}
		alts = append(alts, alt)
	}
	return grammar.Alt(alts...), nil
}

// array returns an array of items of schema items (any values without one).
func (c *gemmaConv) array(items json.RawMessage, depth int) (grammar.Expr, error) {
	item := c.v.any
	if len(items) > 0 && items[0] == '{' {
		var err error
		if item, err = c.value(items, depth+1); err != nil {
			return grammar.Expr{}, err
		}
	}
	return c.rule(gemmaArray(item))
}

// object returns an object of schema raw: its properties, the required
// ones always; one without properties is any object (the call's
// arguments: no argument).
func (c *gemmaConv) object(raw json.RawMessage, depth int, args bool) (grammar.Expr, error) {
	var s gemmaSchema
	if err := json.Unmarshal(raw, &s); err != nil {
		return grammar.Expr{}, fmt.Errorf("parameters: %v", err)
	}
	keys, props, err := orderedObject(s.Properties)
	if err != nil {
		return grammar.Expr{}, fmt.Errorf("properties: %v", err)
	}
	if len(keys) == 0 {
		if args {
			return grammar.Lit("{}"), nil
		}
		return c.v.obj, nil
	}
	var req, opt []grammar.Expr
	for k, key := range keys {
		if !isName(key) || strings.ContainsAny(key, ":") {
			return grammar.Expr{}, fmt.Errorf("property %q: a name of letters, digits and _-./ is needed", key)
		}
		v, err := c.value(props[k], depth+1)
		if err != nil {
			return grammar.Expr{}, fmt.Errorf("property %q: %w", key, err)
		}
		item := grammar.Seq(grammar.Lit(key+":"), v)
		if slices.Contains(s.Required, key) {
			req = append(req, item)
		} else {
			opt = append(opt, item)
		}
	}
	return c.rule(grammar.Seq(grammar.Lit("{"), paramList(req, opt, ","), grammar.Lit("}")))
}

// ErrTooComplex: a schema needs more rules than a gemma4 call grammar may
// have (gemmaMaxRules).
var ErrTooComplex = errors.New("grammar too complex")

// rule writes body as a new rule of the tool and returns it.
func (c *gemmaConv) rule(body grammar.Expr) (grammar.Expr, error) {
	if c.n++; c.n > gemmaMaxRules {
		return grammar.Expr{}, fmt.Errorf("the schema: %w", ErrTooComplex)
	}
	return c.g.b.Rule(c.name+"-v"+strconv.Itoa(c.n), body), nil
}

// gemmaLiteral is a JSON value (an enum's, a const) as Gemma 4 writes it.
func gemmaLiteral(v json.RawMessage) (grammar.Expr, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		if strings.Contains(s, gemmaQuote) {
			return grammar.Expr{}, fmt.Errorf("the value %q holds Gemma's quote", s)
		}
		return grammar.Lit(gemmaQuote + s + gemmaQuote), nil
	}
	var x any
	if json.Unmarshal(v, &x) != nil {
		return grammar.Expr{}, fmt.Errorf("the value %s", v)
	}
	switch x.(type) {
	case float64, bool, nil:
		return grammar.Lit(string(v)), nil
	}
	return grammar.Expr{}, fmt.Errorf("the value %s (an object or array in an enum)", v)
}
