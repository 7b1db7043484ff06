// Package schematest builds the JSON Schemas that bound a conversion's work,
// for the tests of grammar (the Converter) and of server (through the API).
package schematest

import (
	"fmt"
	"strings"
)

// NestedTypeLists is the audit's schema (about 1.7 KB at depth 18):
// objects nested depth deep, each with a type list naming object twice and
// array, whose items and property are the next level. Before conversions
// were memoized each level was converted once per listed type: 3^depth
// conversions of its leaf.
func NestedTypeLists(depth int) string {
	s := `{"type": "string"}`
	for i := range depth {
		s = fmt.Sprintf(`{"type": ["object", "array", "object"], "properties": {"p%d": %s}, "items": {"$comment": "x"}}`, i, s)
	}
	return s
}

// FanOut is a schema whose oneOf check walks $refs that fan out 16 ways 16
// deep: refused once past the conversion's work bound.
func FanOut() string {
	var defs []string
	for i := range 16 {
		refs := strings.Repeat(fmt.Sprintf(`{"$ref": "#/$defs/d%d"}, `, i+1), 15) + fmt.Sprintf(`{"$ref": "#/$defs/d%d"}`, i+1)
		defs = append(defs, fmt.Sprintf(`"d%d": {"anyOf": [%s]}`, i, refs))
	}
	return `{"$defs": {` + strings.Join(defs, ", ") + `, "d16": {"type": "string"}}, "oneOf": [{"$ref": "#/$defs/d0"}, {"type": "integer"}]}`
}
