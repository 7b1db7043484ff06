package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schemas of the openai-go test, bounded so that a tiny model at
// temperature 1 finishes them.
const (
	goEventSchema = `{"type": "object", "properties": {"name": {"type": "string", "maxLength": 16},
		"day": {"type": "integer", "minimum": 1, "maximum": 31},
		"participants": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3},
		"priority": {"type": "string", "enum": ["low", "high"]},
		"note": {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "null"}]}},
		"required": ["name", "day", "participants", "priority", "note"], "additionalProperties": false}`
	goWeatherSchema = `{"type": "object", "properties": {"location": {"type": "string", "maxLength": 20},
		"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["location", "unit"], "additionalProperties": false}`
	goSearchSchema = `{"type": "object", "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 16},
		"limit": {"type": "integer", "minimum": 1, "maximum": 10}}, "required": ["query", "limit"], "additionalProperties": false}`
)

func schemaMap(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStructuredGoClient drives structured outputs and tool calls with
// openai-go, unchanged: response_format json_schema (strict, n=4) and
// json_object, streamed and not; tools with tool_choice required and named,
// streamed and not.
func TestStructuredGoClient(t *testing.T) {
	url := serveStructured(t)
	c := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	event := compileSchema(t, "event", schemaMap(t, goEventSchema))
	toolSchemas := map[string]any{"get_weather": schemaMap(t, goWeatherSchema), "search": schemaMap(t, goSearchSchema)}
	validators := map[string]func(string) string{}
	for name, s := range toolSchemas {
		v := compileSchema(t, name, s)
		validators[name] = func(text string) string { return checkJSON(v, text) }
	}
	base := openai.ChatCompletionNewParams{Model: structuredModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")},
		MaxTokens: openai.Int(300), Temperature: openai.Float(1), Seed: openai.Int(11)}

	t.Run("json_schema", func(t *testing.T) { testGoJSONSchema(t, c, base, event) })

	t.Run("json_object", func(t *testing.T) { testGoJSONObject(t, c, base) })

	var tools []openai.ChatCompletionToolUnionParam
	for _, name := range []string{"get_weather", "search"} {
		tools = append(tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: name,
			Parameters: toolSchemas[name].(map[string]any), Strict: openai.Bool(true)}))
	}
	required := openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	for _, tc := range []struct {
		name   string
		choice openai.ChatCompletionToolChoiceOptionUnionParam
		want   []string
	}{
		{"required", required, []string{"get_weather", "search"}},
		{"named", openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}), []string{"get_weather"}},
	} {
		t.Run("tools "+tc.name, func(t *testing.T) { testGoTools(t, c, base, tools, tc.choice, tc.want, validators) })
	}
}

// testGoJSONSchema: response_format json_schema (strict, n=4), then
// streamed, gives content that validates against event.
func testGoJSONSchema(t *testing.T, c openai.Client, base openai.ChatCompletionNewParams, event *jsonschema.Schema) {
	ctx := context.Background()
	p := base
	p.N = openai.Int(4)
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "event", Schema: schemaMap(t, goEventSchema), Strict: openai.Bool(true)}}}
	res, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Choices) != 4 {
		t.Fatalf("%d choices, want 4", len(res.Choices))
	}
	cut := 0
	for _, ch := range res.Choices {
		if ch.FinishReason == "length" {
			cut++
			continue
		}
		if ch.FinishReason != "stop" {
			t.Errorf("choice %d: finish %q", ch.Index, ch.FinishReason)
		}
		if why := checkJSON(event, ch.Message.Content); why != "" {
			t.Errorf("choice %d: %q %s", ch.Index, ch.Message.Content, why)
		}
	}
	if cut > 1 {
		t.Errorf("%d of 4 choices cut by max_tokens", cut)
	}

	p.N = openai.Int(1)
	text, finish := streamText(t, c.Chat.Completions.NewStreaming(ctx, p))
	if finish == "stop" {
		if why := checkJSON(event, text); why != "" {
			t.Errorf("streamed: %q %s", text, why)
		}
	} else if finish != "length" {
		t.Errorf("streamed: finish %q", finish)
	}
}

// testGoJSONObject: response_format json_object gives a JSON object.
func testGoJSONObject(t *testing.T, c openai.Client, base openai.ChatCompletionNewParams) {
	ctx := context.Background()
	p := base
	p.MaxTokens = openai.Int(120)
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	res, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if ch := res.Choices[0]; ch.FinishReason == "stop" {
		var obj map[string]any
		if err := json.Unmarshal([]byte(ch.Message.Content), &obj); err != nil {
			t.Errorf("json_object: %q: %v", ch.Message.Content, err)
		}
	} else if ch.FinishReason != "length" {
		t.Errorf("json_object: finish %q", ch.FinishReason)
	}
}

