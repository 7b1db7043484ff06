package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/server"
)

// A field's JSON type as Ollama's API documentation gives it.
const (
	tString  = "string"
	tTime    = "time" // an RFC 3339 string
	tInt     = "integer"
	tNumber  = "number"
	tBool    = "boolean"
	tArray   = "array"
	tObject  = "object"
	tIntList = "array of integers"
	tStrList = "array of strings"
)

// The fields of each object Ollama's docs/api.md lists (github.com/ollama/
// ollama, with docs/openapi.yaml for the types), as troupe answers them: all
// must be there with their type, and no other field may be.
var (
	ollamaDetailsFields = map[string]string{"parent_model": tString, "format": tString, "family": tString,
		"families": tStrList, "parameter_size": tString, "quantization_level": tString}
	ollamaMetricFields = map[string]string{"done_reason": tString, "total_duration": tInt, "load_duration": tInt,
		"prompt_eval_count": tInt, "prompt_eval_duration": tInt, "eval_count": tInt, "eval_duration": tInt}
	ollamaMessageFields = map[string]string{"role": tString, "content": tString}
)

func withFields(a map[string]string, more ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range append([]map[string]string{a}, more...) {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// checkFields checks obj's fields against want, field by field, and the
// nested objects named in nested.
func checkFields(t *testing.T, where string, obj map[string]any, want map[string]string, nested map[string]map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}) {
		v, ok := obj[k]
		if !ok {
			t.Errorf("%s: field %q missing", where, k)
			continue
		}
		if got := jsonType(v, want[k]); got != want[k] {
			t.Errorf("%s: field %q is %s (%v), want %s", where, k, got, v, want[k])
		}
		if sub, ok := nested[k]; ok {
			if m, ok := v.(map[string]any); ok {
				checkFields(t, where+"."+k, m, sub, nil)
			}
		}
	}
	for k := range obj {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: field %q is not in Ollama's documentation", where, k)
		}
	}
}

