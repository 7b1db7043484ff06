package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/server"
)

// structuredBody builds a request body carrying src as the constraint of
// one of the API's structured-output fields (kind, modulo their number).
// A src that is not JSON goes where a schema belongs as a JSON string.
func structuredBody(kind int, src string, chat, stream bool) (string, string) {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	schema := src
	if !json.Valid([]byte(src)) {
		schema = q(src)
	}
	cb, _ := json.Marshal(strings.Split(src, "\n"))
	fields := []struct{ name, field string }{
		{"response_format json_schema", `"response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true, "schema": ` + schema + `}}`},
		{"structured_outputs json", `"structured_outputs": {"json": ` + schema + `}`},
		{"structured_outputs regex", `"structured_outputs": {"regex": ` + q(src) + `}`},
		{"structured_outputs choice", `"structured_outputs": {"choice": ` + string(cb) + `}`},
		{"structured_outputs grammar", `"structured_outputs": {"grammar": ` + q(src) + `}`},
		{"guided_json", `"guided_json": ` + schema},
		{"guided_regex", `"guided_regex": ` + q(src)},
		{"guided_choice", `"guided_choice": ` + string(cb)},
		{"guided_grammar", `"guided_grammar": ` + q(src)},
		{"grammar", `"grammar": ` + q(src)},
		{"json_schema", `"json_schema": ` + schema},
		{"tools required", `"tools": [{"type": "function", "function": {"name": "f", "parameters": ` + schema + `}}], "tool_choice": "required"`},
		{"tools named", `"tools": [{"type": "function", "function": {"name": "f", "parameters": ` + schema + `}}], "tool_choice": {"type": "function", "function": {"name": "f"}}`},
	}
	f := fields[uint(kind)%uint(len(fields))]
	if strings.HasPrefix(f.name, "tools") && !chat {
		chat = true // tools are a chat field
	}
	input := `"prompt": "Once upon a time"`
	if chat {
		input = `"messages": [{"role": "user", "content": "hi"}]`
	}
	return f.name, `{` + input + `, "max_tokens": 4, "temperature": 1, "stream": ` + map[bool]string{false: "false", true: "true"}[stream] + `, ` + f.field + `}`
}

