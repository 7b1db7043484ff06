package grammar

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
)

// layoutSchemas are the corners of llama.cpp's layout (empty repetitions,
// single items, optional members, nested alternatives).
var layoutSchemas = []string{
	`{"type": "array", "maxItems": 0}`,
	`{"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 1}`,
	`{"type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 3}`,
	`{"type": "array", "items": {"type": "integer"}, "minItems": 3}`,
	`{"type": "array", "items": {"type": "integer"}, "minItems": 0, "maxItems": 5}`,
	`{"type": "array", "prefixItems": []}`,
	`{"type": "array", "prefixItems": [{"type": "integer"}]}`,
	`{"type": "string", "pattern": ""}`,
	`{"type": "string", "pattern": "a|b"}`,
	`{"type": "string", "minLength": 1, "maxLength": 1}`,
	`{"type": "string", "minLength": 4, "maxLength": 4}`,
	`{"type": "string", "maxLength": 1}`,
	`{"type": "number", "exclusiveMinimum": 0}`,
	`{"type": "number", "exclusiveMinimum": 7}`,
	`{"type": "number", "minimum": 0, "maximum": 100}`,
	`{"type": "number", "minimum": 5, "maximum": 5}`,
	`{"type": "integer", "minimum": -100}`,
	`{"type": "integer", "maximum": 0}`,
	`{"type": "integer", "minimum": -1000, "maximum": -3}`,
	`{"type": "integer", "minimum": 12345678901234}`,
	`{"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}}`,
	`{"type": "object", "properties": {"abc": {"type": "integer"}, "abd": {"type": "integer"}, "x\"y": {}}, "additionalProperties": true}`,
	`{"type": "object", "properties": {"a": {}, "b": {}, "c": {}, "d": {}}, "required": ["b", "d"]}`,
	`{"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"], "additionalProperties": {"type": "null"}}`,
	`{"type": ["integer", "string", "null"], "minimum": 3, "maxLength": 2}`,
	`{"const": 5, "type": "string"}`,
	`{"enum": ["a", 1], "type": "string"}`,
	`{"enum": ["only"]}`,
	`{"anyOf": [{"type": "integer"}, {"anyOf": [{"type": "null"}, {"type": "boolean"}]}]}`,
	`{"$defs": {"a": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}`,
	`{"$ref": "#"}`,
	`{"type": "object", "additionalProperties": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}`,
	`{"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]}, "minItems": 2}`,
}

var rewriteGolden = flag.Bool("rewrite", false, "rewrite testdata/schema-gbnf.golden")

// TestSchemaGBNFGolden pins the GBNF text the converter writes for the
// test schemas and llama.cpp's integration schemas (testdata/
// schema-gbnf.golden, -rewrite to update): the converter builds its rules
// as Builder expressions, and their text keeps llama.cpp's layout.
func TestSchemaGBNFGolden(t *testing.T) {
	schemas := append(slices.Clone(testSchemas), layoutSchemas...)
	cases := llamaCases(t)
	for _, c := range cases {
		if c.Kind == "schema" {
			schemas = append(schemas, c.Source)
		}
	}
	var out strings.Builder
	for _, s := range schemas {
		out.WriteString("### " + strings.ReplaceAll(s, "\n", " ") + "\n")
		src, err := JSONSchemaGBNF([]byte(s))
		if err != nil {
			out.WriteString("error: " + err.Error() + "\n")
			continue
		}
		out.WriteString(src)
	}
	const path = "testdata/schema-gbnf.golden"
	if *rewriteGolden {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		g, w := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Fatalf("line %d:\n got %s\nwant %s", i+1, g[i], w[i])
			}
		}
		t.Fatalf("got %d lines, want %d", len(g), len(w))
	}
}
