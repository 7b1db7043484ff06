package grammar

import (
	"fmt"
	"slices"
	"unicode"
)

// object builds an object rule as llama.cpp's _build_object_rule: required
// properties in their order, then any subset of the optional ones in their
// order.
func (c *schemaConv) object(o *object, name, path string) (Expr, error) {
	props, _ := o.get("properties")
	po, _ := props.(*object)
	if props != nil && po == nil {
		return Expr{}, fmt.Errorf("json schema: at %q: properties must be an object", path)
	}
	var required []string
	if r, ok := o.get("required"); ok {
		list, ok := r.([]any)
		if !ok {
			return Expr{}, fmt.Errorf("json schema: at %q: required must be an array", path)
		}
		for _, x := range list {
			s, ok := x.(string)
			if !ok {
				return Expr{}, fmt.Errorf("json schema: at %q: required must hold strings", path)
			}
			required = append(required, s)
		}
	}
	additional, hasAdditional := o.get("additionalProperties")
	if po == nil || len(po.keys) == 0 {
		if len(required) > 0 {
			return Expr{}, &UnsupportedError{path, "required without properties"}
		}
		if b, ok := additional.(bool); hasAdditional && ok && !b {
			return Seq(Lit("{"), space, Lit("}"), space), nil
		}
		if !hasAdditional || additional == true {
			return c.primitive("object"), nil
		}
		val, err := c.visit(additional, name+"-additional", path+"/additionalProperties")
		if err != nil {
			return Expr{}, err
		}
		kv := c.addRule(name+"-kv", Seq(c.primitive("string"), Lit(":"), space, val))
		return Seq(Lit("{"), space, Opt(spaced(Seq(kv, Star(paren(Seq(Lit(","), space, kv)))))), Lit("}"), space), nil
	}
	var extra Expr // the rule of an additional property, when allowed
	if hasAdditional && additional != false {
		val, err := c.visit(additional, name+"-additional", path+"/additionalProperties")
		if err != nil {
			return Expr{}, err
		}
		c.primitive("json-char")
		key := c.addRule(name+"-additional-key", Seq(Lit(`"`), notStrings(po.keys), Lit(`"`), space))
		extra = c.addRule(name+"-additional-kv", Seq(key, Lit(":"), space, val))
	}
	for _, r := range required {
		if _, ok := po.vals[r]; !ok { // required but not described: any value
			cp := &object{keys: append(slices.Clone(po.keys), r), vals: map[string]any{r: true}}
			for k, v := range po.vals {
				cp.vals[k] = v
			}
			po = cp
		}
	}
	kvs := map[string]Expr{}
	var req, opt []string
	for _, k := range po.keys {
		val, err := c.visit(po.vals[k], name+"-"+k, path+"/properties/"+k)
		if err != nil {
			return Expr{}, err
		}
		kvs[k] = c.addRule(name+"-"+k+"-kv", Seq(Lit(jsonString(k)), space, Lit(":"), space, val))
		if slices.Contains(required, k) {
			req = append(req, k)
		} else {
			opt = append(opt, k)
		}
	}
	if !extra.Empty() {
		kvs["*"] = extra
		opt = append(opt, "*")
	}
	return c.members(kvs, req, opt, name), nil
}

