package grammar

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// UnsupportedError names a JSON Schema feature outside the supported subset.
type UnsupportedError struct {
	Path    string // JSON pointer of the schema holding it
	Feature string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("json schema: %s at %q is not supported", e.Feature, e.Path)
}

// FromJSONSchema compiles a grammar for the JSON documents a schema accepts:
// the subset OpenAI's strict mode and vLLM accept (see JSONSchemaGBNF).
func FromJSONSchema(schema []byte) (*Grammar, error) {
	src, err := JSONSchemaGBNF(schema)
	if err != nil {
		return nil, err
	}
	return Compile(src)
}

// JSONObject compiles a grammar for any JSON object (response_format
// json_object).
func JSONObject() (*Grammar, error) { return FromJSONSchema([]byte(`{"type": "object"}`)) }

// JSONSchemaGBNF converts a JSON Schema to GBNF, after llama.cpp's
// json-schema-to-grammar. Supported: type (one or a list), object with
// properties (in their order), required and additionalProperties (absent or
// false: no other property, as in strict mode; true or a schema: only on an
// object without properties), array with items or prefixItems, minItems,
// maxItems, string with minLength, maxLength, pattern and the formats date,
// time, date-time, uuid, email, hostname, ipv4, uri, byte (base64), integer with minimum, maximum and
// their exclusive forms, number with minimum 0, boolean, null, enum, const,
// anyOf, oneOf (with branches provably disjoint: see oneOfDisjoint), $ref to #/$defs/... or #/definitions/..., and annotations.
// Anything else is an *UnsupportedError naming it.
func JSONSchemaGBNF(schema []byte) (string, error) {
	return NewConverter(context.Background()).JSONSchemaGBNF(schema)
}

// JSONSchemaGBNF converts a schema as the package's JSONSchemaGBNF does,
// charging v's budget. Each schema node is converted once (memoized by
// node), so the work is about linear in the schema's size.
func (v *Converter) JSONSchemaGBNF(schema []byte) (string, error) {
	b := NewBuilder(v)
	name, err := v.schema(b, "root", schema)
	if err != nil {
		return "", err
	}
	if name.s != "root" {
		b.Rule("root", name)
	}
	var s strings.Builder
	b.write(&s)
	return s.String(), nil
}

// schema converts a schema into b's rules, its own named after name, and
// returns the expression of a value it accepts.
func (v *Converter) schema(b *Builder, name string, schema []byte) (Expr, error) {
	if len(schema) > MaxSourceBytes {
		return Expr{}, fmt.Errorf("json schema: %d bytes: %w", len(schema), ErrTooComplex)
	}
	if err := v.spend(0, len(schema), ""); err != nil { // its parse (many schemas, as a tool's properties with the $defs beside each)
		return Expr{}, err
	}
	root, err := parseOrdered(schema)
	if err != nil {
		return Expr{}, fmt.Errorf("json schema: %w", err)
	}
	c := &schemaConv{v: v, b: b, root: root, refs: map[string]Expr{}, memo: map[*object]Expr{}}
	c.addRule("space", spaceBody)
	e, err := c.visit(root, name, "")
	if err != nil {
		return Expr{}, err
	}
	if c.err != nil {
		return Expr{}, c.err
	}
	return e, nil
}

type schemaConv struct {
	v    *Converter
	b    *Builder // the rules written
	root any
	refs map[string]Expr  // $ref -> its rule
	memo map[*object]Expr // schema node converted -> its rule
	size int
	err  error // the budget spent (sticky)
}

// addRule adds name ::= body and returns a reference to it; a name taken
// by another body gets a suffix.
func (c *schemaConv) addRule(name string, body Expr) Expr {
	if err := c.v.spend(0, len(body.s), name); err != nil && c.err == nil {
		c.err = err
	}
	rule := c.b.Rule(name, body)
	c.size += len(rule.s) + len(body.s)
	return rule
}

var invalidRuleChars = regexp.MustCompile(`[^a-zA-Z0-9-]+`)

// unsupported lists the validation keywords outside the subset: a schema
// using one is refused. Other unknown keywords (annotations, vendor
// extensions such as x-...) are ignored, as JSON Schema says.
var unsupported = map[string]bool{
	"not": true, "if": true, "then": true, "else": true, "patternProperties": true,
	"dependencies": true, "dependentRequired": true, "dependentSchemas": true, "propertyNames": true,
	"unevaluatedProperties": true, "unevaluatedItems": true, "contains": true, "minContains": true,
	"maxContains": true, "multipleOf": true, "minProperties": true, "maxProperties": true,
	"additionalItems": true, "$dynamicRef": true, "$recursiveRef": true, "contentSchema": true,
}

