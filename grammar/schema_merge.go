package grammar

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// mergeSiblings returns branch x of o's anyOf/oneOf (key) with o's other
// keywords added, so {"properties": ..., "anyOf": [{"required": [...]}]}
// checks both: the branch's keywords win, required lists are joined,
// properties merged.
func mergeSiblings(o *object, key string, x any) any {
	b, ok := x.(*object)
	if !ok || len(o.keys) == 1 {
		return x
	}
	m := &object{vals: map[string]any{}}
	for _, k := range o.keys {
		if k != key && !unsupported[k] && k != "$defs" && k != "definitions" {
			m.keys = append(m.keys, k)
			m.vals[k] = o.vals[k]
		}
	}
	for _, k := range b.keys {
		v := b.vals[k]
		if old, ok := m.vals[k]; ok {
			switch k {
			case "required":
				ol, _ := old.([]any)
				nl, _ := v.([]any)
				v = append(slices.Clone(ol), nl...)
			case "properties":
				op, ok1 := old.(*object)
				np, ok2 := v.(*object)
				if ok1 && ok2 {
					mp := &object{keys: slices.Clone(op.keys), vals: map[string]any{}}
					for _, pk := range op.keys {
						mp.vals[pk] = op.vals[pk]
					}
					for _, pk := range np.keys {
						if _, ok := mp.vals[pk]; !ok {
							mp.keys = append(mp.keys, pk)
						}
						mp.vals[pk] = np.vals[pk]
					}
					v = mp
				}
			}
		} else {
			m.keys = append(m.keys, k)
		}
		m.vals[k] = v
	}
	return m
}

// mergeAllOf folds allOf's schemas into o (local $refs resolved): the
// common use, an object extended with more properties and required names.
// Schemas that disagree on a keyword other than properties and required
// are refused.
func (c *schemaConv) mergeAllOf(o *object, all any, path string) (*object, error) {
	list, ok := all.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("json schema: at %q: allOf must be a non-empty array", path)
	}
	if has(o, "additionalProperties") {
		return nil, &UnsupportedError{path, "allOf beside additionalProperties"}
	}
	merged := &object{vals: map[string]any{}}
	for _, k := range o.keys {
		if k != "allOf" {
			merged.keys = append(merged.keys, k)
			merged.vals[k] = o.vals[k]
		}
	}
	for depth := 0; len(list) > 0; depth++ {
		if depth > 64 {
			return nil, fmt.Errorf("json schema: at %q: allOf nested too deep: %w", path, ErrTooComplex)
		}
		x := list[0]
		list = list[1:]
		sub, ok := x.(*object)
		if !ok {
			if x == true {
				continue
			}
			return nil, &UnsupportedError{path, "allOf with a boolean schema"}
		}
		if ref, ok := sub.vals["$ref"].(string); ok {
			target, err := c.resolve(ref, path)
			if err != nil {
				return nil, err
			}
			list = append([]any{target}, list...)
			continue
		}
		if inner, ok := sub.vals["allOf"].([]any); ok {
			list = append(slices.Clone(inner), list...)
		}
		for _, k := range sub.keys {
			if k == "allOf" || annotations(k) {
				continue
			}
			if k == "additionalProperties" { // each allOf schema would judge the others' properties
				return nil, &UnsupportedError{path, "additionalProperties inside allOf"}
			}
			if op, ok := merged.vals["properties"].(*object); ok && k == "properties" {
				if np, ok := sub.vals[k].(*object); ok {
					for _, pk := range np.keys {
						if ov, dup := op.vals[pk]; dup && encodeJSON(ov) != encodeJSON(np.vals[pk]) {
							return nil, &UnsupportedError{path, fmt.Sprintf("allOf schemas that differ on property %q", pk)}
						}
					}
				}
			}
			old, exists := merged.vals[k]
			if !exists {
				merged.keys = append(merged.keys, k)
				merged.vals[k] = sub.vals[k]
				continue
			}
			if k != "properties" && k != "required" {
				if encodeJSON(old) != encodeJSON(sub.vals[k]) {
					return nil, &UnsupportedError{path, fmt.Sprintf("allOf schemas that differ on %q", k)}
				}
				continue
			}
			merged.vals[k] = mergeSiblings(&object{keys: []string{k, "_"}, vals: map[string]any{k: old, "_": nil}}, "_",
				&object{keys: []string{k}, vals: map[string]any{k: sub.vals[k]}}).(*object).vals[k]
		}
	}
	return merged, nil
}

// annotations reports keywords that change nothing about what validates.
func annotations(k string) bool {
	switch k {
	case "title", "description", "$comment", "examples", "default", "$schema", "$id", "id":
		return true
	}
	return false
}

// typeAllows reports whether value v has a type o's "type" keyword allows.
func typeAllows(o *object, v any) bool {
	t, ok := o.get("type")
	if !ok {
		return true
	}
	types, ok := t.([]any)
	if !ok {
		types = []any{t}
	}
	var vt string
	switch x := v.(type) {
	case nil:
		vt = "null"
	case bool:
		vt = "boolean"
	case string:
		vt = "string"
	case json.Number:
		vt = "number"
		if _, err := x.Int64(); err == nil {
			vt = "integer"
		}
	case []any:
		vt = "array"
	case *object:
		vt = "object"
	}
	for _, t := range types {
		if t == vt || t == "number" && vt == "integer" {
			return true
		}
	}
	return false
}