// testGoTools: tools with one tool choice, whole and streamed, give one
// call of a tool in want, its arguments valid.
func testGoTools(t *testing.T, c openai.Client, base openai.ChatCompletionNewParams, tools []openai.ChatCompletionToolUnionParam,
	choice openai.ChatCompletionToolChoiceOptionUnionParam, want []string, validators map[string]func(string) string) {
	ctx := context.Background()
	p := base
	// One call: with parallel calls allowed a tiny model rarely
	// stops calling before max_tokens (the parallel case below).
	p.Tools, p.ToolChoice, p.ParallelToolCalls = tools, choice, openai.Bool(false)
	res, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	ch := res.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
		t.Fatalf("finish %q, %d tool calls, content %q; want one call", ch.FinishReason, len(ch.Message.ToolCalls), ch.Message.Content)
	}
	for _, call := range ch.Message.ToolCalls {
		if call.ID == "" || call.Type != "function" || !slices.Contains(want, call.Function.Name) {
			t.Errorf("call %+v: want an id, type function, a name in %v", call, want)
			continue
		}
		if why := validators[call.Function.Name](call.Function.Arguments); why != "" {
			t.Errorf("%s arguments %q %s", call.Function.Name, call.Function.Arguments, why)
		}
	}

	// Streamed: per call, id and name in the first delta only, then
	// fragments of the arguments.
	calls, finish := streamToolCalls(t, c.Chat.Completions.NewStreaming(ctx, p))
	if finish != "tool_calls" || len(calls) != 1 {
		t.Fatalf("streamed: finish %q, %d calls; want one", finish, len(calls))
	}
	for _, cl := range calls {
		if !slices.Contains(want, cl.name) {
			t.Errorf("streamed: call %q, want one of %v", cl.name, want)
			continue
		}
		if why := validators[cl.name](cl.args.String()); why != "" {
			t.Errorf("streamed: %s arguments %q %s", cl.name, cl.args.String(), why)
		}
	}
}

// streamedCall is one tool call put together from a stream's deltas.
type streamedCall struct {
	id, name string
	args     strings.Builder
}

// streamToolCalls reads a streamed chat completion's tool calls and finish
// reason, checking that each call's id and name come in its first delta
// only.
func streamToolCalls(t *testing.T, stream interface {
	Next() bool
	Current() openai.ChatCompletionChunk
	Err() error
}) ([]*streamedCall, string) {
	t.Helper()
	var calls []*streamedCall
	finish := ""
	for stream.Next() {
		for _, sc := range stream.Current().Choices {
			if sc.FinishReason != "" {
				finish = sc.FinishReason
			}
			for _, d := range sc.Delta.ToolCalls {
				i := int(d.Index)
				switch {
				case i == len(calls):
					if d.ID == "" || d.Function.Name == "" {
						t.Errorf("call %d: first delta %+v without id and name", i, d)
					}
					calls = append(calls, &streamedCall{id: d.ID, name: d.Function.Name})
				case i < len(calls):
					if d.ID != "" || d.Function.Name != "" {
						t.Errorf("call %d: id or name repeated in a later delta %+v", i, d)
					}
				default:
					t.Fatalf("call index %d after %d calls", i, len(calls))
				}
				calls[i].args.WriteString(d.Function.Arguments)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return calls, finish
}

// TestStructuredGoClientParallel: with parallel tool calls allowed (the
// default), every call the server returns, also when max_tokens cut the
// output, has an id, a tool's name and arguments that validate.
func TestStructuredGoClientParallel(t *testing.T) {
	url := serveStructured(t)
	c := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	v := compileSchema(t, "get_weather", schemaMap(t, goWeatherSchema))
	res, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: structuredModel,
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")},
		MaxTokens: openai.Int(300), Temperature: openai.Float(1), Seed: openai.Int(5),
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather", Parameters: schemaMap(t, goWeatherSchema), Strict: openai.Bool(true)})},
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}})
	if err != nil {
		t.Fatal(err)
	}
	ch := res.Choices[0]
	if (ch.FinishReason != "tool_calls" && ch.FinishReason != "length") || len(ch.Message.ToolCalls) == 0 {
		t.Fatalf("finish %q, %d tool calls, content %q", ch.FinishReason, len(ch.Message.ToolCalls), ch.Message.Content)
	}
	ids := map[string]bool{}
	for _, call := range ch.Message.ToolCalls {
		if call.ID == "" || ids[call.ID] || call.Function.Name != "get_weather" {
			t.Errorf("call %+v: want a new id and get_weather", call)
		}
		ids[call.ID] = true
		if why := checkJSON(v, call.Function.Arguments); why != "" {
			t.Errorf("arguments %q %s", call.Function.Arguments, why)
		}
	}
	t.Logf("%d calls, finish %q", len(ch.Message.ToolCalls), ch.FinishReason)
}

// streamText reads a streamed chat completion's content and finish reason.
func streamText(t *testing.T, stream interface {
	Next() bool
	Current() openai.ChatCompletionChunk
	Err() error
}) (string, string) {
	t.Helper()
	var b strings.Builder
	finish := ""
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			b.WriteString(ch.Delta.Content)
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String(), finish
}