// jsonType names v's JSON type, as precisely as want asks.
func jsonType(v any, want string) string {
	switch v := v.(type) {
	case string:
		if want == tTime {
			if _, err := time.Parse(time.RFC3339Nano, v); err == nil {
				return tTime
			}
		}
		return tString
	case json.Number:
		if _, err := v.Int64(); err == nil && want == tInt {
			return tInt
		}
		return tNumber
	case bool:
		return tBool
	case map[string]any:
		return tObject
	case []any:
		elem := ""
		for _, e := range v {
			switch e.(type) {
			case json.Number:
				if want == tIntList && jsonType(e, tInt) == tInt {
					elem = cmpElem(elem, "int")
				} else {
					elem = cmpElem(elem, "other")
				}
			case string:
				elem = cmpElem(elem, "string")
			default:
				elem = cmpElem(elem, "other")
			}
		}
		switch {
		case want == tIntList && elem == "int", want == tStrList && elem == "string":
			return want
		case (want == tIntList || want == tStrList) && elem == "" && len(v) == 0:
			return want // an empty list has any element type
		}
		return tArray
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func cmpElem(seen, e string) string {
	if seen == "" || seen == e {
		return e
	}
	return "mixed"
}

// ollamaDo sends a request to an /api route and returns the status, the
// Content-Type and the JSON objects of the body (one per NDJSON line).
func ollamaDo(t *testing.T, method, url, body string) (int, string, []map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, b := roundTrip(t, req)
	var objs []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		var o map[string]any
		if err := d.Decode(&o); err != nil {
			t.Fatalf("%s %s: line %q: %v", method, url, line, err)
		}
		objs = append(objs, o)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), objs
}

// TestOllamaFields: each route's response has the fields and JSON types
// Ollama's API documentation lists, field by field: the streamed objects,
// the final one, the answer without streaming, the model listings.
func TestOllamaFields(t *testing.T) {
	f := newFixture(t, options{})
	genChunk := map[string]string{"model": tString, "created_at": tTime, "response": tString, "done": tBool}
	chatChunk := map[string]string{"model": tString, "created_at": tTime, "message": tObject, "done": tBool}
	genFinal := withFields(genChunk, ollamaMetricFields, map[string]string{"context": tIntList})
	chatFinal := withFields(chatChunk, ollamaMetricFields)
	msg := map[string]map[string]string{"message": ollamaMessageFields}
	summary := map[string]string{"name": tString, "model": tString, "modified_at": tTime, "size": tInt, "digest": tString, "details": tObject}
	running := map[string]string{"name": tString, "model": tString, "size": tInt, "digest": tString, "details": tObject,
		"expires_at": tTime, "size_vram": tInt, "context_length": tInt}
	show := map[string]string{"modelfile": tString, "parameters": tString, "license": tString, "template": tString,
		"modified_at": tTime, "details": tObject, "model_info": tObject, "capabilities": tStrList}
	const opts = `"options": {"num_predict": 8, "temperature": 0}`
	for _, tc := range []struct {
		name, method, path, body string
		chunk, final             map[string]string // fields of the streamed objects, of the last (or only) one
		nested                   map[string]map[string]string
		list                     map[string]string // fields of each entry of "models"
	}{
		{"generate stream", "POST", "/api/generate", `{"model": "stories", "prompt": "Once upon a time", ` + opts + `}`, genChunk, genFinal, nil, nil},
		{"generate", "POST", "/api/generate", `{"model": "stories", "prompt": "Once upon a time", "stream": false, ` + opts + `}`, nil, genFinal, nil, nil},
		{"generate raw", "POST", "/api/generate", `{"model": "stories", "prompt": "Once upon a time", "raw": true, "stream": false, ` + opts + `}`,
			nil, withFields(genChunk, ollamaMetricFields), nil, nil},
		{"generate load", "POST", "/api/generate", `{"model": "stories"}`, nil, withFields(genChunk, map[string]string{"done_reason": tString}), nil, nil},
		{"chat stream", "POST", "/api/chat", `{"model": "stories", "messages": [{"role": "user", "content": "Hi"}], ` + opts + `}`, chatChunk, chatFinal, msg, nil},
		{"chat", "POST", "/api/chat", `{"model": "stories:latest", "messages": [{"role": "user", "content": "Hi"}], "stream": false, ` + opts + `}`, nil, chatFinal, msg, nil},
		{"chat load", "POST", "/api/chat", `{"model": "stories", "messages": []}`, nil, withFields(chatChunk, map[string]string{"done_reason": tString}), msg, nil},
		{"tags", "GET", "/api/tags", "", nil, map[string]string{"models": tArray}, nil, summary},
		{"ps", "GET", "/api/ps", "", nil, map[string]string{"models": tArray}, nil, running},
		{"show", "POST", "/api/show", `{"model": "stories"}`, nil, show, map[string]map[string]string{"details": ollamaDetailsFields}, nil},
		{"version", "GET", "/api/version", "", nil, map[string]string{"version": tString}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, ctype, objs := ollamaDo(t, tc.method, f.url+tc.path, tc.body)
			if status != http.StatusOK {
				t.Fatalf("status %d: %v", status, objs)
			}
			wantType := "application/json"
			if tc.chunk != nil {
				wantType = "application/x-ndjson"
				if len(objs) < 2 {
					t.Fatalf("a stream of %d objects", len(objs))
				}
			} else if len(objs) != 1 {
				t.Fatalf("%d objects, want one", len(objs))
			}
			if ctype != wantType {
				t.Errorf("Content-Type %q, want %q", ctype, wantType)
			}
			for i, o := range objs[:len(objs)-1] {
				checkFields(t, fmt.Sprintf("object %d", i), o, tc.chunk, tc.nested)
				if o["done"] != false {
					t.Errorf("object %d: done %v before the last", i, o["done"])
				}
			}
			last := objs[len(objs)-1]
			checkFields(t, "last object", last, tc.final, tc.nested)
			if d, ok := last["done"]; ok && d != true {
				t.Errorf("last object: done %v", d)
			}
			if tc.list != nil {
				models, _ := last["models"].([]any)
				if len(models) != 1 {
					t.Fatalf("models %v, want the served one", last["models"])
				}
				checkFields(t, "models[0]", models[0].(map[string]any), tc.list, map[string]map[string]string{"details": ollamaDetailsFields})
				if name := models[0].(map[string]any)["name"]; name != "stories:latest" {
					t.Errorf("name %v, want stories:latest", name)
				}
			}
		})
	}
}

