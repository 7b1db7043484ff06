package grammar

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// testSchemas are written for the tests: each kind of the supported subset
// alone and combined.
var testSchemas = []string{
	`{"type": "boolean"}`,
	`{"type": "null"}`,
	`{"type": "integer"}`,
	`{"type": "number"}`,
	`{"type": "string"}`,
	`{}`,
	`true`,
	`{"type": "object"}`,
	`{"type": "array"}`,
	`{"type": ["string", "null"]}`,
	`{"enum": ["red", "green", "blue"]}`,
	`{"enum": [1, "two", null, true, {"a": [1]}]}`,
	`{"const": "fixed \"quoted\" \\ value\n"}`,
	`{"const": {"nested": [1, 2.5, "x"]}}`,
	`{"type": "string", "minLength": 2, "maxLength": 5}`,
	`{"type": "string", "maxLength": 0}`,
	`{"type": "string", "minLength": 3}`,
	`{"type": "string", "pattern": "^[a-z]{3}-[0-9]{2,4}$"}`,
	`{"type": "string", "pattern": "^(foo|bar)+baz?$"}`,
	`{"type": "string", "pattern": "[0-9]"}`,
	`{"type": "string", "pattern": "^\\d{3}\\.\\w+\\s?[\"\\\\]$"}`,
	`{"type": "string", "pattern": "^(?i)hello$"}`,
	`{"type": "string", "format": "date"}`,
	`{"$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}, "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"name": {"type": "string", "maxLength": 8}}, "required": ["name"]}]}`,
	`{"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a", "undescribed"]}`,
	`{"type": "string", "format": "time"}`,
	`{"type": "string", "format": "date-time"}`,
	`{"type": "string", "format": "uuid"}`,
	`{"type": "string", "format": "email"}`,
	`{"type": "string", "format": "ipv4"}`,
	`{"type": "string", "format": "hostname"}`,
	`{"type": "string", "format": "uri"}`,
	`{"type": "string", "format": "byte"}`,
	`{"type": "integer", "minimum": 0}`,
	`{"type": "integer", "minimum": 100}`,
	`{"type": "integer", "minimum": -5, "maximum": 12}`,
	`{"type": "integer", "minimum": 17, "maximum": 12345}`,
	`{"type": "integer", "maximum": -3}`,
	`{"type": "integer", "maximum": 250}`,
	`{"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}`,
	`{"type": "number", "minimum": 0}`,
	`{"type": "number", "minimum": 1, "maximum": 5}`,
	`{"type": "number", "minimum": 3, "maximum": 3}`,
	`{"type": "number", "minimum": 10}`,
	`{"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4}`,
	`{"type": "array", "items": {"type": "boolean"}, "maxItems": 1}`,
	`{"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1}`,
	`{"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}`,
	`{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"], "additionalProperties": false}`,
	`{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}, "c": {"type": "boolean"}}}`,
	`{"type": "object", "properties": {"id": {"type": "integer"}, "tag": {"type": "string"}, "ok": {"type": "boolean"}}, "required": ["id"]}`,
	`{"type": "object", "additionalProperties": {"type": "integer"}}`,
	`{"type": "object", "additionalProperties": false}`,
	`{"type": "object", "properties": {"a": {"type": "integer"}, "ab": {"type": "boolean"}}, "required": ["a"], "additionalProperties": {"type": "string"}}`,
	`{"type": "object", "properties": {"x": {"type": "null"}}, "additionalProperties": true, "x-vendor": 1, "id": "ignored"}`,
	`{"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "additionalProperties": false, "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}`,
	`{"type": "string", "pattern": "^[0-9]+$|^x|^(ef)$"}`,
	`{"type": "object", "properties": {"clé \"ü\"": {"const": 1}, "日本": {"type": "null"}}, "required": ["clé \"ü\"", "日本"]}`,
	`{"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 3}]}`,
	`{"oneOf": [{"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}, "required": ["kind", "r"]}, {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "integer", "minimum": 1}}, "required": ["kind", "side"]}]}`,
	`{"oneOf": [{"type": "string", "maxLength": 3}, {"type": "integer"}, {"type": "null"}]}`,
	`{"oneOf": [{"enum": ["a", 1, [1, 2]]}, {"enum": ["b", 1.5, [2, 1]]}, {"const": {"x": 1, "y": 2}}]}`,
	`{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "oneOf": [{"properties": {"kind": {"enum": ["a", "b"]}}, "required": ["kind"]}, {"properties": {"kind": {"$ref": "#/$defs/c"}}, "required": ["kind"]}], "$defs": {"c": {"const": "c"}}}`,
	`{"$defs": {"percent%field": {"type": "integer"}, "a~b/c": {"type": "null"}, "sp ace": {"const": 1}}, "type": "object", "properties": {"p": {"$ref": "#/$defs/percent%25field"}, "q": {"$ref": "#/$defs/a~0b~1c"}, "r": {"$ref": "#/$defs/sp%20ace"}}, "required": ["p", "q", "r"]}`,
	`{"type": "string", "format": "uuid", "minLength": 36, "maxLength": 36}`,
	`{"type": "string", "format": "email", "minLength": 1, "maxLength": 200}`,
	`{"type": "string", "format": "date", "maxLength": 10}`,
	`{"$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"], "additionalProperties": false}}, "type": "array", "items": {"$ref": "#/$defs/point"}, "maxItems": 3}`,
	`{"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}}, "required": ["v"]}}, "$ref": "#/$defs/node"}`,
	`{"definitions": {"s": {"type": "string", "maxLength": 4}}, "type": "object", "properties": {"a": {"$ref": "#/definitions/s"}, "b": {"$ref": "#/definitions/s"}}, "required": ["a", "b"]}`,
	`{"title": "Person", "description": "OpenAI strict style", "type": "object", "properties": {"name": {"type": "string", "description": "full name"}, "emails": {"type": "array", "items": {"type": "string", "format": "email"}}, "address": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["city", "zip"], "additionalProperties": false}]}, "role": {"enum": ["admin", "user"]}}, "required": ["name", "emails", "address", "role"], "additionalProperties": false}`,
	`{"type": "object", "properties": {"steps": {"type": "array", "items": {"type": "object", "properties": {"explanation": {"type": "string"}, "output": {"type": "string"}}, "required": ["explanation", "output"], "additionalProperties": false}}, "final_answer": {"type": "string"}}, "required": ["steps", "final_answer"], "additionalProperties": false}`,
}

