package chat

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// pyFunc is a filter or method body on plain Go values.
type pyFunc func(in any, args []any, kwargs map[string]any) (any, error)

// filter adapts f to gonja: errors in the input pass through, a returned
// error becomes gonja's error value, and the call is charged to the
// render's budget (what it read and what it built).
func filter(f pyFunc) exec.FilterFunction {
	return adapt(f, func(b *budget, in any, args []any, out any) error {
		if isStr(in) {
			in = nil // charged before the call
		}
		return b.spendValue(in, args, out)
	})
}

// getter adapts an attribute or item access: it builds nothing (but a
// string's characters, to index one) and its result may be a method,
// whose calls are charged.
func getter(f pyFunc) exec.FilterFunction {
	return adapt(f, func(*budget, any, []any, any) error { return nil })
}

// adapt is filter and getter: f's call with the arguments unwrapped, its
// cost charged by spend.
func adapt(f pyFunc, spend func(b *budget, in any, args []any, out any) error) exec.FilterFunction {
	return func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		if in.IsError() {
			return in
		}
		args := make([]any, len(params.Args))
		for i, a := range params.Args {
			args[i] = unwrap(a)
		}
		kwargs := make(map[string]any, len(params.KwArgs))
		for k, v := range params.KwArgs {
			kwargs[k] = unwrap(v)
		}
		b := budgetOf(e.Environment.Context)
		if b != nil && isStr(unwrap(in)) {
			// a string is read before the call: its cost is known
			if err := b.spend(size(unwrap(in)), 0); err != nil {
				return exec.AsValue(err)
			}
		}
		out, err := f(unwrap(in), args, kwargs)
		if b == nil {
			return exec.AsValue(out)
		} else if err != nil {
			return exec.AsValue(b.checked(err))
		}
		for _, v := range kwargs {
			args = append(args, v)
		}
		if err := spend(b, unwrap(in), args, out); err != nil {
			return exec.AsValue(err)
		}
		if m, ok := out.(fn); ok {
			return exec.AsValue(b.charged(m))
		}
		return exec.AsValue(out)
	}
}

// getters are a.b and a[b] (see operatorFilters).
var getters = map[string]pyFunc{
	"__getattr": func(in any, args []any, _ map[string]any) (any, error) { return getattr(in, args[0].(string)) },
	"__getitem": func(in any, args []any, _ map[string]any) (any, error) { return getitem(in, args[0]) },
}

// operatorFilters carry the expressions rewrite.go takes away from gonja's
// evaluator: a.b, a[b], a + b, a ~ b, comparisons, literals and printing.
var operatorFilters = map[string]pyFunc{
	"__op": func(in any, args []any, _ map[string]any) (any, error) {
		op, right := args[0].(string), args[1]
		if (in == nil || right == nil) && op != "==" && op != "!=" {
			what := args[2].(string) // describe(left)
			if in != nil {
				what = args[3].(string)
			}
			if what == "" {
				return nil, undefinedError("an operand of " + op)
			}
			return nil, undefinedError(strRepr(what))
		}
		return binary(op, in, right)
	},
	"__concat": func(in any, args []any, _ map[string]any) (any, error) { return checkSize(concat(in, args[0]), nil) },
	"__str":    func(in any, _ []any, _ map[string]any) (any, error) { return pyStr(in), nil },
	"__list": func(in any, _ []any, _ map[string]any) (any, error) {
		items, _ := sequence(in)
		return list(items), nil
	},
	"__tuple": func(in any, _ []any, _ map[string]any) (any, error) {
		items, _ := sequence(in)
		return tuple(items), nil
	},
	"__dict": func(in any, _ []any, _ map[string]any) (any, error) {
		kv, _ := sequence(in)
		d := dict{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == nil {
				return nil, undefinedError("a dict key")
			}
			d.set(kv[i], kv[i+1])
		}
		return d, nil
	},
}