// TestOllamaThinkingFields: the fields of answers with thinking and tool
// calls (a template that has both, its output scripted): message.thinking
// and message.tool_calls, /api/generate's thinking, each with its type. A
// call has the fields of Ollama's api.ToolCall (api/types.go): id, and its
// function's index, name and arguments, an object (docs/api.md shows the
// name and arguments).
func TestOllamaThinkingFields(t *testing.T) {
	s := newScripted(t, "../templates-more/Qwen-Qwen3-0.6B.jinja", server.Config{})
	genChunk := map[string]string{"model": tString, "created_at": tTime, "response": tString, "done": tBool}
	chatChunk := map[string]string{"model": tString, "created_at": tTime, "message": tObject, "done": tBool}
	genFinal := withFields(genChunk, ollamaMetricFields, map[string]string{"context": tIntList})
	chatFinal := withFields(chatChunk, ollamaMetricFields)
	msg := func(fields ...string) map[string]map[string]string {
		m := withFields(ollamaMessageFields)
		for _, f := range fields {
			m[f] = map[string]string{"thinking": tString, "tool_calls": tArray}[f]
		}
		return map[string]map[string]string{"message": m}
	}
	thinking := map[string]string{"thinking": tString}
	checkCalls := func(where string, o map[string]any) {
		m, _ := o["message"].(map[string]any)
		calls, _ := m["tool_calls"].([]any)
		for i, c := range calls {
			call, _ := c.(map[string]any)
			w := fmt.Sprintf("%s: tool_calls[%d]", where, i)
			checkFields(t, w, call, map[string]string{"id": tString, "function": tObject},
				map[string]map[string]string{"function": {"index": tInt, "name": tString, "arguments": tObject}})
		}
	}
	const thought = "<think>\nParis.\n</think>\n\n"
	chat := `{"model": "stories", "messages": [{"role": "user", "content": "Weather in Paris?"}], ` + weatherTools
	gen := `{"model": "stories", "prompt": "Weather in Paris?"`
	for _, tc := range []struct {
		name, path, body string
		pieces           []string
		objects          []map[string]string // the fields of each object, in order
		nested           []map[string]map[string]string
	}{
		{"chat", "/api/chat", chat + `, "stream": false}`, []string{thought, weatherCall},
			[]map[string]string{chatFinal}, []map[string]map[string]string{msg("thinking", "tool_calls")}},
		{"chat stream", "/api/chat", chat + `}`, []string{thought, "Let me check. ", weatherCall},
			[]map[string]string{chatChunk, chatChunk, chatChunk, chatFinal},
			[]map[string]map[string]string{msg("thinking"), msg(), msg("tool_calls"), msg()}},
		{"generate", "/api/generate", gen + `, "stream": false}`, []string{thought, "Sunny."},
			[]map[string]string{withFields(genFinal, thinking)}, nil},
		{"generate stream", "/api/generate", gen + `}`, []string{thought, "Sunny."},
			[]map[string]string{withFields(genChunk, thinking), genChunk, genFinal}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.say("stop", tc.pieces...)
			status, _, objs := ollamaDo(t, "POST", s.url+tc.path, tc.body)
			if status != http.StatusOK || len(objs) != len(tc.objects) {
				t.Fatalf("status %d, %d objects, want %d: %v", status, len(objs), len(tc.objects), objs)
			}
			for i, o := range objs {
				var nested map[string]map[string]string
				if tc.nested != nil {
					nested = tc.nested[i]
				}
				checkFields(t, fmt.Sprintf("object %d", i), o, tc.objects[i], nested)
				checkCalls(fmt.Sprintf("object %d", i), o)
			}
		})
	}
}

