package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server"
)

// TestToolChoiceRequiredCut: with tool_choice "required" and parallel
// calls, an output cut by max_tokens inside its second call answers the
// whole first call only, finish_reason "length", and no content (the cut
// call's markup never leaks); an output that ends after its calls
// finishes with "tool_calls". Streamed, the same.
func TestToolChoiceRequiredCut(t *testing.T) {
	s := newScripted(t, qwen25, server.Config{})
	body := `{` + userHi + `, ` + weatherTools + `, "tool_choice": "required"}`
	for _, tc := range []struct {
		finish, want string
		pieces       []string
	}{
		{messages.FinishLength, "length", []string{weatherCall, "\n<tool_call>\n{\"name\": \"get_ti"}},
		{messages.FinishStop, "tool_calls", []string{weatherCall}},
	} {
		s.say(tc.finish, tc.pieces...)
		resp, b := post(t, s.url+"/v1/chat/completions", body)
		var c struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
				Message      struct {
					Content   *string
					ToolCalls []struct{ Function struct{ Name string } } `json:"tool_calls"`
				}
			}
		}
		if json.Unmarshal(b, &c) != nil || resp.StatusCode != 200 || len(c.Choices) != 1 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		ch := c.Choices[0]
		if ch.FinishReason != tc.want || ch.Message.Content != nil || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Name != "get_weather" {
			t.Errorf("%s: %s", tc.finish, b)
		}
		resp, b = post(t, s.url+"/v1/chat/completions", strings.TrimSuffix(body, "}")+`, "stream": true}`)
		if resp.StatusCode != 200 || strings.Contains(string(b), `tool_call>`) || !strings.Contains(string(b), `"finish_reason":"`+tc.want+`"`) ||
			strings.Count(string(b), `"name":"get_weather"`) != 1 {
			t.Errorf("%s streamed: %s", tc.finish, b)
		}
	}
}
