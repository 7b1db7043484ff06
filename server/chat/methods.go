package chat

import (
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// fn is a callable template value: gonja calls a Go func of this shape with
// the call's arguments.
type fn = func(*exec.VarArgs) *exec.Value

// method returns the bound method name of a str, dict or list, or nil. The
// methods that would modify their object are refused, as jinja2's
// ImmutableSandboxedEnvironment (the one transformers uses) refuses them.
func method(obj any, name string) fn {
	var impl func(args []any, kwargs map[string]any) (any, error)
	switch o := obj.(type) {
	case string:
		impl = strMethod(o, name)
	case markup:
		impl = strMethod(string(o), name)
	case dict:
		impl = dictMethod(o, name)
	case list:
		impl = listMethod(o, name)
	}
	if impl == nil {
		return nil
	}
	return func(va *exec.VarArgs) *exec.Value {
		args := make([]any, len(va.Args))
		for i, a := range va.Args {
			args[i] = unwrap(a)
		}
		kwargs := map[string]any{}
		for k, v := range va.KwArgs {
			kwargs[k] = unwrap(v)
		}
		v, err := impl(args, kwargs)
		if err != nil {
			return exec.AsValue(err)
		}
		return exec.AsValue(v)
	}
}

func unsafeMethod(typ, name string) func([]any, map[string]any) (any, error) {
	return func([]any, map[string]any) (any, error) {
		return nil, &pyError{"SecurityError", fmt.Sprintf("access to attribute '%s' of '%s' object is unsafe.", name, typ)}
	}
}

// arg returns positional argument i, or keyword name, or def.
func arg(args []any, kwargs map[string]any, i int, name string, def any) any {
	if i < len(args) {
		return args[i]
	}
	if v, ok := kwargs[name]; ok {
		return v
	}
	return def
}

func dictMethod(d dict, name string) func([]any, map[string]any) (any, error) {
	switch name {
	case "get":
		return func(args []any, kw map[string]any) (any, error) {
			if v, ok := d.lookup(arg(args, kw, 0, "key", nil)); ok {
				return v, nil
			}
			return arg(args, kw, 1, "default", none), nil
		}
	case "items":
		return func([]any, map[string]any) (any, error) {
			out := list{}
			for _, k := range d.keys() {
				v, _ := d.lookup(k)
				out = append(out, tuple{k, v})
			}
			return out, nil
		}
	case "keys":
		return func([]any, map[string]any) (any, error) { return list(d.keys()), nil }
	case "values":
		return func([]any, map[string]any) (any, error) {
			out := list{}
			for _, k := range d.keys() {
				v, _ := d.lookup(k)
				out = append(out, v)
			}
			return out, nil
		}
	case "copy":
		return func([]any, map[string]any) (any, error) {
			c := dict{}
			for _, k := range d.keys() {
				v, _ := d.lookup(k)
				c.set(k, v)
			}
			return c, nil
		}
	case "pop", "popitem", "setdefault", "update", "clear":
		return unsafeMethod("dict", name)
	}
	return nil
}

func listMethod(l list, name string) func([]any, map[string]any) (any, error) {
	switch name {
	case "index":
		return func(args []any, kw map[string]any) (any, error) {
			x := arg(args, kw, 0, "value", nil)
			for i, v := range l {
				if pyEqual(v, x) {
					return i, nil
				}
			}
			return nil, &pyError{"ValueError", pyRepr(x) + " is not in list"}
		}
	case "count":
		return func(args []any, kw map[string]any) (any, error) {
			n := 0
			for _, v := range l {
				if pyEqual(v, arg(args, kw, 0, "value", nil)) {
					n++
				}
			}
			return n, nil
		}
	case "copy":
		return func([]any, map[string]any) (any, error) { return append(list{}, l...), nil }
	case "append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear":
		return unsafeMethod("list", name)
	}
	return nil
}

// isSpace is Python's str.isspace for one character.
func isSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// stripSet returns the predicate strip(chars) removes: whitespace when chars
// is None.
func stripSet(chars any) func(rune) bool {
	if c, ok := chars.(string); ok {
		return func(r rune) bool { return strings.ContainsRune(c, r) }
	}
	return isSpace
}

func strMethod(s, name string) func([]any, map[string]any) (any, error) {
	unary := func(f func(string) any) func([]any, map[string]any) (any, error) {
		return func([]any, map[string]any) (any, error) { return f(s), nil }
	}
	switch name {
	case "strip":
		return func(args []any, kw map[string]any) (any, error) {
			return strings.TrimFunc(s, stripSet(arg(args, kw, 0, "chars", none))), nil
		}
	case "lstrip":
		return func(args []any, kw map[string]any) (any, error) {
			return strings.TrimLeftFunc(s, stripSet(arg(args, kw, 0, "chars", none))), nil
		}
	case "rstrip":
		return func(args []any, kw map[string]any) (any, error) {
			return strings.TrimRightFunc(s, stripSet(arg(args, kw, 0, "chars", none))), nil
		}
	case "split", "rsplit":
		return func(args []any, kw map[string]any) (any, error) {
			sep := arg(args, kw, 0, "sep", none)
			maxsplit, _ := arg(args, kw, 1, "maxsplit", -1).(int)
			return split(s, sep, maxsplit, name == "rsplit")
		}
	case "splitlines":
		return func([]any, map[string]any) (any, error) {
			out := list{}
			for _, l := range splitLines(s) {
				out = append(out, l)
			}
			return out, nil
		}
	case "startswith", "endswith":
		return func(args []any, kw map[string]any) (any, error) {
			affixes := []any{arg(args, kw, 0, "prefix", nil)}
			if l, ok := sequence(affixes[0]); ok && !isStr(affixes[0]) {
				affixes = l
			}
			for _, a := range affixes {
				if !isStr(a) {
					return nil, typeError("%s first arg must be str or a tuple of str, not %s", name, typeName(a))
				}
				if name == "startswith" && strings.HasPrefix(s, pyStr(a)) || name == "endswith" && strings.HasSuffix(s, pyStr(a)) {
					return true, nil
				}
			}
			return false, nil
		}
	case "upper":
		return unary(func(s string) any { return upper(s) })
	case "lower":
		return unary(func(s string) any { return lower(s) })
	case "title":
		return unary(func(s string) any { return strTitle(s) })
	case "capitalize":
		return unary(func(s string) any { return capitalize(s) })
	case "replace":
		return func(args []any, kw map[string]any) (any, error) {
			count, _ := arg(args, kw, 2, "count", -1).(int)
			old, new := pyStr(arg(args, kw, 0, "old", "")), pyStr(arg(args, kw, 1, "new", ""))
			if err := replacedLen(s, old, new, count); err != nil {
				return nil, err
			}
			return strings.Replace(s, old, new, count), nil
		}
	case "find", "rfind", "count":
		return func(args []any, kw map[string]any) (any, error) {
			sub := pyStr(arg(args, kw, 0, "sub", ""))
			switch name {
			case "find":
				return runeIndex(s, strings.Index(s, sub)), nil
			case "rfind":
				return runeIndex(s, strings.LastIndex(s, sub)), nil
			}
			return strings.Count(s, sub), nil
		}
	case "join":
		return func(args []any, kw map[string]any) (any, error) {
			items, err := iterate(arg(args, kw, 0, "iterable", nil))
			if err != nil {
				return nil, err
			}
			for i, it := range items {
				if !isStr(it) {
					return nil, typeError("sequence item %d: expected str instance, %s found", i, typeName(it))
				}
			}
			parts, err := joinParts(items, s, pyStr)
			if err != nil {
				return nil, err
			}
			return strings.Join(parts, s), nil
		}
	case "format":
		return func(args []any, kw map[string]any) (any, error) { return braceFormat(s, args, kw) }
	case "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper":
		return unary(func(s string) any { return strIs(s, name) })
	}
	return nil
}

func runeIndex(s string, byteIndex int) int {
	if byteIndex < 0 {
		return -1
	}
	return len([]rune(s[:byteIndex]))
}

// split is str.split and str.rsplit: on runs of whitespace when sep is None.
func split(s string, sep any, maxsplit int, fromRight bool) (any, error) {
	var parts []string
	if sep == nil || sep == any(none) {
		parts = strings.FieldsFunc(s, isSpace)
		if maxsplit >= 0 && len(parts) > maxsplit+1 {
			// Rejoining would lose the original spacing: split by hand.
			parts = splitSpaceN(s, maxsplit, fromRight)
		}
	} else {
		sepStr := pyStr(sep)
		if sepStr == "" {
			return nil, &pyError{"ValueError", "empty separator"}
		}
		n := -1
		if maxsplit >= 0 {
			n = maxsplit + 1
		}
		if fromRight && n > 0 {
			parts = reverseStrings(strings.SplitN(reverseString(s), reverseString(sepStr), n))
			for i := range parts {
				parts[i] = reverseString(parts[i])
			}
		} else {
			parts = strings.SplitN(s, sepStr, n)
		}
	}
	out := make(list, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

func splitSpaceN(s string, maxsplit int, fromRight bool) []string {
	var parts []string
	r := []rune(s)
	if fromRight {
		end := len(r)
		for len(parts) < maxsplit {
			for end > 0 && isSpace(r[end-1]) {
				end--
			}
			start := end
			for start > 0 && !isSpace(r[start-1]) {
				start--
			}
			if start == 0 {
				break
			}
			parts = append([]string{string(r[start:end])}, parts...)
			end = start
		}
		rest := strings.TrimRightFunc(string(r[:end]), isSpace)
		if rest != "" {
			parts = append([]string{rest}, parts...)
		}
		return parts
	}
	i := 0
	for len(parts) < maxsplit {
		for i < len(r) && isSpace(r[i]) {
			i++
		}
		j := i
		for j < len(r) && !isSpace(r[j]) {
			j++
		}
		if j == len(r) {
			break
		}
		parts = append(parts, string(r[i:j]))
		i = j
	}
	rest := strings.TrimLeftFunc(string(r[i:]), isSpace)
	if rest != "" {
		parts = append(parts, rest)
	}
	return parts
}

func reverseString(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

func reverseStrings(s []string) []string {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
	return s
}

// splitLines is str.splitlines: on \n, \r\n, \r and the other line
// boundaries Python knows.
func splitLines(s string) []string {
	var out []string
	r := []rune(s)
	start := 0
	for i := 0; i < len(r); i++ {
		switch r[i] {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			out = append(out, string(r[start:i]))
			if r[i] == '\r' && i+1 < len(r) && r[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	if start < len(r) {
		out = append(out, string(r[start:]))
	}
	return out
}

// upper, lower and title are Python's full Unicode case mappings
// ('ß'.upper() is 'SS'), which Go's strings.ToUpper does not apply.
func upper(s string) string { return cases.Upper(language.Und).String(s) }
func lower(s string) string { return cases.Lower(language.Und).String(s) }
func title(s string) string { return cases.Title(language.Und, cases.NoLower).String(s) }

// strTitle is str.title: a letter after a non-letter is title-cased, any
// other lower-cased.
func strTitle(s string) string {
	var b strings.Builder
	lo, ti := cases.Lower(language.Und), cases.Title(language.Und, cases.NoLower) // once: making one costs a µs
	prevLetter := false
	for _, r := range s {
		if prevLetter {
			b.WriteString(lo.String(string(r)))
		} else {
			b.WriteString(ti.String(string(r)))
		}
		prevLetter = unicode.IsLetter(r)
	}
	return b.String()
}

// capitalize is str.capitalize: the first character title-cased, the rest
// lower.
func capitalize(s string) string {
	r := []rune(s)
	if len(r) == 0 {
		return s
	}
	return title(string(r[0])) + lower(string(r[1:]))
}

func strIs(s, name string) bool {
	if s == "" {
		return false
	}
	cased := false
	for _, r := range s {
		switch name {
		case "isdigit":
			if !unicode.IsDigit(r) {
				return false
			}
		case "isalpha":
			if !unicode.IsLetter(r) {
				return false
			}
		case "isalnum":
			if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
				return false
			}
		case "isspace":
			if !isSpace(r) {
				return false
			}
		case "islower":
			if unicode.IsUpper(r) || unicode.IsTitle(r) {
				return false
			}
			cased = cased || unicode.IsLower(r)
		case "isupper":
			if unicode.IsLower(r) || unicode.IsTitle(r) {
				return false
			}
			cased = cased || unicode.IsUpper(r)
		}
	}
	return cased || (name != "islower" && name != "isupper")
}