// ollamaText posts a generate or chat request and returns its whole text
// and last object, streamed (the text joined) or not.
func ollamaText(t *testing.T, url, path, body string) (string, map[string]any) {
	t.Helper()
	status, _, objs := ollamaDo(t, "POST", url+path, body)
	if status != http.StatusOK {
		t.Fatalf("%s: status %d: %v", path, status, objs)
	}
	var b strings.Builder
	for _, o := range objs {
		if e, ok := o["error"]; ok {
			t.Fatalf("%s: error object %v", path, e)
		}
		if r, ok := o["response"].(string); ok {
			b.WriteString(r)
		}
		if m, ok := o["message"].(map[string]any); ok {
			b.WriteString(m["content"].(string))
		}
	}
	return b.String(), objs[len(objs)-1]
}

// TestOllamaGenerate: raw greedy generation equals llama.cpp's, streamed
// (NDJSON) and not; the final object counts the tokens; chat streamed
// equals chat whole; num_predict past the context stops at its end;
// context continues an earlier exchange.
func TestOllamaGenerate(t *testing.T) {
	f := newFixture(t, options{})
	rc := loadCases(t)[0]
	want := f.text(rc.GreedyIDs)
	n := len(rc.GreedyIDs)
	for _, stream := range []bool{true, false} {
		body := fmt.Sprintf(`{"model": "stories", "prompt": %q, "raw": true, "stream": %v, "options": {"num_predict": %d, "temperature": 0}}`, rc.Prompt, stream, n)
		got, last := ollamaText(t, f.url, "/api/generate", body)
		if got != want {
			t.Errorf("stream %v: %q, want %q", stream, got, want)
		}
		if c, _ := last["eval_count"].(json.Number).Int64(); c != int64(n) {
			t.Errorf("stream %v: eval_count %v, want %d", stream, last["eval_count"], n)
		}
		if c, _ := last["prompt_eval_count"].(json.Number).Int64(); c != int64(len(rc.PromptIDs)) {
			t.Errorf("stream %v: prompt_eval_count %v, want %d", stream, last["prompt_eval_count"], len(rc.PromptIDs))
		}
		if last["done_reason"] != "length" {
			t.Errorf("stream %v: done_reason %v", stream, last["done_reason"])
		}
		total, _ := last["total_duration"].(json.Number).Int64()
		parts := int64(0)
		for _, k := range []string{"load_duration", "prompt_eval_duration", "eval_duration"} {
			v, _ := last[k].(json.Number).Int64()
			if v < 0 {
				t.Errorf("%s %d < 0", k, v)
			}
			parts += v
		}
		if total <= 0 || parts > total {
			t.Errorf("stream %v: total_duration %d, its parts add up to %d", stream, total, parts)
		}
	}

	chat := `{"model": "stories", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Once upon a time"}], "options": {"num_predict": 24, "temperature": 0}`
	streamed, _ := ollamaText(t, f.url, "/api/chat", chat+`}`)
	whole, _ := ollamaText(t, f.url, "/api/chat", chat+`, "stream": false}`)
	if streamed == "" || streamed != whole {
		t.Errorf("chat streamed %q, whole %q", streamed, whole)
	}

	// num_predict past the context: generation ends with the context.
	_, last := ollamaText(t, f.url, "/api/generate", `{"model": "stories", "prompt": "Once", "raw": true, "stream": false, "options": {"num_predict": 100000, "num_ctx": 24, "temperature": 0, "stop": ["zzz"]}}`)
	if pe, _ := last["prompt_eval_count"].(json.Number).Int64(); true {
		if ev, _ := last["eval_count"].(json.Number).Int64(); pe+ev > 24 || last["done_reason"] == "length" && pe+ev != 24 {
			t.Errorf("num_ctx 24: %d prompt + %d generated tokens, done_reason %v", pe, ev, last["done_reason"])
		}
	}

	// context: the tokens of the first exchange, then the second turn.
	_, first := ollamaText(t, f.url, "/api/generate", `{"model": "stories", "prompt": "Once upon a time", "stream": false, "options": {"num_predict": 4, "temperature": 0}}`)
	ctx, _ := json.Marshal(first["context"])
	_, second := ollamaText(t, f.url, "/api/generate", fmt.Sprintf(`{"model": "stories", "prompt": "Then", "context": %s, "stream": false, "options": {"num_predict": 4, "temperature": 0}}`, ctx))
	var c1, c2 []int
	_ = json.Unmarshal(ctx, &c1)
	b2, _ := json.Marshal(second["context"])
	_ = json.Unmarshal(b2, &c2)
	if len(c2) <= len(c1) || !slices.Equal(c2[:len(c1)], c1) {
		t.Errorf("the second context %v does not continue the first %v", c2, c1)
	}
	f.waitIdle(t)
}