// pyFilters are jinja2's builtin filters as transformers' environment has
// them, where gonja's differ; tojson is transformers' own.
var pyFilters = map[string]pyFunc{
	"tojson": func(in any, args []any, kw map[string]any) (any, error) {
		o := jsonOptions{
			ensureASCII: truthy(arg(args, kw, 0, "ensure_ascii", false)),
			sortKeys:    truthy(arg(args, kw, 3, "sort_keys", false)),
			itemSep:     ", ",
			keySep:      ": ",
		}
		switch ind := arg(args, kw, 1, "indent", none).(type) {
		case int:
			if err := repeatLen(1, ind); err != nil {
				return nil, err
			}
			s := strings.Repeat(" ", max(ind, 0))
			o.indent, o.itemSep = &s, ","
		case string:
			o.indent, o.itemSep = &ind, ","
		}
		if seps, ok := sequence(arg(args, kw, 2, "separators", none)); ok && len(seps) == 2 {
			o.itemSep, o.keySep = pyStr(seps[0]), pyStr(seps[1])
		}
		return dumpJSON(in, o)
	},
	"trim": func(in any, args []any, kw map[string]any) (any, error) {
		return strings.TrimFunc(pyStr(in), stripSet(arg(args, kw, 0, "chars", none))), nil
	},
	"length": length,
	"count":  length,
	"items": func(in any, _ []any, _ map[string]any) (any, error) {
		if in == nil {
			return list{}, nil
		}
		d, ok := in.(dict)
		if !ok {
			return nil, typeError("Can only get item pairs from a mapping.")
		}
		return dictMethod(d, "items")(nil, nil)
	},
	"list": func(in any, _ []any, _ map[string]any) (any, error) {
		items, err := iterate(in)
		return list(items), err
	},
	"join": func(in any, args []any, kw map[string]any) (any, error) {
		items, err := iterate(in)
		if err != nil {
			return nil, err
		}
		if attr := arg(args, kw, 1, "attribute", nil); attr != nil {
			if items, err = mapAttribute(items, attr, nil); err != nil {
				return nil, err
			}
		}
		sep := pyStr(arg(args, kw, 0, "d", ""))
		parts, err := joinParts(items, sep, pyStr)
		if err != nil {
			return nil, err
		}
		return strings.Join(parts, sep), nil
	},
	"default": defaultFilter,
	"d":       defaultFilter,
	"safe":    func(in any, _ []any, _ map[string]any) (any, error) { return markup(pyStr(in)), nil },
	"escape":  func(in any, _ []any, _ map[string]any) (any, error) { return escape(in), nil },
	"e":       func(in any, _ []any, _ map[string]any) (any, error) { return escape(in), nil },
	"string": func(in any, _ []any, _ map[string]any) (any, error) {
		if m, ok := in.(markup); ok {
			return m, nil
		}
		return pyStr(in), nil
	},
	"lower":      func(in any, _ []any, _ map[string]any) (any, error) { return lower(pyStr(in)), nil },
	"upper":      func(in any, _ []any, _ map[string]any) (any, error) { return upper(pyStr(in)), nil },
	"capitalize": func(in any, _ []any, _ map[string]any) (any, error) { return capitalize(pyStr(in)), nil },
	"title":      func(in any, _ []any, _ map[string]any) (any, error) { return titleFilter(pyStr(in)), nil },
	"replace": func(in any, args []any, kw map[string]any) (any, error) {
		count := -1
		if c, ok := arg(args, kw, 2, "count", nil).(int); ok {
			count = c
		}
		s, old, new := pyStr(in), pyStr(arg(args, kw, 0, "old", "")), pyStr(arg(args, kw, 1, "new", ""))
		if err := replacedLen(s, old, new, count); err != nil {
			return nil, err
		}
		return strings.Replace(s, old, new, count), nil
	},
	"indent": func(in any, args []any, kw map[string]any) (any, error) {
		width := arg(args, kw, 0, "width", 4)
		ind, ok := width.(string)
		if !ok {
			if err := repeatLen(1, asInt(width)); err != nil {
				return nil, err
			}
			ind = strings.Repeat(" ", max(asInt(width), 0))
		}
		s := pyStr(in)
		if err := repeatLen(len(ind), strings.Count(s, "\n")+1); err != nil {
			return nil, err
		}
		return checkSize(indent(s, ind, truthy(arg(args, kw, 1, "first", false)), truthy(arg(args, kw, 2, "blank", false))), nil)
	},
	"first": func(in any, _ []any, _ map[string]any) (any, error) {
		items, err := iterate(in)
		if err != nil || len(items) == 0 {
			return nil, err
		}
		return items[0], nil
	},
	"last": func(in any, _ []any, _ map[string]any) (any, error) {
		if _, ok := in.(generator); ok {
			return nil, typeError("'generator' object is not reversible")
		}
		items, err := iterate(in)
		if err != nil || len(items) == 0 {
			return nil, err
		}
		return items[len(items)-1], nil
	},
	"reverse": func(in any, _ []any, _ map[string]any) (any, error) {
		if isStr(in) {
			return reverseString(pyStr(in)), nil
		}
		items, err := iterate(in)
		out := make(generator, len(items))
		for i, it := range items {
			out[len(items)-1-i] = it
		}
		return out, err
	},
	"int": func(in any, args []any, kw map[string]any) (any, error) {
		def := arg(args, kw, 0, "default", 0)
		switch v := in.(type) {
		case int:
			return v, nil
		case bool:
			return asInt(v), nil
		case float64:
			return int(v), nil
		case string, markup:
			s := strings.TrimFunc(pyStr(v), isSpace)
			if i, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64); err == nil {
				return int(i), nil
			}
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return int(f), nil
			}
		}
		return def, nil
	},
	"float": func(in any, args []any, kw map[string]any) (any, error) {
		if f, _, ok := number(in); ok {
			return f, nil
		}
		if isStr(in) {
			if f, err := strconv.ParseFloat(strings.TrimFunc(pyStr(in), isSpace), 64); err == nil {
				return f, nil
			}
		}
		return arg(args, kw, 0, "default", 0.0), nil
	},
	"abs": func(in any, _ []any, _ map[string]any) (any, error) {
		f, isInt, ok := number(in)
		switch {
		case !ok:
			return nil, typeError("bad operand type for abs(): '%s'", typeName(in))
		case isInt:
			return int(math.Abs(f)), nil
		}
		return math.Abs(f), nil
	},
	"round": func(in any, args []any, kw map[string]any) (any, error) {
		f, _, ok := number(in)
		if !ok {
			return nil, typeError("type %s doesn't define __round__ method", typeName(in))
		}
		scale := math.Pow(10, float64(asInt(arg(args, kw, 0, "precision", 0))))
		switch m := pyStr(arg(args, kw, 1, "method", "common")); m {
		case "common":
			return math.RoundToEven(f*scale) / scale, nil // Python's round: half to even
		case "ceil":
			return math.Ceil(f*scale) / scale, nil
		case "floor":
			return math.Floor(f*scale) / scale, nil
		default:
			return nil, &pyError{"FilterArgumentError", "method must be common, ceil or floor"}
		}
	},
	"attr": func(in any, args []any, _ map[string]any) (any, error) {
		// Python's getattr: a method or namespace attribute, never a dict key.
		if d, ok := in.(dict); ok {
			if m := method(d, pyStr(arg(args, nil, 0, "name", ""))); m != nil {
				return m, nil
			}
			return nil, nil
		}
		return getattr(in, pyStr(arg(args, nil, 0, "name", "")))
	},
	"format": func(in any, args []any, kw map[string]any) (any, error) {
		if len(args) > 0 && len(kw) > 0 {
			return nil, &pyError{"FilterArgumentError", "can't handle positional and keyword arguments at the same time"}
		}
		if len(kw) > 0 {
			d := dict{}
			for _, k := range sortedKeys(kw) {
				d.set(k, kw[k])
			}
			return percentFormat(pyStr(in), d)
		}
		return percentFormat(pyStr(in), tuple(args))
	},
	"dictsort": func(in any, args []any, kw map[string]any) (any, error) {
		d, ok := in.(dict)
		if !ok {
			return nil, &pyError{"FilterArgumentError", "You can only sort by either a dict"}
		}
		byValue := pyStr(arg(args, kw, 1, "by", "key")) == "value"
		caseSensitive := truthy(arg(args, kw, 0, "case_sensitive", false))
		items, _ := dictMethod(d, "items")(nil, nil)
		pairs := items.(list)
		var err error
		sort.SliceStable(pairs, func(i, j int) bool {
			a, b := pairs[i].(tuple)[0], pairs[j].(tuple)[0]
			if byValue {
				a, b = pairs[i].(tuple)[1], pairs[j].(tuple)[1]
			}
			if !caseSensitive && isStr(a) && isStr(b) {
				a, b = lower(pyStr(a)), lower(pyStr(b))
			}
			c, cerr := compare("<", a, b)
			if cerr != nil {
				err = cerr
			}
			return c < 0
		})
		if truthy(arg(args, kw, 2, "reverse", false)) {
			for i, j := 0, len(pairs)-1; i < j; i, j = i+1, j-1 {
				pairs[i], pairs[j] = pairs[j], pairs[i]
			}
		}
		return pairs, err
	},
	"unique": func(in any, args []any, kw map[string]any) (any, error) {
		items, err := iterate(in)
		if err != nil {
			return nil, err
		}
		caseSensitive := truthy(arg(args, kw, 0, "case_sensitive", false))
		keys := items
		if attr := arg(args, kw, 1, "attribute", nil); attr != nil {
			if keys, err = mapAttribute(items, attr, nil); err != nil {
				return nil, err
			}
		}
		out := generator{}
		var seen []any
		for i, it := range items {
			k := keys[i]
			if s, ok := k.(string); ok && !caseSensitive {
				k = strings.ToLower(s)
			}
			if ok, _ := contains(list(seen), k); !ok {
				seen = append(seen, k)
				out = append(out, it)
			}
		}
		return out, nil
	},
}

