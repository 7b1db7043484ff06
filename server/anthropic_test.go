package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server"
)

// sseEvent is one named server-sent event.
type sseEvent struct {
	name string
	data map[string]any
}

// readEvents splits a stream of named events ("event: X\ndata: {...}").
func readEvents(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, chunk := range strings.Split(strings.TrimSpace(string(body)), "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(chunk, "\n") {
			if name, ok := strings.CutPrefix(line, "event: "); ok {
				ev.name = name
			} else if data, ok := strings.CutPrefix(line, "data: "); ok {
				if err := json.Unmarshal([]byte(data), &ev.data); err != nil {
					t.Fatalf("event %q: %v", data, err)
				}
			}
		}
		if ev.name != "" && ev.data["type"] != ev.name {
			t.Errorf("event %q carries type %v", ev.name, ev.data["type"])
		}
		out = append(out, ev)
	}
	return out
}

func eventNames(evs []sseEvent) string {
	var names []string
	for _, e := range evs {
		names = append(names, e.name)
	}
	return strings.Join(names, " ")
}

const anthropicTools = `"tools": [{"name": "get_weather", "description": "Weather in a city",
	"input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]`

// TestAnthropicMessages: /v1/messages answers a thinking template's output
// as thinking and text blocks, a call as a tool_use block, streamed as
// Anthropic's events, and tool_choice any constrains the output.
func TestAnthropicMessages(t *testing.T) {
	s := newScripted(t, qwen3, server.Config{})
	s.say(messages.FinishStop, "<think>\nhmm", "\n</think>\n\nHel", "lo")
	body := `{"model": "stories", "max_tokens": 50, "system": [{"type": "text", "text": "Be brief."}],
		"messages": [{"role": "user", "content": "Hi"}]}`
	resp, b := post(t, s.url+"/v1/messages", body)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var msg struct {
		Type, Role string
		StopReason string `json:"stop_reason"`
		Content    []map[string]any
		Usage      struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		}
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.Content[0]["thinking"] != "hmm" || msg.Content[1]["text"] != "Hello" || msg.StopReason != "end_turn" || msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens != 3 {
		t.Errorf("message %s", b)
	}
	resp, b = post(t, s.url+"/v1/messages", strings.Replace(body, `"max_tokens": 50`, `"max_tokens": 50, "stream": true`, 1))
	evs := readEvents(t, b)
	want := "message_start ping content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if resp.StatusCode != 200 || eventNames(evs) != want {
		t.Errorf("stream %d: %s\nwant %s\n%s", resp.StatusCode, eventNames(evs), want, b)
	}

	s.say(messages.FinishStop, weatherCall)
	resp, b = post(t, s.url+"/v1/messages", `{"model": "stories", "max_tokens": 50, `+anthropicTools+`, "tool_choice": {"type": "any"},
		"messages": [{"role": "user", "content": "Weather in Paris?"}]}`)
	if err := json.Unmarshal(b, &msg); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if len(msg.Content) != 1 || msg.Content[0]["type"] != "tool_use" || msg.Content[0]["name"] != "get_weather" || msg.StopReason != "tool_use" {
		t.Errorf("tool use: %s", b)
	}
	if in, _ := json.Marshal(msg.Content[0]["input"]); string(in) != `{"city":"Paris"}` {
		t.Errorf("input %s", in)
	}
	if s.last(t).Grammar == nil {
		t.Error("tool_choice any: no grammar")
	}
	// The call's result, sent back.
	resp, b = post(t, s.url+"/v1/messages/count_tokens", `{"model": "stories", `+anthropicTools+`, "messages": [
		{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
		{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]}]}`)
	var count struct {
		InputTokens int `json:"input_tokens"`
	}
	if json.Unmarshal(b, &count) != nil || resp.StatusCode != 200 || count.InputTokens < 10 {
		t.Errorf("count_tokens %d %s", resp.StatusCode, b)
	}
}

