package chat

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// jsonOptions are the arguments of transformers' tojson filter, which calls
// json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False) rather than jinja2's own HTML-safe tojson.
type jsonOptions struct {
	ensureASCII bool
	indent      *string // nil: all on one line
	itemSep     string
	keySep      string
	sortKeys    bool
}

// dumpJSON is Python's json.dumps with opts.
func dumpJSON(x any, opts jsonOptions) (any, error) {
	var b strings.Builder
	if err := writeJSON(&b, x, opts, 0); err != nil {
		return "", err
	}
	return checkSize(b.String(), nil)
}

func writeJSON(b *strings.Builder, x any, o jsonOptions, depth int) error {
	if b.Len() > maxString {
		return tooLong(b.Len())
	}
	switch v := unwrap(x).(type) {
	case *noneType:
		b.WriteString("null")
	case bool:
		b.WriteString(map[bool]string{true: "true", false: "false"}[v])
	case int:
		b.WriteString(strconv.Itoa(v))
	case float64:
		b.WriteString(jsonFloat(v))
	case string:
		writeJSONString(b, v, o.ensureASCII)
	case markup:
		writeJSONString(b, string(v), o.ensureASCII)
	case dict:
		keys := v.keys()
		if len(keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		type entry struct {
			key string
			val any
		}
		entries := make([]entry, len(keys))
		for i, k := range keys {
			ks, err := jsonKey(k)
			if err != nil {
				return err
			}
			entries[i].key = ks
			entries[i].val, _ = v.lookup(k)
		}
		if o.sortKeys {
			sort.SliceStable(entries, func(i, j int) bool { return entries[i].key < entries[j].key })
		}
		b.WriteByte('{')
		for i, e := range entries {
			writeSep(b, i, o, depth+1)
			writeJSONString(b, e.key, o.ensureASCII)
			b.WriteString(o.keySep)
			if err := writeJSON(b, e.val, o, depth+1); err != nil {
				return err
			}
		}
		writeClose(b, o, depth)
		b.WriteByte('}')
	case nil, generator, *namespace:
		return typeError("Object of type %s is not JSON serializable", typeName(v))
	default:
		items, ok := sequence(v)
		if !ok {
			return typeError("Object of type %s is not JSON serializable", typeName(v))
		}
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, it := range items {
			writeSep(b, i, o, depth+1)
			if err := writeJSON(b, it, o, depth+1); err != nil {
				return err
			}
		}
		writeClose(b, o, depth)
		b.WriteByte(']')
	}
	return nil
}

// writeSep starts item i of a list or object at depth.
func writeSep(b *strings.Builder, i int, o jsonOptions, depth int) {
	if i > 0 {
		b.WriteString(o.itemSep)
	}
	if o.indent != nil {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(*o.indent, depth))
	}
}

func writeClose(b *strings.Builder, o jsonOptions, depth int) {
	if o.indent != nil {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(*o.indent, depth))
	}
}

// jsonKey is how json.dumps writes a non-string dict key.
func jsonKey(k any) (string, error) {
	switch v := k.(type) {
	case string:
		return v, nil
	case bool:
		return map[bool]string{true: "true", false: "false"}[v], nil
	case int:
		return strconv.Itoa(v), nil
	case float64:
		return jsonFloat(v), nil
	case *noneType:
		return "null", nil
	}
	return "", typeError("keys must be str, int, float, bool or None, not %s", typeName(k))
}

// jsonFloat is f as json.dumps writes it: Python's repr, but nan and the
// infinities as JavaScript names them.
func jsonFloat(f float64) string {
	r := floatRepr(f)
	if js, ok := map[string]string{"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[r]; ok {
		return js
	}
	return r
}

// writeJSONString writes s quoted as json.dumps does: control characters,
// backslash and quote escaped, and with ensureASCII everything past ASCII as
// \uXXXX (UTF-16).
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20:
				fmt.Fprintf(b, `\u%04x`, r)
			case ensureASCII && r > 0x7e:
				if r > 0xffff {
					r1, r2 := utf16.EncodeRune(r)
					fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
				} else {
					fmt.Fprintf(b, `\u%04x`, r)
				}
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
