package grammar

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
)

var rewriteGolden = flag.Bool("rewrite", false, "rewrite testdata/schema-gbnf.golden")

// TestSchemaGBNFGolden pins the GBNF text the converter writes for the
// test schemas and llama.cpp's integration schemas (testdata/
// schema-gbnf.golden, -rewrite to update): the converter builds its rules
// as Builder expressions, and their text keeps llama.cpp's layout.
func TestSchemaGBNFGolden(t *testing.T) {
	schemas := append([]string(nil), testSchemas...)
	data, err := os.ReadFile("testdata/llama-grammar-integration.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []llamaCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
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
