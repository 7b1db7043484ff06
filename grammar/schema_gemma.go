package grammar

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// gemmaMaxDepth bounds the schema nesting followed, deeper values are any
// value; gemmaMaxRules bounds the rules one tool's schema makes.
const (
	gemmaMaxDepth = 16
	gemmaMaxRules = 4096
)

// GemmaArgs is the Gemma 4 object of a tool's arguments under its
// parameters schema (see Gemma), its rules named after name: "{}" for a
// schema without properties.
func (b *Builder) GemmaArgs(name string, schema []byte) (Expr, error) {
	if len(schema) == 0 || string(schema) == "null" {
		return Lit("{}"), nil
	}
	return (&gemmaConv{b: b, name: name}).object(schema, 0, true)
}

// gemmaValues are the shared rules of Gemma 4 values.
type gemmaValues struct{ str, integer, num, boolean, any, obj Expr }

// gemmaConv converts one tool's schema to Gemma 4's syntax.
type gemmaConv struct {
	b    *Builder
	name string // the tool's rules are named after it
	n    int    // rules made
}

// values are the builder's shared value rules, written the first time.
func (c *gemmaConv) values() *gemmaValues {
	if c.b.gemma != nil {
		return c.b.gemma
	}
	b := c.b
	v := &gemmaValues{str: b.Rule("g-str", Seq(Lit(GemmaQuote), b.Rule("g-text", TextWithout("<|")), Lit(GemmaQuote)))}
	v.integer = b.Rule("g-int", Seq(Opt(Lit("-")), Alt(Lit("0"), Seq(Class("1-9"), Repeat(Class("0-9"), 0, 15)))))
	v.num = b.Rule("g-num", Seq(v.integer, Opt(Seq(Lit("."), Repeat(Class("0-9"), 1, 16))),
		Opt(Seq(Class("eE"), Opt(Class("-+")), Repeat(Class("0-9"), 1, 3)))))
	v.boolean = b.Rule("g-bool", Alt(Lit("true"), Lit("false")))
	key := b.Rule("g-key", Seq(Class("a-zA-Z_"), Repeat(Class("a-zA-Z0-9_"), 0, 63)))
	v.any, v.obj = b.Declare("g-any"), b.Declare("g-obj")
	arr := b.Declare("g-arr")
	b.Define(v.any, Alt(v.str, v.num, v.boolean, Lit("null"), v.obj, arr))
	b.Define(v.obj, Seq(Lit("{"), Opt(List(Seq(key, Lit(":"), v.any), Lit(","))), Lit("}")))
	b.Define(arr, gemmaArray(v.any))
	c.b.gemma = v
	return v
}

// gemmaArray is [item,...].
func gemmaArray(item Expr) Expr { return Seq(Lit("["), Opt(List(item, Lit(","))), Lit("]")) }

type gemmaSchema struct {
	Type       json.RawMessage   `json:"type"`
	Enum       []json.RawMessage `json:"enum"`
	Const      json.RawMessage   `json:"const"`
	Properties json.RawMessage   `json:"properties"`
	Required   []string          `json:"required"`
	Items      json.RawMessage   `json:"items"`
}

// value returns a value of schema raw.
func (c *gemmaConv) value(raw json.RawMessage, depth int) (Expr, error) {
	var s gemmaSchema
	if json.Unmarshal(raw, &s) != nil || depth > gemmaMaxDepth {
		return c.values().any, nil
	}
	if len(s.Const) > 0 {
		return gemmaLiteral(s.Const)
	}
	if len(s.Enum) > 0 {
		var alts []Expr
		for _, e := range s.Enum {
			a, err := gemmaLiteral(e)
			if err != nil {
				return Expr{}, err
			}
			alts = append(alts, a)
		}
		return Alt(alts...), nil
	}
	var types []string
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		types = []string{one}
	} else {
		json.Unmarshal(s.Type, &types)
	}
	if len(types) == 0 {
		return c.values().any, nil
	}
	var alts []Expr
	seen := map[string]bool{}
	for _, t := range types {
		if seen[t] {
			continue
		}
		seen[t] = true
		alt, err := c.typed(t, raw, s.Items, depth)
		if err != nil {
			return Expr{}, err
		}
		alts = append(alts, alt)
	}
	return Alt(alts...), nil
}

// typed is a value of type t of schema raw.
func (c *gemmaConv) typed(t string, raw, items json.RawMessage, depth int) (Expr, error) {
	v := c.values()
	switch t {
	case "string":
		return v.str, nil
	case "integer":
		return v.integer, nil
	case "number":
		return v.num, nil
	case "boolean":
		return v.boolean, nil
	case "null":
		return Lit("null"), nil
	case "object":
		return c.object(raw, depth, false)
	case "array":
		item := v.any
		if len(items) > 0 && items[0] == '{' {
			var err error
			if item, err = c.value(items, depth+1); err != nil {
				return Expr{}, err
			}
		}
		return c.rule(gemmaArray(item))
	}
	return Expr{}, fmt.Errorf("type %q", t)
}

// object returns an object of schema raw: its properties, the required
// ones always; one without properties is any object (the call's
// arguments: no argument).
func (c *gemmaConv) object(raw json.RawMessage, depth int, args bool) (Expr, error) {
	keys, props, required, err := properties(raw)
	if err != nil {
		return Expr{}, err
	}
	if len(keys) == 0 {
		if args {
			return Lit("{}"), nil
		}
		return c.values().obj, nil
	}
	var req, opt []Expr
	for k, key := range keys {
		if !gemmaKey(key) {
			return Expr{}, fmt.Errorf("property %q: a name of letters, digits and _-./ is needed", key)
		}
		v, err := c.value(props[k], depth+1)
		if err != nil {
			return Expr{}, fmt.Errorf("property %q: %w", key, err)
		}
		item := Seq(Lit(key+":"), v)
		if slices.Contains(required, key) {
			req = append(req, item)
		} else {
			opt = append(opt, item)
		}
	}
	return c.rule(Seq(Lit("{"), Fields(req, opt, ","), Lit("}")))
}

// gemmaKey reports whether a property's key can be written bare: letters,
// digits and _-./
func gemmaKey(key string) bool {
	other := func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_-./", r)
	}
	return key != "" && strings.IndexFunc(key, other) < 0
}

// rule writes body as a new rule of the tool and returns it.
func (c *gemmaConv) rule(body Expr) (Expr, error) {
	if c.n++; c.n > gemmaMaxRules {
		return Expr{}, fmt.Errorf("the schema: %w", ErrTooComplex)
	}
	return c.b.Rule(c.name+"-v"+strconv.Itoa(c.n), body), nil
}

// gemmaLiteral is a JSON value (an enum's, a const) as Gemma 4 writes it.
func gemmaLiteral(v json.RawMessage) (Expr, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		if strings.Contains(s, GemmaQuote) {
			return Expr{}, fmt.Errorf("the value %q holds Gemma's quote", s)
		}
		return Lit(GemmaQuote + s + GemmaQuote), nil
	}
	var x any
	if json.Unmarshal(v, &x) != nil {
		return Expr{}, fmt.Errorf("the value %s", v)
	}
	switch x.(type) {
	case float64, bool, nil:
		return Lit(string(v)), nil
	}
	return Expr{}, fmt.Errorf("the value %s (an object or array in an enum)", v)
}
