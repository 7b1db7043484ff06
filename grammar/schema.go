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

// space is the whitespace after a value, as llama.cpp's SPACE_RULE; its
// body spaceBody is a constant, as the primitives are.
var (
	space     = ruleRef("space")
	spaceBody = Expr{s: `| " " | "\n" [ \t]{0,20}`, alt: true}
)

type schemaConv struct {
	v    *Converter
	b    *Builder // the rules written
	root any
	refs map[string]Expr  // $ref -> its rule
	memo map[*object]Expr // schema node converted -> its rule
	size int
	err  error // the budget spent (sticky)
}

// A primitive is a shared rule of JSON values: its body and the
// primitives it references.
type primitive struct {
	body Expr
	deps string
}

// primitives are llama.cpp's PRIMITIVE_RULES (values end with space), in
// its layout.
var primitives = primitiveRules()

func primitiveRules() map[string]primitive {
	C, L, r := Class, Lit, ruleRef
	hex := C("0-9a-fA-F")
	// pair is a pair of an object: a key and a value.
	pair := Seq(r("string"), L(":"), space, r("value"))
	hour := alts(Seq(C("01"), C("0-9")), Seq(L("2"), C("0-3")))
	labels := Seq(r("email-label"), Repeat(paren(Seq(L("."), r("email-label"))), 0, 3))
	b64 := C("A-Za-z0-9+/")
	lits := func(ss ...string) Expr {
		out := make([]Expr, len(ss))
		for i, s := range ss {
			out[i] = L(s)
		}
		return alts(out...)
	}
	return map[string]primitive{
		"boolean":       {Seq(paren(lits("true", "false")), space), ""},
		"null":          {Seq(L("null"), space), ""},
		"decimal-part":  {Repeat(C("0-9"), 1, 16), ""},
		"integral-part": {alts(C("0"), Seq(C("1-9"), Repeat(C("0-9"), 0, 15))), ""},
		"number": {Seq(paren(Seq(Opt(L("-")), r("integral-part"))), Opt(paren(Seq(L("."), r("decimal-part")))),
			Opt(paren(Seq(C("eE"), Opt(C("-+")), r("integral-part")))), space), "integral-part decimal-part"},
		"integer": {Seq(paren(Seq(Opt(L("-")), r("integral-part"))), space), "integral-part"},
		"json-char": {alts(C(`^"\\\x7F\x00-\x1F`), Seq(C(`\\`), paren(alts(C(`"\\/bfnrt`), Seq(L("u"),
			paren(alts(Seq(C("0-9a-cA-Ce-fE-F"), rep(hex, 3, 3)), Seq(C("dD"), C("0-7"), rep(hex, 2, 2))))))))), ""},
		"string": {Seq(L(`"`), Star(r("json-char")), L(`"`), space), "json-char"},
		"value":  {alts(r("object"), r("array"), r("string"), r("number"), r("boolean"), r("null")), "object array string number boolean null"},
		"object": {Seq(L("{"), space, Opt(spaced(Seq(pair, Star(paren(Seq(L(","), space, pair)))))), L("}"), space), "string value"},
		"array": {Seq(L("["), space, Opt(spaced(Seq(r("value"), Star(paren(Seq(L(","), space, r("value"))))))), L("]"), space),
			"value"},
		"date": {alts(Seq(r("year"), L("-"), spaced(alts(Seq(r("month31"), L("-"), r("day31")), Seq(r("month30"), L("-"), r("day30")),
			Seq(L("02-"), r("day28"))))), Seq(r("leap-year"), L("-02-29"))), "year leap-year month31 month30 day31 day30 day28"},
		"year": {rep(C("0-9"), 4, 4), ""},
		"leap-year": {alts(Seq(rep(C("0-9"), 2, 2), spaced(alts(Seq(C("02468"), C("48")), Seq(C("13579"), C("26")), Seq(C("2468"), L("0"))))),
			Seq(spaced(alts(Seq(C("02468"), C("048")), Seq(C("13579"), C("26")))), L("00"))), ""},
		"month31": {lits("01", "03", "05", "07", "08", "10", "12"), ""},
		"month30": {lits("04", "06", "09", "11"), ""},
		"day31":   {alts(Seq(L("0"), C("1-9")), Seq(C("12"), C("0-9")), Seq(L("3"), C("01"))), ""},
		"day30":   {alts(Seq(L("0"), C("1-9")), Seq(C("12"), C("0-9")), L("30")), ""},
		"day28":   {alts(Seq(L("0"), C("1-9")), Seq(L("1"), C("0-9")), Seq(L("2"), C("0-8"))), ""},
		"time": {Seq(paren(hour), L(":"), C("0-5"), C("0-9"), L(":"), C("0-5"), C("0-9"), Opt(spaced(Seq(L("."), rep(C("0-9"), 3, 3)))),
			spaced(alts(L("Z"), Seq(spaced(lits("+", "-")), spaced(hour), L(":"), C("0-5"), C("0-9"))))), ""},
		"date-time": {Seq(r("date"), L("T"), r("time")), "date time"},
		"uuid": {Seq(L(`"`), rep(hex, 8, 8), L("-"), rep(hex, 4, 4), L("-"), rep(hex, 4, 4), L("-"), rep(hex, 4, 4), L("-"),
			rep(hex, 12, 12), L(`"`), space), ""},
		"email":       {Seq(r("email-atom"), Repeat(paren(Seq(L("."), r("email-atom"))), 0, 3), L("@"), labels), "email-atom email-label"},
		"email-atom":  {Repeat(C("a-zA-Z0-9_+-"), 1, 15), ""},
		"email-label": {Repeat(C("a-zA-Z0-9"), 1, 30), ""},
		"hostname":    {labels, "email-label"},
		"uri": {Seq(C("a-zA-Z"), Repeat(C("a-zA-Z0-9+.-"), 0, 15), L("://"), r("hostname"), Opt(paren(Seq(L(":"), C("1-9"), Repeat(C("0-9"), 0, 3)))),
			Repeat(paren(Seq(L("/"), Repeat(r("uri-char"), 0, 30))), 0, 8), Opt(paren(Seq(L("?"), Repeat(paren(alts(r("uri-char"), C("/?"))), 0, 60))))),
			"hostname uri-char"},
		"uri-char": {alts(C("a-zA-Z0-9._~!$&'()*+,;=:@-"), Seq(L("%"), rep(hex, 2, 2))), ""},
		"byte":     {Seq(Repeat(paren(rep(b64, 4, 4)), 0, 64), Opt(paren(alts(Seq(rep(b64, 2, 2), L("==")), Seq(rep(b64, 3, 3), L("=")))))), ""},
		"ipv4-octet": {alts(C("0-9"), Seq(C("1-9"), C("0-9")), Seq(L("1"), rep(C("0-9"), 2, 2)), Seq(L("2"), C("0-4"), C("0-9")),
			Seq(L("25"), C("0-5"))), ""},
		"ipv4": {Seq(r("ipv4-octet"), L("."), r("ipv4-octet"), L("."), r("ipv4-octet"), L("."), r("ipv4-octet")), "ipv4-octet"},
	}
}

// primitive writes the primitive rule name (and those it references), once,
// and returns a reference to it. The primitives' bodies are constants of
// GBNF text, llama.cpp's PRIMITIVE_RULES.
func (c *schemaConv) primitive(name string) Expr {
	p := primitives[name]
	if _, ok := c.b.rules[name]; !ok {
		c.addRule(name, p.body)
		for _, d := range strings.Fields(p.deps) {
			c.primitive(d)
		}
	}
	return ruleRef(name)
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
