package grammar

import (
	"encoding/json"
	"os"
	"testing"
)

// llamaCase is one test_grammar or test_schema call of llama.cpp's
// tests/test-grammar-integration.cpp (MIT, b10573), extracted into
// testdata/llama-grammar-integration.json: a source and the strings it must
// accept and reject.
type llamaCase struct {
	Kind, Desc, Source string
	Pass, Fail         []string
}

// llamaDeviations are the cases where troupe differs from llama.cpp on
// purpose, and why.
var llamaDeviations = map[string]string{
	"simple grammar with tokens":  "token references (<[id]>) need a vocabulary at compile time: refused",
	"complex grammar with tokens": "token references (<[id]>) need a vocabulary at compile time: refused",
	"empty schema (object)":       "{} accepts any JSON value, as JSON Schema says (llama.cpp: any object)",
	"required props":              "uniqueItems true is refused: a grammar cannot express it (llama.cpp ignores it)",
}

// llamaCases reads llama.cpp's grammar integration cases.
func llamaCases(t *testing.T) []llamaCase {
	t.Helper()
	data, err := os.ReadFile("testdata/llama-grammar-integration.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []llamaCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestLlamaIntegration runs llama.cpp's grammar integration cases.
func TestLlamaIntegration(t *testing.T) {
	cases := llamaCases(t)
	for _, c := range cases {
		t.Run(c.Desc, func(t *testing.T) {
			if why, ok := llamaDeviations[c.Desc]; ok {
				t.Skip(why)
			}
			var g *Grammar
			var err error
			if c.Kind == "schema" {
				g, err = FromJSONSchema([]byte(c.Source))
			} else {
				g, err = Compile(c.Source)
			}
			if err != nil {
				t.Fatalf("%s: %v", c.Source, err)
			}
			checkAccepts(t, "grammar", g, c.Pass, c.Fail)
		})
	}
}