// TestOllamaErrors: what the Ollama routes refuse, each with its status and
// Ollama's {"error": "..."} shape (no other field).
func TestOllamaErrors(t *testing.T) {
	f := newFixture(t, options{})
	gen := func(extra string) string {
		return `{"model": "stories", "prompt": "Once", "stream": false, "options": {"num_predict": 2}` + extra + `}`
	}
	for _, tc := range []struct {
		name, path, body string
		status           int
		msg              string // part of the error message
	}{
		{"unknown model", "/api/generate", `{"model": "llama3", "prompt": "x"}`, 404, "model 'llama3' not found"},
		{"unknown tag", "/api/chat", `{"model": "stories:7b", "messages": [{"role": "user", "content": "x"}]}`, 404, "model 'stories:7b' not found"},
		{"show unknown", "/api/show", `{"model": "nope"}`, 404, "model 'nope' not found"},
		{"no model", "/api/generate", `{"prompt": "x"}`, 400, "model is required"},
		{"malformed", "/api/generate", `{"model": `, 400, "malformed JSON"},
		{"wrong type", "/api/generate", `{"model": "stories", "prompt": 5}`, 400, "prompt"},
		{"num_ctx past the context", "/api/generate", `{"model": "stories", "prompt": "x", "options": {"num_ctx": 1000000}}`, 400, "exceeds the served context"},
		{"option type", "/api/generate", `{"model": "stories", "prompt": "x", "options": {"temperature": "hot"}}`, 400, `option "temperature" must be of type float32`},
		{"int option type", "/api/generate", `{"model": "stories", "prompt": "x", "options": {"num_predict": "many"}}`, 400, `option "num_predict" must be of type integer`},
		{"stop type", "/api/generate", `{"model": "stories", "prompt": "x", "options": {"stop": [1]}}`, 400, `option "stop"`},
		{"typical_p", "/api/generate", `{"model": "stories", "prompt": "x", "options": {"typical_p": 1.5}}`, 400, "typical_p"},
		{"mirostat", "/api/generate", `{"model": "stories", "prompt": "x", "options": {"mirostat": 3}}`, 400, "mirostat"},
		{"top_p out of range", "/api/generate", `{"model": "stories", "prompt": "x", "options": {"top_p": 2}}`, 400, "top_p"},
		{"images", "/api/generate", `{"model": "stories", "prompt": "x", "images": ["iVBORw0KGgo="]}`, 400, "takes no images"},
		{"chat images", "/api/chat", `{"model": "stories", "messages": [{"role": "user", "content": "x", "images": ["iVBORw0KGgo="]}]}`, 400, "takes no images"},
		{"think", "/api/chat", `{"model": "stories", "messages": [{"role": "user", "content": "x"}], "think": true}`, 400, `"stories" does not support thinking`},
		{"think level", "/api/generate", `{"model": "stories", "prompt": "x", "think": "high"}`, 400, `"stories" does not support thinking`},
		{"tools", "/api/chat", `{"model": "stories", "messages": [{"role": "user", "content": "x"}], ` + weatherTools + `}`, 400, `"stories" does not support tools`},
		{"think bad", "/api/generate", `{"model": "stories", "prompt": "x", "think": "very"}`, 400, "think must be"},
		{"format string", "/api/generate", `{"model": "stories", "prompt": "x", "format": "xml"}`, 400, `format "xml"`},
		{"format type", "/api/generate", `{"model": "stories", "prompt": "x", "format": 5}`, 400, "format must be"},
		{"format schema", "/api/chat", `{"model": "stories", "messages": [{"role": "user", "content": "x"}], "format": {"type": "frobnicate"}}`, 400, "frobnicate"},
		{"raw and system", "/api/generate", `{"model": "stories", "prompt": "x", "raw": true, "system": "s"}`, 400, "raw mode does not support"},
		{"template", "/api/generate", `{"model": "stories", "prompt": "x", "template": "{{ .Prompt }}"}`, 400, "template is not supported"},
		{"suffix", "/api/generate", `{"model": "stories", "prompt": "x", "suffix": "y"}`, 400, "does not support insert"},
		{"top_logprobs", "/api/generate", `{"model": "stories", "prompt": "x", "logprobs": true, "top_logprobs": 21}`, 400, "top_logprobs"},
		{"role", "/api/chat", `{"model": "stories", "messages": [{"role": "wizard", "content": "x"}]}`, 400, "wizard"},
		{"context outside the vocabulary", "/api/generate", `{"model": "stories", "prompt": "x", "context": [99999999]}`, 400, "outside the vocabulary"},
		{"prompt past num_ctx", "/api/generate", `{"model": "stories", "prompt": "Once upon a time there was", "raw": true, "options": {"num_ctx": 2}}`, 400, "maximum context length is 2"},
		{"wrong method", "/api/tags", `{}`, 404, "no route POST /api/tags"},
		{"no route", "/api/pull", `{}`, 404, "no route POST /api/pull"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := "POST"
			status, ctype, objs := ollamaDo(t, method, f.url+tc.path, tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %v", status, tc.status, objs)
			}
			if ctype != "application/json" || len(objs) != 1 || len(objs[0]) != 1 {
				t.Fatalf("Content-Type %q, body %v: want one {\"error\": ...}", ctype, objs)
			}
			msg, ok := objs[0]["error"].(string)
			if !ok || !strings.Contains(msg, tc.msg) {
				t.Errorf("error %v, want a string containing %q", objs[0]["error"], tc.msg)
			}
		})
	}
	// Accepted, as Ollama's: unknown options (ignored), think false,
	// keep_alive, format "json" and a schema, logprobs.
	for _, extra := range []string{`, "options": {"mirostat": 0, "num_gpu": 1}`, `, "options": {"typical_p": 0.5}`, `, "think": false`, `, "keep_alive": "5m"`, `, "keep_alive": 0`,
		`, "format": "json"`, `, "format": {"type": "object", "properties": {"a": {"type": "integer"}}}`, `, "logprobs": true, "top_logprobs": 2`} {
		status, _, objs := ollamaDo(t, "POST", f.url+"/api/generate", gen(extra))
		if status != 200 {
			t.Errorf("%s: status %d: %v", extra, status, objs)
		}
		if strings.Contains(extra, "logprobs") {
			if lp, _ := objs[0]["logprobs"].([]any); len(lp) == 0 {
				t.Errorf("logprobs: none in %v", objs[0])
			} else if tops, _ := lp[0].(map[string]any)["top_logprobs"].([]any); len(tops) != 2 {
				t.Errorf("logprobs: %v, want 2 top_logprobs", lp[0])
			}
		}
	}
	f.waitIdle(t)
}

