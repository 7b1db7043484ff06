package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// Issue 18's official-client acceptance: the npm openai client (zod
// helpers) and openai-go, unchanged, against a `troupe serve` on
// stories260K with a short hermes-style tools template. The tiny model's
// output is random; the grammar makes it parse, so the tests check
// structure: parsed objects validate against the schema the client sent,
// tool calls carry an id, a tool's name and arguments that validate
// against that tool's schema, with finish_reason tool_calls.

const structuredModel = "stories"

// serveStructured starts troupe serve for the structured-output tests and
// returns its base URL.
func serveStructured(t *testing.T) string {
	t.Helper()
	bin := buildTroupe(t)
	tmpl, err := filepath.Abs(filepath.Join("testdata", "tools-template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	url, _, _ := serve(t, bin, nil, "-m", testmodels.Path(t, "stories260K.gguf"), "--chat-template", tmpl,
		"--served-model-name", structuredModel)
	return url
}

// compileSchema compiles a schema a client sent, for
// santhosh-tekuri/jsonschema with formats asserted.
func compileSchema(t *testing.T, name string, schema any) *jsonschema.Schema {
	t.Helper()
	b, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(name+".json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name + ".json")
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// checkJSON says why text is not a document of s, or "".
func checkJSON(s *jsonschema.Schema, text string) string {
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return "does not parse: " + err.Error()
	}
	if err := s.Validate(inst); err != nil {
		return "does not validate: " + err.Error()
	}
	return ""
}

// nodeMessage is a choice's message as structured-client.cjs prints it, or
// the error its helper threw.
type nodeMessage struct {
	FinishReason string          `json:"finish_reason"`
	Content      *string         `json:"content"`
	Parsed       json.RawMessage `json:"parsed"`
	ToolCalls    []struct {
		ID, Type, Name, Arguments string
		ParsedArguments           json.RawMessage `json:"parsed_arguments"`
	} `json:"tool_calls"`
	Error *struct {
		Name, Message string
		Status        int
	} `json:"error"`
}

// cut reports whether the helper refused a choice cut by max_tokens.
func (m *nodeMessage) cut() bool { return m.Error != nil && m.Error.Name == "LengthFinishReasonError" }

// nodeStream is a tool-call stream read chunk by chunk.
type nodeStream struct {
	FinishReason string `json:"finish_reason"`
	Calls        []struct {
		FirstHasIDAndName bool `json:"firstHasIdAndName"`
		RepeatedIDOrName  bool `json:"repeatedIdOrName"`
		ID, Name          string
		Arguments         string `json:"arguments"`
	} `json:"calls"`
	Error *struct{ Name, Message string } `json:"error"`
}

// TestStructuredNodeClient: chat.completions.parse with zodResponseFormat
// (three seeds) and its stream helper give a parsed object that validates;
// zodFunction tools with tool_choice required and named, through parse,
// the stream helper and a raw stream, give tool calls in OpenAI's shape
// and order; an unknown response_format type is a 400.
func TestStructuredNodeClient(t *testing.T) {
	mods := filepath.Dir(testmodels.NPMPackage(t, "openai"))
	testmodels.NPMPackage(t, "zod")
	url := serveStructured(t)
	out := testmodels.Node(t, mods, "testdata/structured-client.cjs", url, structuredModel)
	var got struct {
		EventSchema, WeatherSchema, SearchSchema       any
		Parse                                          []nodeMessage
		ParseStream                                    nodeMessage
		ToolsRequired, ToolsNamed, ToolsRequiredStream nodeMessage
		ToolsNamedRaw, ToolsRequiredRaw                nodeStream
		BadFormat                                      nodeMessage
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	event := compileSchema(t, "event", got.EventSchema)
	toolSchemas := map[string]*jsonschema.Schema{
		"get_weather": compileSchema(t, "get_weather", got.WeatherSchema),
		"search":      compileSchema(t, "search", got.SearchSchema),
	}

	checkNodeParsed(t, event, append(got.Parse, got.ParseStream))
	checkNodeTools(t, toolSchemas, got.ToolsRequired, got.ToolsNamed, got.ToolsRequiredStream)
	checkNodeRawStreams(t, toolSchemas, got.ToolsNamedRaw, got.ToolsRequiredRaw)

	if e := got.BadFormat.Error; e == nil || e.Status != 400 {
		t.Errorf("response_format type sound: %+v, want a 400", got.BadFormat)
	}
}

// checkNodeParsed: each zodResponseFormat output (the parse calls, then the
// stream helper's) finished and validates against event, at most one cut
// by max_tokens.
func checkNodeParsed(t *testing.T, event *jsonschema.Schema, msgs []nodeMessage) {
	t.Helper()
	cut, finished := 0, 0
	for i, m := range msgs {
		switch {
		case m.cut():
			cut++
		case m.Error != nil:
			t.Errorf("parse %d: %+v", i, *m.Error)
		case m.FinishReason != "stop" || m.Content == nil || len(m.Parsed) == 0 || string(m.Parsed) == "null":
			t.Errorf("parse %d: finish %q, content %v, parsed %s", i, m.FinishReason, m.Content, m.Parsed)
		default:
			finished++
			if why := checkJSON(event, *m.Content); why != "" {
				t.Errorf("parse %d: content %q %s", i, *m.Content, why)
			}
			if why := checkJSON(event, string(m.Parsed)); why != "" {
				t.Errorf("parse %d: parsed %s %s", i, m.Parsed, why)
			}
		}
	}
	t.Logf("zodResponseFormat: %d finished, %d cut by max_tokens", finished, cut)
	if cut > 1 {
		t.Errorf("%d of %d structured outputs cut by max_tokens", cut, len(msgs))
	}
}

// checkNodeTools: the zodFunction calls with tool_choice required, named
// (search) and required through the stream helper are tool calls in
// OpenAI's shape, arguments valid and parsed.
func checkNodeTools(t *testing.T, toolSchemas map[string]*jsonschema.Schema, required, named, requiredStream nodeMessage) {
	t.Helper()
	for _, tc := range []struct {
		name string
		m    nodeMessage
		want []string // allowed tool names
	}{
		{"required", required, []string{"get_weather", "search"}},
		{"named", named, []string{"search"}},
		{"required, streamed", requiredStream, []string{"get_weather", "search"}},
	} {
		m := tc.m
		if m.Error != nil {
			t.Errorf("tools %s: %+v", tc.name, *m.Error)
			continue
		}
		if m.FinishReason != "tool_calls" || len(m.ToolCalls) == 0 {
			t.Errorf("tools %s: finish %q, %d tool calls, content %v", tc.name, m.FinishReason, len(m.ToolCalls), m.Content)
			continue
		}
		for _, c := range m.ToolCalls {
			if c.ID == "" || c.Type != "function" || !slices.Contains(tc.want, c.Name) {
				t.Errorf("tools %s: call %+v; want an id, type function, a name in %v", tc.name, c, tc.want)
				continue
			}
			if why := checkJSON(toolSchemas[c.Name], c.Arguments); why != "" {
				t.Errorf("tools %s: %s arguments %q %s", tc.name, c.Name, c.Arguments, why)
			}
			if len(c.ParsedArguments) == 0 || string(c.ParsedArguments) == "null" {
				t.Errorf("tools %s: %s: no parsed_arguments", tc.name, c.Name)
			}
		}
	}
}

// checkNodeRawStreams: in the raw streams (tool_choice named, then
// required), each call's id and name come in its first delta only and its
// arguments validate.
func checkNodeRawStreams(t *testing.T, toolSchemas map[string]*jsonschema.Schema, named, required nodeStream) {
	t.Helper()
	for _, tc := range []struct {
		name string
		s    nodeStream
		want []string
	}{
		{"named", named, []string{"search"}},
		{"required", required, []string{"get_weather", "search"}},
	} {
		s := tc.s
		if s.Error != nil {
			t.Errorf("raw stream %s: %+v", tc.name, *s.Error)
			continue
		}
		if s.FinishReason != "tool_calls" || len(s.Calls) == 0 {
			t.Errorf("raw stream %s: finish %q, %d calls", tc.name, s.FinishReason, len(s.Calls))
			continue
		}
		for _, c := range s.Calls {
			if !c.FirstHasIDAndName || c.RepeatedIDOrName || !slices.Contains(tc.want, c.Name) {
				t.Errorf("raw stream %s: call %+v; want id and name in its first delta only, a name in %v", tc.name, c, tc.want)
				continue
			}
			if why := checkJSON(toolSchemas[c.Name], c.Arguments); why != "" {
				t.Errorf("raw stream %s: %s arguments %q %s", tc.name, c.Name, c.Arguments, why)
			}
		}
	}
}
