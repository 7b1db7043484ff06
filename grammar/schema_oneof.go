package grammar

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// jsonTypes is a set of JSON types, a bit each (integer is in number).
type jsonTypes uint8

const (
	tNull jsonTypes = 1 << iota
	tBoolean
	tNumber
	tString
	tArray
	tObject
	tAny = tNull | tBoolean | tNumber | tString | tArray | tObject
)

var typeBits = map[string]jsonTypes{"null": tNull, "boolean": tBoolean, "number": tNumber, "integer": tNumber,
	"string": tString, "array": tArray, "object": tObject}

// shape is what oneOf's disjointness test knows of the instances a schema
// accepts (by JSON Schema's rules, not only those its rule generates): a
// superset of their types, their values when the schema lists them
// (const, enum), and the listed values of its required properties.
type shape struct {
	types  jsonTypes
	values map[string]bool            // canonical values; nil: not listed
	tags   map[string]map[string]bool // required property -> its listed values
}

// oneOfDisjoint refuses oneOf branches (o's siblings merged in, as they
// are compiled) unless no instance can match two of them: they differ in
// type, list different values, or are objects with a required property
// whose listed values differ (a discriminated union). Otherwise oneOf
// would be compiled as anyOf, and an output matching two branches breaks
// it.
func (c *schemaConv) oneOfDisjoint(branches []any, path string) error {
	shapes := make([]shape, len(branches))
	for i, b := range branches {
		shapes[i] = c.shapeOf(b, 0)
	}
	if c.err != nil { // the walk spent the budget: its shapes are cut short
		return c.err
	}
	for i := range shapes {
		for j := i + 1; j < len(shapes); j++ {
			if !disjoint(shapes[i], shapes[j]) {
				return &UnsupportedError{path, fmt.Sprintf("oneOf with overlapping branches %d and %d (not provably disjoint)", i, j)}
			}
		}
	}
	return nil
}

func disjoint(a, b shape) bool {
	common := a.types & b.types
	if common == 0 {
		return true
	}
	if a.values != nil && b.values != nil {
		for v := range a.values {
			if b.values[v] {
				return false
			}
		}
		return true
	}
	if common == tObject {
		for p, av := range a.tags {
			if bv, ok := b.tags[p]; ok && !overlaps(av, bv) {
				return true
			}
		}
	}
	return false
}

func overlaps(a, b map[string]bool) bool {
	for v := range a {
		if b[v] {
			return true
		}
	}
	return false
}

// shapeOf returns a shape holding every instance s accepts.
func (c *schemaConv) shapeOf(s any, depth int) shape {
	all := shape{types: tAny}
	if depth > 16 || c.err != nil {
		return all
	}
	if err := c.v.spend(1, 0, "oneOf"); err != nil { // refs and branches can fan out
		c.err = err
		return all
	}
	if b, ok := s.(bool); ok {
		if !b {
			return shape{}
		}
		return all
	}
	o, ok := s.(*object)
	if !ok {
		return all
	}
	if ref, ok := o.vals["$ref"].(string); ok { // siblings only narrow it
		target, err := c.resolve(ref, "")
		if err != nil {
			return all
		}
		return c.shapeOf(target, depth+1)
	}
	sh := all
	if t, ok := o.get("type"); ok {
		list, isList := t.([]any)
		if !isList {
			list = []any{t}
		}
		sh.types = 0
		for _, x := range list {
			name, _ := x.(string)
			bits, known := typeBits[name]
			if !known {
				return all // refused by the compile
			}
			sh.types |= bits
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := o.vals[k].([]any)
		var union jsonTypes
		for _, x := range list {
			sub := c.shapeOf(x, depth+1).types
			if k == "allOf" {
				sh.types &= sub
			}
			union |= sub
		}
		if k != "allOf" && len(list) > 0 {
			sh.types &= union
		}
	}
	var listed []any
	if v, ok := o.get("const"); ok {
		listed = []any{v}
	} else if v, ok := o.get("enum"); ok {
		listed, _ = v.([]any)
	}
	if listed != nil {
		vals := map[string]bool{}
		var types jsonTypes
		for _, v := range listed {
			bits := valueType(v)
			if bits&sh.types == 0 {
				continue // the type keyword rules it out
			}
			key, ok := canonical(v, 0)
			if !ok {
				return sh
			}
			vals[key] = true
			types |= bits
		}
		sh.types, sh.values = types, vals
		return sh
	}
	req, _ := o.vals["required"].([]any)
	props, _ := o.vals["properties"].(*object)
	if sh.types&tObject != 0 && props != nil {
		for _, r := range req {
			name, _ := r.(string)
			p, ok := props.vals[name]
			if !ok {
				continue
			}
			if ps := c.shapeOf(p, depth+1); ps.values != nil {
				if sh.tags == nil {
					sh.tags = map[string]map[string]bool{}
				}
				sh.tags[name] = ps.values
			}
		}
	}
	return sh
}

func valueType(v any) jsonTypes {
	switch v.(type) {
	case nil:
		return tNull
	case bool:
		return tBoolean
	case string:
		return tString
	case json.Number:
		return tNumber
	case []any:
		return tArray
	case *object:
		return tObject
	}
	return 0
}

// canonical encodes a JSON value so that values JSON Schema calls equal
// (1 and 1.0; objects with their keys in another order) encode the same;
// ok is false for a number too large to compare.
func canonical(v any, depth int) (string, bool) {
	if depth > 32 {
		return "", false
	}
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if i := strings.IndexAny(s, "eE"); i >= 0 {
			e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
			if err != nil || e > 400 || e < -400 {
				return "", false
			}
		}
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			return "", false
		}
		return "n" + r.RatString(), true
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			var ok bool
			if parts[i], ok = canonical(e, depth+1); !ok {
				return "", false
			}
		}
		return "[" + strings.Join(parts, ",") + "]", true
	case *object:
		keys := slices.Clone(x.keys)
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			e, ok := canonical(x.vals[k], depth+1)
			if !ok {
				return "", false
			}
			parts[i] = jsonString(k) + ":" + e
		}
		return "{" + strings.Join(parts, ",") + "}", true
	}
	return encodeJSON(v), true
}