func validator(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSchemaRandom samples documents from each test schema's grammar by
// picking tokens of the Llama 2 vocabulary uniformly among those the mask
// allows, and checks every finished one parses and validates against the
// schema (santhosh-tekuri/jsonschema, formats asserted). It logs the
// median compile time.
func TestSchemaRandom(t *testing.T) {
	v := testVocab(t)
	const samples, maxTokens = 4, 1500
	var compileTimes []time.Duration
	mask := make([]uint64, v.MaskWords())
	unfinished := 0
	for i, schema := range testSchemas {
		start := time.Now()
		g, err := FromJSONSchema([]byte(schema))
		compileTimes = append(compileTimes, time.Since(start))
		if err != nil {
			t.Errorf("schema %d %s: %v", i, schema, err)
			continue
		}
		val := validator(t, schema)
		r := rand.New(rand.NewPCG(uint64(i), 7))
		finished := 0
		for range samples {
			out, _, ok := generate(t, g, v, r, maxTokens, mask)
			if !ok {
				unfinished++
				continue
			}
			finished++
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
			if err != nil {
				t.Errorf("schema %d %s: output %q does not parse: %v", i, schema, out, err)
				continue
			}
			if err := val.Validate(inst); err != nil {
				t.Errorf("schema %d %s: output %q does not validate: %v", i, schema, out, err)
			}
		}
		if finished == 0 {
			t.Errorf("schema %d %s: no sample finished in %d tokens", i, schema, maxTokens)
		}
	}
	slices.Sort(compileTimes)
	t.Logf("%d schemas: compile time median %v, max %v; %d of %d samples unfinished in %d tokens",
		len(testSchemas), compileTimes[len(compileTimes)/2], compileTimes[len(compileTimes)-1], unfinished, samples*len(testSchemas), maxTokens)
}

func TestSchemaUnsupported(t *testing.T) {
	tests := []struct{ schema, feature string }{
		{`{"allOf": [{"type": "string"}, {"type": "integer"}]}`, `allOf schemas that differ on "type"`},
		{`{"allOf": [{"properties": {"a": {}}}], "additionalProperties": false}`, "allOf beside additionalProperties"},
		{`{"type": "object", "properties": {"a": {"not": {"type": "null"}}}}`, `keyword "not"`},
		{`{"type": "string", "format": "ipv6"}`, `format "ipv6"`},
		{`{"type": "object", "patternProperties": {"^a": {}}}`, `keyword "patternProperties"`},
		{`{"type": "number", "maximum": 3.5}`, "minimum/maximum on a number"},
		{`{"type": "number", "minimum": -1, "maximum": 3}`, "minimum/maximum on a number"},
		{`{"type": "sound"}`, `type "sound"`},
		{`{"$ref": "https://example.com/s.json"}`, "remote $ref"},
		{`{"type": "array", "uniqueItems": true}`, `keyword "uniqueItems"`},
		{`{"type": "object", "minProperties": 1}`, `keyword "minProperties"`},
		{`false`, "the schema false"},
		{`{"type": "string", "format": "email", "maxLength": 40}`, `format "email" with minLength/maxLength`},
		{`{"type": "string", "format": "hostname", "minLength": 2}`, `format "hostname" with minLength/maxLength`},
		{`{"type": "string", "format": "uri", "maxLength": 2000}`, `format "uri" with minLength/maxLength`},
		{`{"type": "string", "format": "date", "maxLength": 9}`, `format "date" with minLength/maxLength`},
		{`{"type": "string", "oneOf": [{"minLength": 2}, {"maxLength": 4}]}`, "oneOf with overlapping branches 0 and 1"},
		{`{"oneOf": [{"type": "integer"}, {"type": "number"}]}`, "oneOf with overlapping branches"},
		{`{"oneOf": [{"type": "string"}, {"type": "null"}, {"const": "x"}]}`, "oneOf with overlapping branches 0 and 2"},
		{`{"oneOf": [{"const": 1}, {"enum": [2, 1.0]}]}`, "oneOf with overlapping branches"},
		{`{"oneOf": [{"const": {"a": 1, "b": [2]}}, {"const": {"b": [2.0], "a": 1}}]}`, "oneOf with overlapping branches"},
		{`{"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}}, "required": ["k"]}, {"type": "object", "properties": {"k": {"enum": ["b", "a"]}}, "required": ["k"]}]}`, "oneOf with overlapping branches"},
		{`{"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}}, "required": ["k"]}, {"type": "object", "properties": {"k": {"const": "b"}}}]}`, "oneOf with overlapping branches"},
		{`{"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}}, "required": ["k"]}, {"properties": {"k": {"const": "b"}}, "required": ["k"]}, {"type": "string"}]}`, "oneOf with overlapping branches 1 and 2"},
		{`{"$defs": {"a": {}}, "$ref": "#a"}`, "to an anchor"},
	}
	for _, tt := range tests {
		_, err := FromJSONSchema([]byte(tt.schema))
		var ue *UnsupportedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.feature) {
			t.Errorf("%s: error %v, want an UnsupportedError naming %s", tt.schema, err, tt.feature)
		}
	}
	for _, bad := range []string{`{"type": "string", "maxLength": -1}`, `{"$ref": "#/$defs/missing"}`, `{"$defs": {"percent%field": {}}, "$ref": "#/$defs/percent%field"}`, `{"$defs": {"a": {}}, "$ref": "#/$defs/%zz"}`, `{"$defs": {"a/b": {}}, "$ref": "#/$defs/a/b"}`, `{"enum": []}`, `{`, `{"type": "integer", "minimum": 5, "maximum": 1}`} {
		if _, err := FromJSONSchema([]byte(bad)); err == nil {
			t.Errorf("%s: compiled, want an error", bad)
		}
	}
}