// TestOllamaAdmission: a server still loading answers 503 in Ollama's
// shape, and the API key guards the /api routes as it does /v1.
func TestOllamaAdmission(t *testing.T) {
	f := newFixture(t, options{notReady: true, srv: server.Config{APIKey: "k"}})
	for _, tc := range []struct {
		auth   string
		status int
	}{{"", 401}, {"Bearer k", 503}} {
		req, _ := http.NewRequest("POST", f.url+"/api/generate", strings.NewReader(`{"model": "stories", "prompt": "x"}`))
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if _, ok := body["error"].(string); resp.StatusCode != tc.status || !ok || len(body) != 1 {
			t.Errorf("auth %q: status %d, body %v; want %d and {\"error\": \"...\"}", tc.auth, resp.StatusCode, body, tc.status)
		}
	}
}

// TestOllamaDisconnect: a client that goes away mid-stream, or while it
// waits for a whole answer, leaves no sequence and no block behind. The
// client leaves once the device has run a step of its request (a gate, not
// a deadline: the machine's speed does not matter).
func TestOllamaDisconnect(t *testing.T) {
	stepped := make(chan struct{}, 1)
	f := newFixture(t, options{rt: actors.Config{NumBlocks: 64, BlockSize: 16}, wrap: func(be actors.Backend) actors.Backend {
		return &signalDevice{Backend: slow(20 * time.Millisecond)(be), stepped: stepped}
	}})
	for _, tc := range []struct {
		path   string
		stream bool
	}{{"/api/generate", true}, {"/api/chat", true}, {"/api/generate", false}, {"/api/chat", false}} {
		select { // a step of the previous request
		case <-stepped:
		default:
		}
		ctx, cancel := context.WithCancel(context.Background())
		body := fmt.Sprintf(`{"model": "stories", "prompt": "Once upon a time", "messages": [{"role": "user", "content": "Once upon a time"}], "stream": %v, "options": {"num_predict": 400, "seed": 1, "repeat_last_n": 0}}`, tc.stream)
		req, _ := http.NewRequestWithContext(ctx, "POST", f.url+tc.path, strings.NewReader(body))
		done := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil && tc.stream {
				sc := bufio.NewScanner(resp.Body)
				for i := 0; i < 3 && sc.Scan(); i++ {
					if strings.Contains(sc.Text(), `"done":true`) {
						err = fmt.Errorf("the answer finished before the client went away; the test proves nothing")
					}
				}
				resp.Body.Close()
			} else if err == nil {
				resp.Body.Close()
				err = fmt.Errorf("the whole answer came (%d) before the client went away; the test proves nothing", resp.StatusCode)
			}
			done <- err
		}()
		if tc.stream {
			if err := <-done; err != nil { // three lines read
				t.Fatalf("%s stream: %v", tc.path, err)
			}
			cancel()
		} else {
			select {
			case <-stepped:
			case <-time.After(60 * time.Second):
				t.Fatalf("%s: the request never reached the device", tc.path)
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: %v; want the client's cancellation", tc.path, err)
			}
		}
		f.waitIdle(t)
	}
}