// visit returns the rule (or primitive) matching schema s, named after name.
// A node of the parsed schema is converted once: its rule does not depend
// on where the node is reached from (the type-list copies and merged
// branches made on the way are new nodes, but their children are the
// schema's own, so each is converted once too).
func (c *schemaConv) visit(s any, name, path string) (Expr, error) {
	if strings.Count(path, "/") > 64 || c.size > MaxSourceBytes {
		return Expr{}, fmt.Errorf("json schema: at %q: %w", path, ErrTooComplex)
	}
	if c.err != nil {
		return Expr{}, c.err
	}
	if err := c.v.spend(1, 0, path); err != nil {
		return Expr{}, err
	}
	if o, ok := s.(*object); ok {
		if rule, ok := c.memo[o]; ok {
			return rule, nil
		}
		rule, err := c.visitNode(s, name, path)
		if err == nil {
			err = c.err
		}
		if err != nil {
			return Expr{}, err
		}
		c.memo[o] = rule
		return rule, nil
	}
	return c.visitNode(s, name, path)
}

// visitNode converts one schema node (visit without the memo).
func (c *schemaConv) visitNode(s any, name, path string) (Expr, error) {
	name = invalidRuleChars.ReplaceAllString(name, "-")
	if b, ok := s.(bool); ok {
		if !b {
			return Expr{}, &UnsupportedError{path, "the schema false"}
		}
		return c.primitive("value"), nil
	}
	o, ok := s.(*object)
	if !ok {
		return Expr{}, fmt.Errorf("json schema: at %q: a schema must be an object or a boolean", path)
	}
	for _, k := range o.keys {
		if unsupported[k] && !(k == "minProperties" && o.vals[k] == json.Number("0")) {
			return Expr{}, &UnsupportedError{path, fmt.Sprintf("keyword %q", k)}
		}
		if k == "uniqueItems" && o.vals[k] == true {
			return Expr{}, &UnsupportedError{path, `keyword "uniqueItems"`}
		}
	}
	body, err := c.body(o, name, path)
	if err != nil {
		return Expr{}, err
	}
	if _, isPrim := primitives[body.s]; isPrim {
		return body, nil
	}
	return c.addRule(name, body), nil
}

func (c *schemaConv) body(o *object, name, path string) (Expr, error) {
	if all, ok := o.get("allOf"); ok {
		merged, err := c.mergeAllOf(o, all, path)
		if err != nil {
			return Expr{}, err
		}
		return c.body(merged, name, path)
	}
	if ref, ok := o.get("$ref"); ok {
		return c.ref(ref, path)
	}
	if v, ok := o.get("const"); ok {
		if !typeAllows(o, v) {
			return nothing, nil
		}
		return Seq(Lit(encodeJSON(v)), space), nil
	}
	if v, ok := o.get("enum"); ok {
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return Expr{}, fmt.Errorf("json schema: at %q: enum must be a non-empty array", path)
		}
		var lits []Expr
		for _, x := range list {
			if typeAllows(o, x) {
				lits = append(lits, Lit(encodeJSON(x)))
			}
		}
		if len(lits) == 0 { // nothing can match: pruned at compile, or an error there
			return nothing, nil
		}
		return Seq(paren(alts(lits...)), space), nil
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if v, ok := o.get(k); ok {
			return c.branches(o, k, v, name, path)
		}
	}
	t, _ := o.get("type")
	if list, ok := t.([]any); ok {
		return c.types(o, list, name, path)
	}
	typ, _ := t.(string)
	if typ == "" {
		switch {
		case has(o, "properties", "additionalProperties", "required"):
			typ = "object"
		case has(o, "items", "prefixItems", "minItems", "maxItems"):
			typ = "array"
		case has(o, "minLength", "maxLength", "pattern", "format"):
			typ = "string"
		case has(o, "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
			typ = "number"
		default:
			return c.primitive("value"), nil
		}
	}
	switch typ {
	case "object":
		return c.object(o, name, path)
	case "array":
		return c.array(o, name, path)
	case "string":
		return c.str(o, name, path)
	case "integer", "number":
		return c.number(o, typ, path)
	case "boolean", "null":
		return c.primitive(typ), nil
	}
	return Expr{}, &UnsupportedError{path, fmt.Sprintf("type %q", typ)}
}

