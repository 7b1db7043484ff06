package chat

import (
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// The operations whose Python semantics gonja lacks. rewrite.go routes the
// template's expressions through them.

// pyError is an exception the template raised while rendering, named after
// Python's (TypeError, UndefinedError…).
type pyError struct{ kind, msg string }

func (e *pyError) Error() string { return e.kind + ": " + e.msg }

func typeError(format string, args ...any) error {
	return &pyError{"TypeError", fmt.Sprintf(format, args...)}
}

func undefinedError(what string) error {
	return &pyError{"UndefinedError", what + " is undefined"}
}

// typeName is Python's name for x's type, as error messages print it.
func typeName(x any) string {
	switch x.(type) {
	case nil:
		return "Undefined"
	case *noneType:
		return "NoneType"
	case string:
		return "str"
	case markup:
		return "Markup"
	case bool:
		return "bool"
	case int:
		return "int"
	case float64:
		return "float"
	case list, []any, exec.ValuesList:
		return "list"
	case tuple:
		return "tuple"
	case generator:
		return "generator"
	case dict:
		return "dict"
	case *namespace:
		return "Namespace"
	}
	if reflect.ValueOf(x).Kind() == reflect.Func {
		return "function"
	}
	return fmt.Sprintf("%T", x)
}

// getattr is jinja2's environment.getattr: an attribute (a method, for our
// values), else the item of that name, else Undefined. Only Undefined itself
// has no attributes at all.
func getattr(obj any, name string) (any, error) {
	switch o := obj.(type) {
	case nil:
		return nil, undefinedError(fmt.Sprintf("attribute %q of an undefined value", name))
	case *namespace:
		return o.vals[name], nil
	case dict:
		if m := method(o, name); m != nil {
			return m, nil // d.items is the method even where d has an "items" key
		}
		v, _ := o.lookup(name)
		return v, nil
	case list, string, markup:
		if m := method(o, name); m != nil {
			return m, nil
		}
		return nil, nil
	case *noneType, bool, int, float64, tuple, generator:
		return nil, nil
	}
	// gonja's own objects: loop, cycler…
	v := exec.AsValue(obj)
	if a, ok := v.GetAttribute(name); ok {
		return unwrap(a), nil
	}
	if a, ok := v.GetItem(name); ok {
		return unwrap(a), nil
	}
	return nil, nil
}

// getitem is jinja2's environment.getitem: obj[key], else the attribute of
// that name, else Undefined.
func getitem(obj, key any) (any, error) {
	switch o := obj.(type) {
	case nil:
		return nil, undefinedError(fmt.Sprintf("item %s of an undefined value", pyRepr(key)))
	case dict:
		if v, ok := o.lookup(key); ok {
			return v, nil
		}
	case string, markup:
		if i, ok := key.(int); ok {
			return runeAt(pyStr(o), i), nil
		}
	case list, tuple, []any, exec.ValuesList, generator:
		if i, ok := key.(int); ok {
			if _, isGen := o.(generator); isGen {
				return nil, typeError("'generator' object is not subscriptable")
			}
			items, _ := sequence(o)
			if i < 0 {
				i += len(items)
			}
			if i >= 0 && i < len(items) {
				return items[i], nil
			}
			return nil, nil
		}
	}
	if s, ok := key.(string); ok {
		return getattr(obj, s)
	}
	return nil, nil
}

// runeAt is s[i] in Python (i counts code points, from the end when
// negative), or Undefined past either end; it builds nothing.
func runeAt(s string, i int) any {
	if i < 0 {
		i += utf8.RuneCountInString(s)
	}
	if i < 0 {
		return nil
	}
	for _, r := range s {
		if i == 0 {
			return string(r)
		}
		i--
	}
	return nil
}

// sequence returns the items of a str (its characters), list or tuple.
func sequence(x any) ([]any, bool) {
	switch s := x.(type) {
	case list:
		return s, true
	case tuple:
		return s, true
	case generator:
		return s, true
	case []any:
		return s, true
	case string:
		return chars(s), true
	case markup:
		return chars(string(s)), true
	case exec.ValuesList:
		out := make([]any, len(s))
		for i, v := range s {
			out[i] = unwrap(v)
		}
		return out, true
	}
	rv := reflect.ValueOf(x)
	if k := rv.Kind(); k == reflect.Slice || k == reflect.Array {
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = unwrap(rv.Index(i).Interface())
		}
		return out, true
	}
	return nil, false
}

func chars(s string) []any {
	out := []any{}
	for _, r := range s {
		out = append(out, string(r))
	}
	return out
}

// iterate is Python's iter(x) as a for loop sees it: a dict yields its keys,
// Undefined nothing, and None or a number is an error.
func iterate(x any) ([]any, error) {
	if d, ok := x.(dict); ok {
		return d.keys(), nil
	}
	if n, ok := x.(*namespace); ok {
		return nil, typeError("'%s' object is not iterable", typeName(n))
	}
	if x == nil {
		return nil, nil
	}
	if items, ok := sequence(x); ok {
		return items, nil
	}
	return nil, typeError("'%s' object is not iterable", typeName(x))
}