// signalDevice sends on stepped (without blocking) at each forward step.
type signalDevice struct {
	actors.Backend
	stepped chan struct{}
}

func (s *signalDevice) Forward(b *model.Batch, logits []float32) error {
	select {
	case s.stepped <- struct{}{}:
	default:
	}
	return s.Backend.Forward(b, logits)
}

// TestOllamaTimeout: a request past RequestTimeout (its device held after
// the first step, so it cannot end by itself) is answered, streaming, with
// its first token, then an error line and no final object; not streaming,
// 408 in Ollama's shape; nothing is left running.
func TestOllamaTimeout(t *testing.T) {
	gate, wrap := gated()
	f := newFixture(t, options{rt: actors.Config{NumBlocks: 64, BlockSize: 16},
		srv: server.Config{RequestTimeout: 3 * time.Second}, wrap: wrap})
	long := `"model": "stories", "prompt": "Once upon a time", "options": {"num_predict": 200, "repeat_last_n": 0, "seed": 1}`
	gate.steps <- struct{}{} // the prompt's step; the next one waits
	status, _, objs := ollamaDo(t, "POST", f.url+"/api/generate", `{`+long+`}`)
	last := objs[len(objs)-1]
	if msg, _ := last["error"].(string); status != 200 || !strings.Contains(msg, "request-timeout") || len(objs) < 2 {
		t.Errorf("streaming: %d, %d objects, the last %v", status, len(objs), last)
	}
	for _, o := range objs {
		if o["done"] == true {
			t.Errorf("streaming: a final object after the timeout: %v", o)
		}
	}
	status, _, objs = ollamaDo(t, "POST", f.url+"/api/generate", `{`+long+`, "stream": false}`)
	if msg, _ := objs[0]["error"].(string); status != http.StatusRequestTimeout || !strings.Contains(msg, "request-timeout") || len(objs[0]) != 1 {
		t.Errorf("not streaming: %d %v", status, objs)
	}
	close(gate.open)
	f.waitIdle(t)
}
