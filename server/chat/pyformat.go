package chat

import (
	"fmt"
	"strconv"
	"strings"
)

// percentFormat is Python's format % args (and jinja2's format filter):
// %s, %r, %d, %i, %f, %e, %g, %x, %o, %c and %% with flags, width and
// precision; args is a tuple of values, or a dict for %(name)s.
func percentFormat(format string, args any) (string, error) {
	var values []any
	named, isDict := args.(dict)
	if t, ok := args.(tuple); ok {
		values = t
	} else if !isDict {
		values = []any{args}
	}
	var b strings.Builder
	next := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		j := i + 1
		var v any
		haveValue := false
		if j < len(format) && format[j] == '(' && isDict {
			end := strings.IndexByte(format[j:], ')')
			if end < 0 {
				return "", &pyError{"ValueError", "incomplete format key"}
			}
			v, _ = named.lookup(format[j+1 : j+end])
			haveValue, j = true, j+end+1
		}
		start := j
		for j < len(format) && strings.IndexByte("#0- +", format[j]) >= 0 {
			j++
		}
		for j < len(format) && (format[j] >= '0' && format[j] <= '9' || format[j] == '.') {
			j++
		}
		if j == len(format) {
			return "", &pyError{"ValueError", "incomplete format"}
		}
		spec, verb := format[start:j], format[j]
		i = j
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if !haveValue {
			if next >= len(values) {
				return "", typeError("not enough arguments for format string")
			}
			v, next = values[next], next+1
		}
		s, err := formatOne(spec, verb, v)
		if err != nil {
			return "", err
		}
		if b.Len()+len(s) > maxString {
			return "", tooLong(b.Len() + len(s))
		}
		b.WriteString(s)
	}
	if !isDict && next < len(values) {
		return "", typeError("not all arguments converted during string formatting")
	}
	return b.String(), nil
}

func formatOne(spec string, verb byte, v any) (string, error) {
	f, isInt, isNum := number(v)
	switch verb {
	case 's':
		return fmt.Sprintf("%"+spec+"s", pyStr(v)), nil
	case 'r', 'a':
		return fmt.Sprintf("%"+spec+"s", pyRepr(v)), nil
	case 'c':
		if isInt {
			return string(rune(asInt(v))), nil
		}
		return pyStr(v), nil
	}
	if !isNum {
		return "", typeError("%%%c format: a real number is required, not %s", verb, typeName(v))
	}
	switch verb {
	case 'd', 'i', 'u':
		return fmt.Sprintf("%"+spec+"d", int(f)), nil
	case 'x', 'X', 'o':
		if !isInt {
			return "", typeError("%%%c format: an integer is required, not float", verb)
		}
		return fmt.Sprintf("%"+spec+string(verb), asInt(v)), nil
	case 'f', 'F', 'e', 'E', 'g', 'G':
		if !strings.Contains(spec, ".") {
			spec += ".6" // Python's default precision; Go's is the shortest
		}
		return fmt.Sprintf("%"+spec+string(verb), f), nil
	}
	return "", &pyError{"ValueError", fmt.Sprintf("unsupported format character '%c'", verb)}
}

// braceFormat is str.format with {}, {0} and {name} fields and {{ }}
// escapes; format specs and conversions ({:>8}, {!r}) are not supported.
func braceFormat(format string, args []any, kwargs map[string]any) (string, error) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c == '}' {
			if i+1 < len(format) && format[i+1] == '}' {
				i++
			}
			b.WriteByte('}')
			continue
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(format) && format[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		end := strings.IndexByte(format[i:], '}')
		if end < 0 {
			return "", &pyError{"ValueError", "Single '{' encountered in format string"}
		}
		field := format[i+1 : i+end]
		i += end
		if strings.ContainsAny(field, ":!") {
			return "", &pyError{"ValueError", "format specs are not supported: {" + field + "}"}
		}
		var v any
		switch n, err := strconv.Atoi(field); {
		case field == "":
			if auto >= len(args) {
				return "", &pyError{"IndexError", "Replacement index out of range"}
			}
			v, auto = args[auto], auto+1
		case err == nil:
			if n >= len(args) {
				return "", &pyError{"IndexError", "Replacement index out of range"}
			}
			v = args[n]
		default:
			var ok bool
			if v, ok = kwargs[field]; !ok {
				return "", &pyError{"KeyError", strRepr(field)}
			}
		}
		if s := pyStr(v); b.Len()+len(s) <= maxString {
			b.WriteString(s)
		} else {
			return "", tooLong(b.Len() + len(s))
		}
	}
	return b.String(), nil
}