// resolve follows a local $ref (a JSON pointer into the schema).
func (c *schemaConv) resolve(ref, path string) (any, error) {
	if !strings.HasPrefix(ref, "#") {
		return nil, &UnsupportedError{path, fmt.Sprintf("remote $ref %q", ref)}
	}
	target := c.root
	// The fragment is a JSON pointer in a URI: percent-decoded first, then
	// ~1 and ~0 (RFC 6901 sections 4 and 6).
	frag, err := url.PathUnescape(strings.TrimPrefix(ref, "#"))
	if err != nil {
		return nil, fmt.Errorf("json schema: at %q: $ref %q does not resolve: %v", path, ref, err)
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		return nil, &UnsupportedError{path, fmt.Sprintf("$ref %q to an anchor", ref)}
	}
	for _, seg := range strings.Split(frag, "/")[1:] {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch t := target.(type) {
		case *object:
			target = t.vals[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(t) {
				target = nil
			} else {
				target = t[i]
			}
		default:
			target = nil
		}
		if target == nil {
			return nil, fmt.Errorf("json schema: at %q: $ref %q does not resolve", path, ref)
		}
	}
	return target, nil
}

func (c *schemaConv) number(o *object, typ, path string) (Expr, error) {
	lo, hasLo := floatOf(o, "minimum")
	hi, hasHi := floatOf(o, "maximum")
	if x, ok := floatOf(o, "exclusiveMinimum"); ok {
		if typ != "integer" {
			if hasLo || hasHi || has(o, "exclusiveMaximum") || x != math.Trunc(x) || x < 0 || x > 1e15 {
				return Expr{}, &UnsupportedError{path, "exclusiveMinimum on a number other than a whole bound from 0 up alone"}
			}
			// Above k: a larger integer part with any fraction, or k with a
			// fraction not all zeros.
			fraction := Opt(paren(Seq(Lit("."), c.primitive("decimal-part"))))
			k := strconv.FormatInt(int64(x), 10)
			return Seq(paren(alts(Seq(paren(intRange(int64(x)+1, math.MaxInt64)), fraction),
				Seq(Lit(k+"."), Repeat(Class("0-9"), 0, 15), Class("1-9")))), space), nil
		}
		if x = math.Floor(x) + 1; !hasLo || x > lo {
			lo = x
		}
		hasLo = true
	}
	if x, ok := floatOf(o, "exclusiveMaximum"); ok {
		if typ != "integer" {
			return Expr{}, &UnsupportedError{path, "exclusiveMaximum on a number"}
		}
		if x = math.Ceil(x) - 1; !hasHi || x < hi {
			hi = x
		}
		hasHi = true
	}
	if !hasLo && !hasHi {
		return c.primitive(typ), nil
	}
	if typ == "number" {
		whole := func(x float64) bool { return x == math.Trunc(x) && x >= 0 && x <= 1e15 }
		if !hasLo || !whole(lo) || hasHi && !whole(hi) {
			return Expr{}, &UnsupportedError{path, "minimum/maximum on a number other than whole bounds from 0 up"}
		}
		integral := c.primitive("integral-part")
		fraction := Opt(paren(Seq(Lit("."), c.primitive("decimal-part"))))
		if !hasHi && lo == 0 {
			return Seq(integral, fraction, Opt(paren(Seq(Class("eE"), Opt(Class("-+")), integral))), space), nil
		}
		// An integer part in lo..hi-1 with any fraction, or hi with a zero one.
		minV, maxV := int64(lo), int64(hi)
		if hasHi && maxV < minV {
			return Expr{}, fmt.Errorf("json schema: at %q: minimum above maximum", path)
		}
		var parts []Expr
		if !hasHi || maxV > minV {
			top := int64(math.MaxInt64)
			if hasHi {
				top = maxV - 1
			}
			parts = append(parts, Seq(paren(intRange(minV, top)), fraction))
		}
		if hasHi {
			parts = append(parts, Seq(Lit(strconv.FormatInt(maxV, 10)), Opt(paren(Seq(Lit("."), Repeat(Lit("0"), 1, 16))))))
		}
		return Seq(paren(alts(parts...)), space), nil
	}
	const limit = 1e15
	minV, maxV := int64(math.MinInt64), int64(math.MaxInt64)
	if hasLo {
		if math.Abs(lo) > limit {
			return Expr{}, &UnsupportedError{path, "a minimum beyond 1e15"}
		}
		minV = int64(math.Ceil(lo))
	}
	if hasHi {
		if math.Abs(hi) > limit {
			return Expr{}, &UnsupportedError{path, "a maximum beyond 1e15"}
		}
		maxV = int64(math.Floor(hi))
	}
	if hasLo && hasHi && minV > maxV {
		return Expr{}, fmt.Errorf("json schema: at %q: minimum above maximum", path)
	}
	return Seq(paren(intRange(minV, maxV)), space), nil
}

func floatOf(o *object, k string) (float64, bool) {
	v, ok := o.get(k)
	if !ok {
		return 0, false
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}