// members is an object of the pairs kvs: the required keys req in order,
// then any subset of the optional ones opt in order ("*" for additional
// properties, any number of them).
func (c *schemaConv) members(kvs map[string]Expr, req, opt []string, name string) Expr {
	comma := Seq(Lit(","), space)
	items := []Expr{Lit("{"), space}
	for i, k := range req {
		if i > 0 {
			items = append(items, comma)
		}
		items = append(items, kvs[k])
	}
	if len(opt) > 0 {
		// rest(ks, optFirst) is ks[0]'s pair (after a comma when optFirst,
		// and then optional) followed by a rule for the rest; the rules of
		// the suffixes after the first are built once each (restRule).
		restRule := map[int]Expr{} // len(ks) -> a rule of rest(ks, true)
		var rest func(ks []string, optFirst bool) Expr
		rest = func(ks []string, optFirst bool) Expr {
			kv := kvs[ks[0]]
			res := kv
			switch {
			case ks[0] == "*" && optFirst:
				res = Star(spaced(Seq(comma, kv)))
			case ks[0] == "*":
				res = Seq(kv, Star(spaced(Seq(comma, kv))))
			case optFirst:
				res = Opt(spaced(Seq(comma, kv)))
			}
			if len(ks) > 1 {
				next, ok := restRule[len(ks)-1]
				if !ok {
					next = c.addRule(name+"-"+ks[0]+"-rest", rest(ks[1:], true))
					restRule[len(ks)-1] = next
				}
				res = Seq(res, next)
			}
			return res
		}
		first := make([]Expr, len(opt))
		for i := range opt {
			first[i] = rest(opt[i:], false)
		}
		// llama.cpp's layout: "(a | b )" after no required pair (written
		// after a double space), `( "," space ( a | b ) )` after some.
		group := looseParen(alts(first...))
		if len(req) > 0 {
			group = spaced(Seq(comma, spaced(alts(first...))))
		} else {
			items = append(items, hole)
		}
		items = append(items, Opt(group))
	}
	return Seq(append(items, Lit("}"), space)...)
}

func (c *schemaConv) array(o *object, name, path string) (Expr, error) {
	lo, hi, err := minMax(o, "minItems", "maxItems", path)
	if err != nil {
		return Expr{}, err
	}
	if hi >= 0 && hi < lo {
		return Expr{}, fmt.Errorf("json schema: at %q: maxItems below minItems", path)
	}
	p, ok := o.get("prefixItems")
	if items, isList := o.vals["items"].([]any); isList && !ok { // draft 4's tuple form
		p, ok = items, true
		tuple := &object{keys: o.keys, vals: map[string]any{"prefixItems": items}}
		for k, v := range o.vals {
			if k != "items" {
				tuple.vals[k] = v
			}
		}
		o = tuple
	}
	if ok {
		list, ok := p.([]any)
		if !ok {
			return Expr{}, fmt.Errorf("json schema: at %q: prefixItems must be an array", path)
		}
		if items, ok := o.get("items"); ok && items != false || lo != 0 && lo != len(list) || hi >= 0 && hi != len(list) {
			return Expr{}, &UnsupportedError{path, "prefixItems with items or other item counts"}
		}
		parts := []Expr{Lit("["), space}
		for i, x := range list {
			r, err := c.visit(x, fmt.Sprintf("%s-tuple-%d", name, i), fmt.Sprintf("%s/prefixItems/%d", path, i))
			if err != nil {
				return Expr{}, err
			}
			if i > 0 {
				parts = append(parts, Lit(","), space)
			}
			parts = append(parts, r)
		}
		if len(list) == 0 {
			parts = append(parts, hole)
		}
		return Seq(append(parts, Lit("]"), space)...), nil
	}
	item := c.primitive("value")
	if items, ok := o.get("items"); ok {
		if item, err = c.visit(items, name+"-item", path+"/items"); err != nil {
			return Expr{}, err
		}
	}
	return Seq(Lit("["), space, repetition(item, lo, hi, Seq(Lit(","), space)), Lit("]"), space), nil
}

func (c *schemaConv) str(o *object, name, path string) (Expr, error) {
	if f, ok := o.get("format"); ok {
		if err := formatLength(o, f, path); err != nil {
			return Expr{}, err
		}
		switch f {
		case "date", "time", "date-time", "email", "hostname", "ipv4", "uri", "byte":
			return Seq(Lit(`"`), c.primitive(f.(string)), Lit(`"`), space), nil
		case "uuid":
			return c.primitive("uuid"), nil
		}
		return Expr{}, &UnsupportedError{path, fmt.Sprintf("format %q", f)}
	}
	if p, ok := o.get("pattern"); ok {
		if has(o, "minLength", "maxLength") {
			return Expr{}, &UnsupportedError{path, "pattern with minLength/maxLength"}
		}
		ps, _ := p.(string)
		expr, err := regexGBNF(ps, true, false)
		if err != nil {
			return Expr{}, fmt.Errorf("json schema: at %q: pattern: %w", path, err)
		}
		c.primitive("json-char")
		return Seq(Lit(`"`), expr, Lit(`"`), space), nil
	}
	lo, hi, err := minMax(o, "minLength", "maxLength", path)
	if err != nil {
		return Expr{}, err
	}
	if hi >= 0 && hi < lo {
		return Expr{}, fmt.Errorf("json schema: at %q: maxLength below minLength", path)
	}
	if lo == 0 && hi < 0 {
		return c.primitive("string"), nil
	}
	return Seq(Lit(`"`), repetition(c.primitive("json-char"), lo, hi, Expr{}), Lit(`"`), space), nil
}

