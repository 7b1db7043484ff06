package chat

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode"
)

// pyStr is Python's str(x); Undefined is "".
func pyStr(x any) string {
	switch v := unwrap(x).(type) {
	case nil:
		return ""
	case string:
		return v
	case markup:
		return string(v)
	case *noneType:
		return "None"
	case bool:
		if v {
			return "True"
		}
		return "False"
	case int:
		return strconv.Itoa(v)
	case float64:
		return floatRepr(v)
	case *namespace:
		var b strings.Builder
		b.WriteString("<Namespace {")
		for i, k := range v.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strRepr(k) + ": " + pyRepr(v.vals[k]))
			boundedRepr(b.Len())
		}
		b.WriteString("}>")
		return b.String()
	case generator:
		return "<generator object>"
	case dict:
		return pyRepr(v)
	case fmt.Stringer:
		return v.String()
	}
	if _, ok := sequence(x); ok {
		return pyRepr(x)
	}
	if reflect.ValueOf(x).Kind() == reflect.Func {
		return "<function>"
	}
	return fmt.Sprint(x)
}

// pyRepr is Python's repr(x).
func pyRepr(x any) string {
	switch v := unwrap(x).(type) {
	case nil:
		return "Undefined"
	case string:
		return strRepr(v)
	case markup:
		return "Markup(" + strRepr(string(v)) + ")"
	case dict:
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range v.keys() {
			if i > 0 {
				b.WriteString(", ")
			}
			val, _ := v.lookup(k)
			b.WriteString(pyRepr(k) + ": " + pyRepr(val))
			boundedRepr(b.Len())
		}
		b.WriteByte('}')
		return b.String()
	case generator:
		return pyStr(v)
	}
	if items, ok := sequence(x); ok && !isStr(x) {
		parts := make([]string, len(items))
		n := 0
		for i, it := range items {
			parts[i] = pyRepr(it)
			n += len(parts[i]) + 2
			boundedRepr(n)
		}
		if _, ok := x.(tuple); ok {
			if len(parts) == 1 {
				return "(" + parts[0] + ",)"
			}
			return "(" + strings.Join(parts, ", ") + ")"
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return pyStr(x)
}

// strRepr is repr of a str: single quotes unless the text holds a single
// quote and no double one; backslash escapes for the rest.
func strRepr(s string) string {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == ' ' || (r < 0x7f && r >= 0x20) || (r >= 0x80 && unicode.IsPrint(r)):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// floatRepr is Python's repr of a float: the shortest digits that round
// trip, positional from 1e-4 up to 1e16, scientific outside.
func floatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}