func length(in any, _ []any, _ map[string]any) (any, error) {
	switch v := in.(type) {
	case nil:
		return 0, nil
	case dict:
		return len(v), nil
	case string:
		return len([]rune(v)), nil
	case markup:
		return len([]rune(string(v))), nil
	case generator:
		return nil, typeError("object of type 'generator' has no len()")
	case *namespace:
		return nil, typeError("object of type 'Namespace' has no len()")
	}
	if items, ok := sequence(in); ok {
		return len(items), nil
	}
	return nil, typeError("object of type '%s' has no len()", typeName(in))
}

func defaultFilter(in any, args []any, kw map[string]any) (any, error) {
	if in == nil || truthy(arg(args, kw, 1, "boolean", false)) && !truthy(in) {
		return arg(args, kw, 0, "default_value", ""), nil
	}
	return in, nil
}

// titleFilter is jinja2's title filter: each word's first letter upper, the
// rest lower, words starting after whitespace, '-', '(', '{', '[' or '<'.
func titleFilter(s string) string {
	var b strings.Builder
	start := true
	for _, r := range s {
		if isSpace(r) || strings.ContainsRune("-({[<", r) {
			b.WriteRune(r)
			start = true
			continue
		}
		if start {
			b.WriteString(upper(string(r)))
		} else {
			b.WriteString(lower(string(r)))
		}
		start = false
	}
	return b.String()
}

// indent is jinja2's indent filter.
func indent(s, ind string, first, blank bool) string {
	lines := splitLines(s + "\n")
	var rv string
	if blank {
		rv = strings.Join(lines, "\n"+ind)
	} else {
		rv = lines[0]
		for _, l := range lines[1:] {
			rv += "\n"
			if l != "" {
				rv += ind + l
			}
		}
	}
	if first {
		rv = ind + rv
	}
	return rv
}

// mapAttribute returns each item's attribute attr: a dotted path, or an
// index; def replaces an Undefined result when given.
func mapAttribute(items []any, attr, def any) ([]any, error) {
	out := make([]any, len(items))
	for i, it := range items {
		v := it
		var err error
		if n, ok := attr.(int); ok {
			v, err = getitem(v, n)
		} else {
			for _, part := range strings.Split(pyStr(attr), ".") {
				if n, convErr := strconv.Atoi(part); convErr == nil {
					v, err = getitem(v, n)
				} else {
					v, err = getitem(v, part)
				}
				if err != nil {
					break
				}
			}
		}
		if err != nil {
			return nil, err
		}
		if v == nil && def != nil {
			v = def
		}
		out[i] = v
	}
	return out, nil
}

// sortedKeys returns m's keys in order, for deterministic kwargs.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