// formatLengths are the shortest and longest strings (in characters, all
// ASCII) of each format's rule; a longest of -1 is unbounded or not worked
// out.
var formatLengths = map[string][2]int{
	"date": {10, 10}, "time": {9, 18}, "date-time": {20, 29}, "uuid": {36, 36},
	"email": {3, 187}, "hostname": {1, 123}, "ipv4": {7, 15}, "uri": {5, -1}, "byte": {0, 260},
}

// formatLength refuses a format beside minLength/maxLength unless every
// string of the format's rule already has a length within them: the
// lengths are not intersected with the format.
func formatLength(o *object, f any, path string) error {
	if !has(o, "minLength", "maxLength") {
		return nil
	}
	fs, _ := f.(string)
	bounds, known := formatLengths[fs]
	if !known {
		return nil // refused as an unknown format
	}
	lo, hi, err := minMax(o, "minLength", "maxLength", path)
	if err != nil {
		return err
	}
	if lo > bounds[0] || hi >= 0 && (bounds[1] < 0 || bounds[1] > hi) {
		return &UnsupportedError{path, fmt.Sprintf("format %q with minLength/maxLength", fs)}
	}
	return nil
}

// notStrings is an expression for the contents of a JSON string other
// than the given ones (additional property names must differ from the
// declared ones), walking their trie as llama.cpp's _not_strings. Escaped
// spellings of a declared name are not caught.
func notStrings(strs []string) Expr {
	type trie struct {
		kids map[rune]*trie
		end  bool
	}
	root := &trie{kids: map[rune]*trie{}}
	for _, s := range strs {
		n := root
		for _, r := range s {
			k, ok := n.kids[r]
			if !ok {
				k = &trie{kids: map[rune]*trie{}}
				n.kids[r] = k
			}
			n = k
		}
		n.end = true
	}
	jsonClass := (&regexConv{json: true}).class
	escape := Seq(Lit(`\`), paren(alts(Class(`"\\/bfnrt`), Seq(Lit("u"), rep(Class("0-9a-fA-F"), 4, 4)))))
	var visit func(n *trie) Expr
	visit = func(n *trie) Expr {
		var out []Expr
		var firsts []rune
		keys := make([]rune, 0, len(n.kids))
		for r := range n.kids {
			keys = append(keys, r)
		}
		slices.Sort(keys)
		for _, r := range keys {
			firsts = append(firsts, r, r)
			out = append(out, Seq(jsonClass([]rune{r, r}), visit(n.kids[r])))
		}
		// Any other character (or an escape), then anything.
		other := []rune{0x20, unicode.MaxRune}
		for _, r := range keys {
			other = subtractRune(other, r)
		}
		out = append(out, Seq(paren(alts(jsonClass(subtractRune(subtractRune(other, '"'), '\\')), escape)), Star(ruleRef("json-char"))))
		e := paren(alts(out...))
		if !n.end {
			e = Opt(e)
		}
		return e
	}
	return visit(root)
}

// subtractRune removes r from sorted rune pairs.
func subtractRune(pairs []rune, r rune) []rune {
	var out []rune
	for i := 0; i+1 < len(pairs); i += 2 {
		lo, hi := pairs[i], pairs[i+1]
		if r < lo || r > hi {
			out = append(out, lo, hi)
			continue
		}
		if lo < r {
			out = append(out, lo, r-1)
		}
		if r < hi {
			out = append(out, r+1, hi)
		}
	}
	return out
}