// FuzzStructured sends arbitrary schemas, regular expressions, choices and
// grammars through every structured-output field of the API: the server
// never panics, never answers 5xx, refuses what it cannot compile with an
// OpenAI-shaped 4xx, and answers each request within a bound of time and
// memory.
func FuzzStructured(f *testing.F) {
	for _, seed := range []struct {
		kind int
		src  string
	}{
		{0, `{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}`},
		{0, `{"type": "sound"}`},
		{0, `{"type": "object", "patternProperties": {"^a": {}}}`},
		{0, `{"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}`},
		{0, `{"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}`},
		{0, `{"type": "array", "items": {"type": "array", "items": {"type": "array", "minItems": 1000, "items": {"type": "string", "minLength": 1000}}, "minItems": 1000}, "minItems": 1000}`},
		{0, `{"type": "integer", "minimum": -1e300, "maximum": 1e300}`},
		{0, `{"type": "string", "pattern": "((a{0,1000}){0,1000}){0,1000}"}`},
		{0, `{"anyOf": [` + strings.Repeat(`{"type": "string", "pattern": "^[a-z]{3,9}x$"}, `, 300) + `{"type": "null"}]}`},
		{1, `{"enum": [` + strings.Repeat(`"aaaaaaaaaa", `, 2000) + `"b"]}`},
		{2, `(\d{1,3}\.){3}\d{1,3}`},
		{2, `((a{0,1000}){0,1000}){0,1000}`},
		{2, `(?P<x>a)\1`},
		{2, `\b[a-z]+\b`},
		{3, "yes\nno\nmaybe"},
		{3, ""},
		{4, `root ::= "a"+ [b-d]* ("x" | "y"){2,5}`},
		{4, `root ::= root "a"`},
		{4, `root ::= ((("a"{1000}){1000}){1000})`},
		{4, "root ::= " + strings.Repeat(`("a" | "") `, 3000)},
		{9, `root ::= [^\x00]* [\U00010000-\U0010FFFF]+`},
		{9, `root ::= undefined`},
		{10, `{"type": "object", "properties": {"x": {"const": 1}}}`},
		{11, `{"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}}, "required": ["city"]}`},
		{12, `{"not": {}}`},
		{12, `[1, 2`},
	} {
		f.Add(seed.kind, seed.src, uint8(0))
		f.Add(seed.kind, seed.src, uint8(3))
	}
	fx := newFixture(f, options{rt: actors.Config{MaxModelLen: 48}, srv: server.Config{ToolCallParser: "hermes"}})
	h := fx.srv.Handler()
	f.Fuzz(func(t *testing.T, kind int, src string, mode uint8) {
		chat, stream := mode&1 != 0, mode&2 != 0
		name, body := structuredBody(kind, src, chat, stream)
		path := "/v1/completions"
		if chat || strings.HasPrefix(name, "tools") {
			path = "/v1/chat/completions"
		}
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		if d := time.Since(start); d > 2*time.Minute { // a hang guard only (MaxModelLen bounds the steps): the race run on a busy machine is slow
			t.Fatalf("%s %.300q: %v", name, src, d)
		}
		if rec.Code >= 500 {
			t.Fatalf("%s %.300q: status %d: %.500s", name, src, rec.Code, rec.Body.String())
		}
		if rec.Code >= 400 {
			var e struct {
				Error *struct{ Message, Type string } `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == nil || e.Error.Message == "" {
				t.Fatalf("%s %.300q: status %d without an OpenAI error: %.500s", name, src, rec.Code, rec.Body.String())
			}
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > 4<<30 {
			t.Fatalf("%s %.300q: heap in use %d MiB after the request", name, src, ms.HeapInuse>>20)
		}
	})
}

// TestStructuredRefused: constraints that cannot compile are refused with
// a 400 whose message says why, through each field that carries them,
// streamed or not.
func TestStructuredRefused(t *testing.T) {
	fx := newFixture(t, options{rt: actors.Config{MaxModelLen: 48}, srv: server.Config{ToolCallParser: "hermes"}})
	h := fx.srv.Handler()
	for _, tt := range []struct {
		kinds []int // structuredBody kinds
		src   string
		want  string // in the error message
	}{
		{[]int{0, 1, 5, 10, 11, 12}, `{"type": "sound"}`, `"sound"`},
		{[]int{0, 1, 5, 10, 11}, `{"type": "object", "patternProperties": {"^a": {}}}`, "patternProperties"},
		{[]int{0, 5, 10}, `{"type": "integer", "minimum": -1e300}`, "minimum"},
		{[]int{0, 5}, `{"type": "array", "uniqueItems": true}`, "uniqueItems"},
		{[]int{2, 6}, `\b[a-z]+\b`, "word boundary"},
		{[]int{2, 6}, `(?P<x>a)\1`, `\1`},
		{[]int{4, 8, 9}, `root ::= undefined`, "undefined"},
		{[]int{4, 8, 9}, `root ::= root "a"`, "root"},
	} {
		for _, kind := range tt.kinds {
			for _, mode := range []uint8{0, 3} {
				name, body := structuredBody(kind, tt.src, mode&1 != 0, mode&2 != 0)
				path := "/v1/completions"
				if mode&1 != 0 || strings.HasPrefix(name, "tools") {
					path = "/v1/chat/completions"
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
				var e struct {
					Error *struct{ Message, Type string } `json:"error"`
				}
				_ = json.Unmarshal(rec.Body.Bytes(), &e)
				if rec.Code != http.StatusBadRequest || e.Error == nil || !strings.Contains(e.Error.Message, tt.want) {
					t.Errorf("%s %s (mode %d) %q: status %d %s; want a 400 naming %s", path, name, mode, tt.src, rec.Code, rec.Body.String(), tt.want)
				}
			}
		}
	}
}