// branches is the alternatives of an anyOf or oneOf (k), each merged
// with the schema's other keywords.
func (c *schemaConv) branches(o *object, k string, v any, name, path string) (Expr, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return Expr{}, fmt.Errorf("json schema: at %q: %s must be a non-empty array", path, k)
	}
	branches := make([]any, len(list))
	for i, x := range list {
		branches[i] = mergeSiblings(o, k, x)
	}
	if k == "oneOf" {
		if err := c.oneOfDisjoint(branches, path); err != nil {
			return Expr{}, err
		}
	}
	out := make([]Expr, len(list))
	for i, x := range branches {
		var err error
		if out[i], err = c.visit(x, name+"-"+strconv.Itoa(i), path+"/"+k+"/"+strconv.Itoa(i)); err != nil {
			return Expr{}, err
		}
	}
	return alts(out...), nil
}

// types is the alternatives of a list of types, each the schema with
// that one type.
func (c *schemaConv) types(o *object, list []any, name, path string) (Expr, error) {
	out := make([]Expr, len(list))
	for i, x := range list {
		cp := &object{keys: slices.Clone(o.keys), vals: map[string]any{}}
		for k, v := range o.vals {
			cp.vals[k] = v
		}
		cp.vals["type"] = x
		var err error
		if out[i], err = c.visit(cp, name+"-"+fmt.Sprint(x), path); err != nil {
			return Expr{}, err
		}
	}
	return alts(out...), nil
}

func has(o *object, keys ...string) bool {
	for _, k := range keys {
		if _, ok := o.vals[k]; ok {
			return true
		}
	}
	return false
}

func (c *schemaConv) ref(v any, path string) (Expr, error) {
	ref, _ := v.(string)
	if name, ok := c.refs[ref]; ok {
		return name, nil
	}
	target, err := c.resolve(ref, path)
	if err != nil {
		return Expr{}, err
	}
	last := ref[strings.LastIndex(ref, "/")+1:]
	if last == "" || last == "#" {
		last = "root"
	}
	name := c.b.Declare("ref-" + last)
	c.refs[ref] = name
	rule, err := c.visit(target, name.s+"-body", ref)
	if err != nil {
		return Expr{}, err
	}
	c.b.Define(name, rule)
	return name, nil
}

// intOf reads an integer keyword; ok is false when absent.
func intOf(o *object, k, path string) (n int, ok bool, err error) {
	v, ok := o.get(k)
	if !ok {
		return 0, false, nil
	}
	num, isNum := v.(json.Number)
	i, perr := strconv.ParseInt(string(num), 10, 32)
	if !isNum || perr != nil || i < 0 {
		return 0, false, fmt.Errorf("json schema: at %q: %s must be a non-negative integer", path, k)
	}
	return int(i), true, nil
}

// minMax reads a minimum and a maximum count (minItems and maxItems, say),
// each a non-negative integer; hi is -1 without a maximum.
func minMax(o *object, minKey, maxKey, path string) (lo, hi int, err error) {
	lo, _, err = intOf(o, minKey, path)
	if err != nil {
		return 0, 0, err
	}
	hi, hasHi, err := intOf(o, maxKey, path)
	if err != nil || !hasHi {
		return lo, -1, err
	}
	return lo, hi, nil
}

// repetition is item repeated lo..hi times (hi < 0: unbounded), separated by
// sep (none when empty), as llama.cpp's build_repetition.
func repetition(item Expr, lo, hi int, sep Expr) Expr {
	if hi == 0 {
		return hole
	}
	if lo == 0 && hi == 1 {
		return Opt(item)
	}
	if sep.Empty() {
		return Repeat(item, lo, hi)
	}
	h := hi
	if hi > 0 {
		h = hi - 1
	}
	r := Seq(item, repetition(paren(Seq(sep, item)), max(lo-1, 0), h, Expr{}))
	if lo == 0 {
		r = Opt(paren(r))
	}
	return r
}

// nothing is a class of no character: a schema no value matches (pruned
// at compile, or an error there).
var nothing = Class(`^\x00-\U0010FFFF`)