// TestAnthropicStopSequence: a stop string that ends the output is
// stop_reason "stop_sequence" with stop_sequence set, whole and streamed;
// a call's id is toolu_.
func TestAnthropicStopSequence(t *testing.T) {
	s := newScripted(t, qwen3, server.Config{})
	s.say(messages.FinishStop, "Hello", "END", "more")
	body := `{"model": "stories", "max_tokens": 50, "stop_sequences": ["END", "STOP"], "messages": [{"role": "user", "content": "Hi"}]}`
	resp, b := post(t, s.url+"/v1/messages", body)
	var msg struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
		Content      []map[string]any
	}
	if err := json.Unmarshal(b, &msg); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if msg.StopReason != "stop_sequence" || msg.StopSequence == nil || *msg.StopSequence != "END" || len(msg.Content) != 1 || msg.Content[0]["text"] != "Hello" {
		t.Errorf("message %s", b)
	}
	_, b = post(t, s.url+"/v1/messages", strings.Replace(body, `"max_tokens": 50`, `"max_tokens": 50, "stream": true`, 1))
	evs := readEvents(t, b)
	var delta map[string]any
	for _, ev := range evs {
		if ev.name == "message_delta" {
			delta, _ = ev.data["delta"].(map[string]any)
		}
	}
	if delta["stop_reason"] != "stop_sequence" || delta["stop_sequence"] != "END" {
		t.Errorf("stream's message_delta %v\n%s", delta, b)
	}
	// Without a stop string matched, stop_sequence stays null.
	s.say(messages.FinishStop, "Hello")
	_, b = post(t, s.url+"/v1/messages", body)
	msg.StopSequence = nil
	if json.Unmarshal(b, &msg) != nil || msg.StopReason != "end_turn" || msg.StopSequence != nil {
		t.Errorf("no stop: %s", b)
	}
	s.say(messages.FinishStop, weatherCall)
	_, b = post(t, s.url+"/v1/messages", `{"model": "stories", "max_tokens": 50, `+anthropicTools+`, "messages": [{"role": "user", "content": "Weather?"}]}`)
	if json.Unmarshal(b, &msg) != nil || len(msg.Content) != 1 || !strings.HasPrefix(fmt.Sprint(msg.Content[0]["id"]), "toolu_") {
		t.Errorf("tool_use id: %s", b)
	}
}

// TestAnthropicBadInput: malformed or unsupported input is a 400 in
// Anthropic's error shape naming the field.
func TestAnthropicBadInput(t *testing.T) {
	s := newScripted(t, qwen25, server.Config{APIKey: "k"})
	s.say(messages.FinishStop, "ok")
	user := `"messages": [{"role": "user", "content": "Hi"}]`
	for _, tc := range []struct{ name, body, want string }{
		{"no max_tokens", `{"model": "stories", ` + user + `}`, "max_tokens"},
		{"unknown field", `{"model": "stories", "max_tokens": 5, "top_logprobs": 2, ` + user + `}`, "top_logprobs"},
		{"image", `{"model": "stories", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}`, "messages.0.content.0.source.type"},
		{"image without a projector", `{"model": "stories", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}]}`, "messages.0.content.0: the served model takes no images"},
		{"unknown block", `{"model": "stories", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "video"}]}]}`, "unknown content block"},
		{"role order", `{"model": "stories", "max_tokens": 5, "messages": [{"role": "assistant", "content": "Hi"}]}`, "messages.0.role"},
		{"unknown call", `{"model": "stories", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "1"}]}]}`, "tool_use_id"},
		{"tool choice", `{"model": "stories", "max_tokens": 5, "tool_choice": {"type": "some"}, ` + user + `}`, "tool_choice.type"},
		{"thinking", `{"model": "stories", "max_tokens": 5000, "thinking": {"type": "enabled", "budget_tokens": 2000}, ` + user + `}`, "does not reason"},
		{"temperature", `{"model": "stories", "max_tokens": 5, "temperature": 1.5, ` + user + `}`, "temperature"},
	} {
		resp, b := post(t, s.url+"/v1/messages", tc.body, "x-api-key", "k")
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if json.Unmarshal(b, &e) != nil || resp.StatusCode != 400 || e.Type != "error" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, b)
		}
	}
	resp, b := post(t, s.url+"/v1/messages", `{"model": "stories", "max_tokens": 5, `+user+`}`, "Authorization", "Bearer k")
	if resp.StatusCode != 200 {
		t.Errorf("Bearer: %d %s", resp.StatusCode, b)
	}
	resp, b = post(t, s.url+"/v1/messages", `{"model": "stories", "max_tokens": 5, `+user+`}`, "x-api-key", "wrong")
	if resp.StatusCode != 401 || !strings.Contains(string(b), "authentication_error") {
		t.Errorf("wrong key: %d %s", resp.StatusCode, b)
	}
}