// truthy is Python's bool(x).
func truthy(x any) bool {
	switch v := x.(type) {
	case nil, *noneType:
		return false
	case bool:
		return v
	case int:
		return v != 0
	case float64:
		return v != 0
	case string:
		return v != ""
	case markup:
		return v != ""
	case dict:
		return len(v) > 0
	case generator:
		return true
	}
	if items, ok := sequence(x); ok {
		return len(items) > 0
	}
	return true
}

// isList reports whether x is a Python list (not a tuple, str or generator).
func isList(x any) bool {
	switch x.(type) {
	case list, []any, exec.ValuesList:
		return true
	}
	return false
}

func isStr(x any) bool {
	switch x.(type) {
	case string, markup:
		return true
	}
	return false
}

// number returns x as a float and whether it is an int (bool counts as one).
func number(x any) (f float64, isInt, ok bool) {
	switch v := x.(type) {
	case int:
		return float64(v), true, true
	case bool:
		if v {
			return 1, true, true
		}
		return 0, true, true
	case float64:
		return v, false, true
	}
	return 0, false, false
}

func asInt(x any) int {
	if b, ok := x.(bool); ok {
		if b {
			return 1
		}
		return 0
	}
	return x.(int)
}

// add is Python's a + b, with jinja2's Markup escaping the plain string it is
// added to.
func add(a, b any) (any, error) {
	if a == nil || b == nil {
		return nil, undefinedError("an operand of +")
	}
	if ma, ok := a.(markup); ok && isStr(b) {
		return ma + escape(b), nil
	}
	if mb, ok := b.(markup); ok && isStr(a) {
		return escape(a) + mb, nil
	}
	if sa, ok := a.(string); ok {
		if sb, ok := b.(string); ok {
			return sa + sb, nil
		}
		return nil, typeError("can only concatenate str (not %q) to str", typeName(b))
	}
	if fa, ia, ok := number(a); ok {
		if fb, ib, ok := number(b); ok {
			if ia && ib {
				return asInt(a) + asInt(b), nil
			}
			return fa + fb, nil
		}
	}
	if ta, ok := a.(tuple); ok {
		if tb, ok := b.(tuple); ok {
			return append(append(tuple{}, ta...), tb...), nil
		}
	} else if isList(a) && isList(b) {
		la, _ := sequence(a)
		lb, _ := sequence(b)
		return append(append(list{}, la...), lb...), nil
	}
	return nil, typeError("unsupported operand type(s) for +: '%s' and '%s'", typeName(a), typeName(b))
}

// concat is jinja2's a ~ b without autoescaping: both as strings, Undefined
// as "".
func concat(a, b any) any { return pyStr(a) + pyStr(b) }

// escape is markupsafe.escape: a Markup as it is, anything else as its str
// with HTML's special characters replaced.
func escape(x any) markup {
	if m, ok := x.(markup); ok {
		return m
	}
	return markup(htmlEscaper.Replace(pyStr(x)))
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&#39;", `"`, "&#34;")

// pyEqual is Python's a == b.
func pyEqual(a, b any) bool {
	a, b = unwrap(a), unwrap(b)
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if fa, _, ok := number(a); ok {
		fb, _, ok := number(b)
		return ok && fa == fb
	}
	if isStr(a) || isStr(b) {
		return isStr(a) && isStr(b) && pyStr(a) == pyStr(b)
	}
	if _, ok := a.(*noneType); ok {
		_, ok := b.(*noneType)
		return ok
	}
	if da, ok := a.(dict); ok {
		db, ok := b.(dict)
		if !ok || len(da) != len(db) {
			return false
		}
		for k, va := range da {
			vb, ok := db.lookup(k.key)
			if !ok || !pyEqual(va, vb) {
				return false
			}
		}
		return true
	}
	_, ta := a.(tuple)
	_, tb := b.(tuple)
	if (isList(a) || ta) && (isList(b) || tb) {
		la, _ := sequence(a)
		lb, _ := sequence(b)
		if ta != tb || len(la) != len(lb) {
			return false
		}
		for i := range la {
			if !pyEqual(la[i], lb[i]) {
				return false
			}
		}
		return true
	}
	if reflect.TypeOf(a).Comparable() && reflect.TypeOf(b).Comparable() {
		return a == b
	}
	return false
}

// contains is Python's item in container.
func contains(container, item any) (bool, error) {
	switch c := container.(type) {
	case nil:
		return false, nil
	case dict:
		_, ok := c.lookup(item)
		return ok, nil
	case string, markup:
		if !isStr(item) {
			return false, typeError("'in <string>' requires string as left operand, not %s", typeName(item))
		}
		return strings.Contains(pyStr(c), pyStr(item)), nil
	}
	items, ok := sequence(container)
	if !ok {
		return false, typeError("argument of type '%s' is not iterable", typeName(container))
	}
	for _, x := range items {
		if pyEqual(x, item) {
			return true, nil
		}
	}
	return false, nil
}
