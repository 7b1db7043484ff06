package server

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/troupe-llm/troupe/messages"
)

// TestConstraintMapping: each constrained-output field becomes its
// messages.Grammar (and remembers the field's name); a malformed value,
// an unknown response_format type or two constraints at once is a 400
// about the field.
func TestConstraintMapping(t *testing.T) {
	schema := `{"type": "object", "properties": {"a": {"type": "integer"}}}`
	js := func(src string) *messages.Grammar {
		return &messages.Grammar{Kind: messages.GrammarJSONSchema, Source: src}
	}
	obj := &messages.Grammar{Kind: messages.GrammarJSONObject}
	for _, tc := range []struct {
		body  string
		want  *messages.Grammar
		param string // the grammar's field, or the error's
		fails bool
	}{
		{`{}`, nil, "", false},
		{`{"response_format": {"type": "text"}}`, nil, "", false},
		{`{"response_format": null, "grammar": "", "guided_regex": null}`, nil, "", false},
		{`{"response_format": {"type": "json_object"}}`, obj, "response_format", false},
		{`{"response_format": {"type": "json_object", "schema": ` + schema + `}}`, js(schema), "response_format", false},
		{`{"response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true, "schema": ` + schema + `}}}`, js(schema), "response_format", false},
		{`{"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}`, obj, "response_format", false},
		{`{"response_format": {"type": "json_schema", "schema": ` + schema + `}}`, js(schema), "response_format", false},
		{`{"structured_outputs": {"json": ` + schema + `}}`, js(schema), "structured_outputs", false},
		{`{"structured_outputs": {"json": "{\"type\": \"string\"}"}}`, js(`{"type": "string"}`), "structured_outputs", false},
		{`{"structured_outputs": {"regex": "[a-z]+"}}`, &messages.Grammar{Kind: messages.GrammarRegex, Source: "[a-z]+"}, "structured_outputs", false},
		{`{"structured_outputs": {"choice": ["yes", "no"]}}`, &messages.Grammar{Kind: messages.GrammarChoice, Source: `["yes","no"]`}, "structured_outputs", false},
		{`{"structured_outputs": {"grammar": "root ::= \"a\""}}`, &messages.Grammar{Kind: messages.GrammarGBNF, Source: `root ::= "a"`}, "structured_outputs", false},
		{`{"structured_outputs": {"json_object": true}}`, obj, "structured_outputs", false},
		{`{"structured_outputs": {}}`, nil, "", false},
		{`{"guided_json": ` + schema + `}`, js(schema), "guided_json", false},
		{`{"guided_json": "{\"type\": \"object\"}"}`, js(`{"type": "object"}`), "guided_json", false},
		{`{"guided_regex": "\\d+"}`, &messages.Grammar{Kind: messages.GrammarRegex, Source: `\d+`}, "guided_regex", false},
		{`{"guided_choice": ["a", "b c"]}`, &messages.Grammar{Kind: messages.GrammarChoice, Source: `["a","b c"]`}, "guided_choice", false},
		{`{"guided_grammar": "root ::= [0-9]+"}`, &messages.Grammar{Kind: messages.GrammarGBNF, Source: "root ::= [0-9]+"}, "guided_grammar", false},
		{`{"grammar": "root ::= [0-9]+"}`, &messages.Grammar{Kind: messages.GrammarGBNF, Source: "root ::= [0-9]+"}, "grammar", false},
		{`{"json_schema": ` + schema + `}`, js(schema), "json_schema", false},
		{`{"response_format": {"type": "text"}, "guided_choice": ["a"]}`, &messages.Grammar{Kind: messages.GrammarChoice, Source: `["a"]`}, "guided_choice", false},

		{`{"response_format": {"type": "sound"}}`, nil, "response_format", true},
		{`{"response_format": "json"}`, nil, "response_format", true},
		{`{"response_format": {}}`, nil, "response_format", true},
		{`{"response_format": {"type": "json_schema"}}`, nil, "response_format", true},
		{`{"response_format": {"type": "structural_tag"}}`, nil, "response_format", true},
		{`{"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": [1]}}}`, nil, "response_format", true},
		{`{"structured_outputs": {"regex": "a", "choice": ["a"]}}`, nil, "structured_outputs", true},
		{`{"structured_outputs": {"json": ` + schema + `, "json_object": true}}`, nil, "structured_outputs", true},
		{`{"structured_outputs": {"structural_tag": {}}}`, nil, "structured_outputs", true},
		{`{"structured_outputs": {"choice": "a"}}`, nil, "structured_outputs", true},
		{`{"structured_outputs": [1]}`, nil, "structured_outputs", true},
		{`{"guided_json": 5}`, nil, "guided_json", true},
		{`{"guided_json": "not json"}`, nil, "guided_json", true},
		{`{"guided_regex": 5}`, nil, "guided_regex", true},
		{`{"guided_choice": []}`, nil, "guided_choice", true},
		{`{"guided_choice": "a"}`, nil, "guided_choice", true},
		{`{"grammar": {"a": 1}}`, nil, "grammar", true},
		{`{"response_format": {"type": "json_object"}, "guided_regex": "a"}`, nil, "guided_regex", true},
		{`{"grammar": "root ::= \"a\"", "json_schema": {}}`, nil, "json_schema", true},
		{`{"guided_json": {}, "structured_outputs": {"regex": "a"}}`, nil, "guided_json", true},
	} {
		t.Run(tc.body, func(t *testing.T) {
			var f samplingFields
			if err := json.Unmarshal([]byte(tc.body), &f); err != nil {
				t.Fatal(err)
			}
			var got messages.GenerateRequest
			e := f.toRequest(&got, -1)
			switch {
			case tc.fails:
				if e == nil || e.Param == nil || *e.Param != tc.param || e.Status != 400 {
					t.Fatalf("got %+v, want a 400 about %s", e, tc.param)
				}
			case e != nil:
				t.Fatal(e)
			case !reflect.DeepEqual(got.Grammar, tc.want) || f.grammarParam != tc.param:
				t.Fatalf("grammar %+v from %q, want %+v from %q", got.Grammar, f.grammarParam, tc.want, tc.param)
			}
		})
	}
}

// TestJSONFormatGrammar: Ollama's format maps here: "json" (no schema) is
// any object, a schema (object or JSON text) a json_schema.
func TestJSONFormatGrammar(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want *messages.Grammar
		ok   bool
	}{
		{``, &messages.Grammar{Kind: messages.GrammarJSONObject}, true},
		{`null`, &messages.Grammar{Kind: messages.GrammarJSONObject}, true},
		{` {"type": "object"} `, &messages.Grammar{Kind: messages.GrammarJSONSchema, Source: `{"type": "object"}`}, true},
		{`"{\"type\": \"array\"}"`, &messages.Grammar{Kind: messages.GrammarJSONSchema, Source: `{"type": "array"}`}, true},
		{`true`, &messages.Grammar{Kind: messages.GrammarJSONSchema, Source: `true`}, true},
		{`[1]`, nil, false},
		{`"json"`, nil, false},
		{`7`, nil, false},
	} {
		got, err := jsonFormatGrammar(json.RawMessage(tc.in))
		if (err == nil) != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("jsonFormatGrammar(%s) = %+v, %v; want %+v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