// TestIntegerRanges checks the integer bounds exhaustively on a window.
func TestIntegerRanges(t *testing.T) {
	bounds := []string{"", "-120", "-7", "-1", "0", "1", "9", "10", "17", "99", "100", "101", "250", "999", "1000"}
	for _, lo := range bounds {
		for _, hi := range bounds {
			s := `{"type": "integer"`
			if lo != "" {
				s += `, "minimum": ` + lo
			}
			if hi != "" {
				s += `, "maximum": ` + hi
			}
			s += "}"
			g, err := FromJSONSchema([]byte(s))
			var minV, maxV json.Number = json.Number(lo), json.Number(hi)
			l, _ := minV.Int64()
			h, _ := maxV.Int64()
			if lo != "" && hi != "" && l > h {
				if err == nil {
					t.Errorf("%s compiled", s)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			for n := -1500; n <= 1500; n++ {
				ok := matchesWhole(g, []byte(itoa(n)))
				want := (lo == "" || int64(n) >= l) && (hi == "" || int64(n) <= h)
				if ok != want {
					t.Fatalf("%s: %d accepted %v, want %v", s, n, ok, want)
				}
			}
			if matchesWhole(g, []byte("007")) {
				t.Fatalf("%s: a leading zero accepted", s)
			}
		}
	}
}

// matchesWhole reports whether g accepts the whole of text.
func matchesWhole(g *Grammar, text []byte) bool {
	m, _ := g.NewMatcher(nil)
	return m.AcceptBytes(text) == nil && m.CanEnd()
}

// checkAccepts checks that g (made from what) accepts each of accept and
// none of reject.
func checkAccepts(t *testing.T, what string, g *Grammar, accept, reject []string) {
	t.Helper()
	for _, s := range append(slices.Clone(accept), reject...) {
		if ok, want := matchesWhole(g, []byte(s)), slices.Contains(accept, s); ok != want {
			t.Errorf("%s on %q: %v, want %v", what, s, ok, want)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestRegexAndChoices(t *testing.T) {
	tests := []struct {
		pattern        string
		accept, reject []string
	}{
		{`[a-c]+x?`, []string{"a", "abcx"}, []string{"", "x", "ad"}},
		{`(\d{1,3}\.){3}\d{1,3}`, []string{"1.22.255.0"}, []string{"1.2.3", "1234.1.1.1"}},
		{`(?i)yes|no`, []string{"YeS", "no", "NO"}, []string{"yesno", "n"}},
		{`^[^\n]*$`, []string{"", "é ü"}, []string{"a\nb"}},
		{`.{2}`, []string{"ab", "日本"}, []string{"a", "abc", "\n\n"}},
		{`\p{Greek}+`, []string{"αβ"}, []string{"ab"}},
	}
	for _, tt := range tests {
		g, err := FromRegex(tt.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tt.pattern, err)
		}
		checkAccepts(t, tt.pattern, g, tt.accept, tt.reject)
	}
	for _, bad := range []string{`a\bb`, `(`, `x{5000}`} {
		if _, err := FromRegex(bad); err == nil {
			t.Errorf("%s compiled, want an error", bad)
		}
	}
	g, err := FromChoices([]string{"yes", "no", "maybe \"so\"", "日本"})
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{"yes": true, "maybe \"so\"": true, "日本": true, "ye": false, "nope": false} {
		if ok := matchesWhole(g, []byte(s)); ok != want {
			t.Errorf("choice %q: %v, want %v", s, ok, want)
		}
	}
	g, err = JSONObject()
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{`{"a": [1, {"b": null}]}`: true, `{}`: true, `[]`: false, `"x"`: false} {
		if ok := matchesWhole(g, []byte(s)); ok != want {
			t.Errorf("json_object %q: %v, want %v", s, ok, want)
		}
	}
}

// TestDateFormat compares the date grammar with time.Parse on every month
// and day of leap and common years, centuries included.
func TestDateFormat(t *testing.T) {
	g, err := FromJSONSchema([]byte(`{"type": "string", "format": "date"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, y := range []int{0, 4, 100, 400, 1600, 1700, 1900, 1996, 2000, 2023, 2024, 2100, 2400, 9996, 9999} {
		for mo := 0; mo <= 13; mo++ {
			for d := 0; d <= 32; d++ {
				s := fmt.Sprintf("%04d-%02d-%02d", y, mo, d)
				_, perr := time.Parse("2006-01-02", s)
				ok := matchesWhole(g, []byte(`"`+s+`"`))
				if ok != (perr == nil) {
					t.Fatalf("%s: accepted %v, time.Parse error %v", s, ok, perr)
				}
			}
		}
	}
}

// TestNumberRanges checks number bounds on integers, fractions and
// exponents around them.
func TestNumberRanges(t *testing.T) {
	tests := []struct {
		schema         string
		accept, reject []string
	}{
		{`{"type": "number", "minimum": 1, "maximum": 5}`, []string{"1", "1.5", "4.999", "5", "5.00"}, []string{"0.99", "5.01", "-1", "6", "1e3", "05"}},
		{`{"type": "number", "minimum": 3, "maximum": 3}`, []string{"3", "3.0"}, []string{"3.1", "2.9", "4"}},
		{`{"type": "number", "minimum": 10}`, []string{"10", "10.5", "123456.7"}, []string{"9.99", "-10", "1"}},
		{`{"type": "number", "minimum": 0}`, []string{"0", "0.1", "5e-3", "7"}, []string{"-0.1", "-5"}},
	}
	for _, tt := range tests {
		g, err := FromJSONSchema([]byte(tt.schema))
		if err != nil {
			t.Fatalf("%s: %v", tt.schema, err)
		}
		checkAccepts(t, tt.schema, g, tt.accept, tt.reject)
	}
}
