package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server"
)

const responsesTools = `"tools": [{"type": "function", "name": "get_weather", "description": "Weather in a city",
	"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]`

// responseObject is what the tests read of a Response.
type responseObject struct {
	ID, Status string
	Output     []struct {
		Type, ID, Role, CallID, Name, Arguments string
		Content                                 []struct{ Type, Text string }
	}
	IncompleteDetails *struct{ Reason string } `json:"incomplete_details"`
	Usage             struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	}
}

func postResponse(t *testing.T, url, body string) responseObject {
	t.Helper()
	resp, b := post(t, url+"/v1/responses", body)
	var r responseObject
	if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	for i := range r.Output { // call_id, as the API spells it
		var raw struct {
			Output []struct {
				CallID string `json:"call_id"`
			}
		}
		_ = json.Unmarshal(b, &raw)
		r.Output[i].CallID = raw.Output[i].CallID
	}
	return r
}

// TestResponses: text, reasoning and a function call as output items; the
// call's output sent back with previous_response_id continues the stored
// conversation; GET and DELETE; the stream's event sequence.
func TestResponses(t *testing.T) {
	s := newScripted(t, qwen3, server.Config{})
	s.say(messages.FinishStop, "<think>\nhmm\n</think>\n\n", weatherCall)
	r := postResponse(t, s.url, `{"model": "stories", "input": "Weather in Paris?", "instructions": "Be brief.", `+responsesTools+`}`)
	if r.Status != "completed" || len(r.Output) != 2 || r.Output[0].Type != "reasoning" || r.Output[0].Content[0].Text != "hmm" ||
		r.Output[1].Type != "function_call" || r.Output[1].Name != "get_weather" || r.Output[1].Arguments != `{"city": "Paris"}` || r.Usage.InputTokens == 0 {
		t.Fatalf("response %+v", r)
	}
	s.say(messages.FinishStop, "Sunny.")
	r2 := postResponse(t, s.url, `{"model": "stories", "previous_response_id": "`+r.ID+`", `+responsesTools+`,
		"input": [{"type": "function_call_output", "call_id": "`+r.Output[1].CallID+`", "output": "sunny"}]}`)
	if r2.Status != "completed" || len(r2.Output) != 1 || r2.Output[0].Content[0].Text != "Sunny." {
		t.Errorf("second turn %+v", r2)
	}
	prompt := s.fixture.text(s.last(t).Prompt)
	if !strings.Contains(prompt, "Weather in Paris?") || !strings.Contains(prompt, "sunny") || strings.Contains(prompt, "Be brief.") {
		t.Errorf("second turn's prompt (the history without the instructions, then the output): %q", prompt)
	}
	resp, b := get(t, s.url+"/v1/responses/"+r.ID)
	if resp.StatusCode != 200 || !strings.Contains(string(b), r.ID) {
		t.Errorf("GET: %d %s", resp.StatusCode, b)
	}
	req, _ := http.NewRequest(http.MethodDelete, s.url+"/v1/responses/"+r.ID, nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("DELETE: %v %v", resp, err)
	}
	if resp, _ := get(t, s.url+"/v1/responses/"+r.ID); resp.StatusCode != 404 {
		t.Errorf("GET after DELETE: %d", resp.StatusCode)
	}

	s.say(messages.FinishLength, "Hel", "lo")
	r3 := postResponse(t, s.url, `{"model": "stories", "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}], "max_output_tokens": 2}`)
	if r3.Status != "incomplete" || r3.IncompleteDetails == nil || r3.IncompleteDetails.Reason != "max_output_tokens" {
		t.Errorf("cut: %+v", r3)
	}
	s.say(messages.FinishStop, "<think>\nhmm\n</think>\n\nHel", "lo")
	resp, b = post(t, s.url+"/v1/responses", `{"model": "stories", "input": "Hi", "stream": true}`)
	want := "response.created response.in_progress " +
		"response.output_item.added response.content_part.added response.reasoning_text.delta response.reasoning_text.done response.content_part.done response.output_item.done " +
		"response.output_item.added response.content_part.added response.output_text.delta response.output_text.delta response.output_text.done response.content_part.done response.output_item.done " +
		"response.completed"
	if evs := readEvents(t, b); resp.StatusCode != 200 || eventNames(evs) != want {
		t.Errorf("stream: %s\nwant %s", eventNames(evs), want)
	}
	resp, b = post(t, s.url+"/v1/responses/input_tokens", `{"model": "stories", "input": "Hi"}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"input_tokens"`) {
		t.Errorf("input_tokens: %d %s", resp.StatusCode, b)
	}
}

// TestResponsesBadInput: malformed items, unknown ids and unsupported
// fields are 400s in OpenAI's shape naming the field.
func TestResponsesBadInput(t *testing.T) {
	s := newScripted(t, qwen25, server.Config{})
	s.say(messages.FinishStop, "ok")
	for _, tc := range []struct{ name, body, param string }{
		{"unknown previous", `{"input": "Hi", "previous_response_id": "resp_x"}`, "previous_response_id"},
		{"unknown item", `{"input": [{"type": "computer_call"}]}`, "input[0].type"},
		{"unknown call", `{"input": [{"type": "function_call_output", "call_id": "c", "output": "1"}]}`, "input[0].call_id"},
		{"bad role", `{"input": [{"role": "robot", "content": "x"}]}`, "input[0].role"},
		{"image", `{"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}`, "input[0].content[0].type"},
		{"bad arguments", `{"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "[1]"}]}`, "input[0].arguments"},
		{"unsupported field", `{"input": "Hi", "prompt": {"id": "p"}}`, "prompt"},
		{"hosted tool", `{"input": "Hi", "tools": [{"type": "web_search"}]}`, "tools[0].type"},
		{"format", `{"input": "Hi", "text": {"format": {"type": "yaml"}}}`, "text.format.type"},
		{"max tokens", `{"input": "Hi", "max_output_tokens": 0}`, "max_output_tokens"},
		{"effort", `{"input": "Hi", "reasoning": {"effort": "high"}}`, "reasoning.effort"},
	} {
		resp, b := post(t, s.url+"/v1/responses", tc.body)
		var e struct {
			Error struct{ Type, Message, Param string }
		}
		if json.Unmarshal(b, &e) != nil || resp.StatusCode != 400 || e.Error.Param != tc.param || e.Error.Type != "invalid_request_error" {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, b)
		}
	}
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, []byte(b.String())
}
