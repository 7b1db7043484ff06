package server_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server"
)

// Harmony outputs, in the pieces a gpt-oss model's tokens decode to (the
// prompt ends with "<|start|>assistant"; <|call|> and <|return|> end the
// generation and are not in the text).
var (
	harmonyThought = []string{"<|channel|>", "analysis", "<|message|>", "Paris", " is in France.", "<|end|>"}
	harmonyFinal   = []string{"<|start|>", "assistant", "<|channel|>", "final", "<|message|>", "It is", " sunny."}
	harmonyCall    = []string{"<|start|>", "assistant", "<|channel|>", "commentary", " to", "=functions", ".get", "_weather", " ",
		"<|constrain|>", "json", "<|message|>", `{"`, "city", `":"`, "Paris", `"}`}
	harmonyPreamble = []string{"<|start|>", "assistant", "<|channel|>", "commentary", "<|message|>", "Let me check.", "<|end|>"}
)

func cats(parts ...[]string) []string { return slices.Concat(parts...) }

// harmonyChat is a chat completion's message, streamed or not, read into
// one shape; kinds lists a stream's deltas by what they carry (R
// reasoning, C content, T a call), in order.
type harmonyChat struct {
	reasoning, content string
	contentNull        bool
	calls              []string // "name arguments"
	finish             string
	kinds              string
}

// harmonyPost posts a chat request and reads its answer.
func harmonyPost(t *testing.T, s *scripted, body string, stream bool) harmonyChat {
	t.Helper()
	body = strings.TrimSuffix(strings.TrimSpace(body), "}") + fmt.Sprintf(`, "stream": %v}`, stream)
	resp, b := post(t, s.url+"/v1/chat/completions", body)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var h harmonyChat
	if !stream {
		c := chatCompletion{}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		m := c.Choices[0].Message
		h.reasoning, h.finish, h.contentNull = m.ReasoningContent, c.Choices[0].FinishReason, m.Content == nil
		if m.Content != nil {
			h.content = *m.Content
		}
		for _, tc := range m.ToolCalls {
			if !strings.HasPrefix(tc.ID, "call_") || tc.Type != "function" {
				t.Errorf("call %+v: want an id call_... and type function", tc)
			}
			h.calls = append(h.calls, tc.Function.Name+" "+tc.Function.Arguments)
		}
		return h
	}
	var args []string
	type chunk struct {
		Choices []struct {
			Delta struct {
				Role             string
				Content          *string
				ReasoningContent *string `json:"reasoning_content"`
				ToolCalls        []struct {
					Index    int
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason *string `json:"finish_reason"`
		}
	}
	eachChunk(t, b, func(chunk *chunk) {
		for _, c := range chunk.Choices {
			d := c.Delta
			switch {
			case d.ReasoningContent != nil:
				h.reasoning += *d.ReasoningContent
				h.kinds += "R"
			case d.Content != nil && (d.Role == "" || *d.Content != ""):
				h.content += *d.Content
				h.kinds += "C"
			}
			for _, tc := range d.ToolCalls {
				if tc.ID != "" {
					h.calls = append(h.calls, tc.Function.Name)
					args = append(args, "")
					h.kinds += "T"
				} else if tc.Index < len(args) {
					args[tc.Index] += tc.Function.Arguments
				}
			}
			if c.FinishReason != nil {
				h.finish = *c.FinishReason
			}
		}
	})
	for i := range h.calls {
		h.calls[i] += " " + args[i]
	}
	h.contentNull = h.content == "" && len(h.calls) > 0
	return h
}

// TestHarmonyChat: a gpt-oss model's harmony output through
// /v1/chat/completions, whole and streamed: the analysis channel comes
// back as reasoning_content, the final channel and a preamble as content,
// a message to functions.NAME as a tool call with an id and
// finish_reason "tool_calls". The reasoning is read with or without tools,
// as llama-server and vLLM read gpt-oss's; without tools (or with
// tool_choice "none") a call is dropped. Streamed, the deltas come in
// OpenAI's order. What does not parse is content.
func TestHarmonyChat(t *testing.T) {
	s := newScripted(t, gptOSS, server.Config{})
	user := `{` + userHi + `}`
	withTools := `{` + userHi + `, ` + describedTools + `}`
	paris := `get_weather {"city":"Paris"}`
	badCall := `<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": }`
	for _, tc := range []struct {
		name   string
		body   string
		pieces []string
		finish string // the runtime's finish; "" is stop
		want   harmonyChat
	}{
		{"no tools", user, cats(harmonyThought, harmonyFinal), "",
			harmonyChat{reasoning: "Paris is in France.", content: "It is sunny.", finish: "stop", kinds: "RRCC"}},
		{"tools without descriptions", `{` + userHi + `, ` + weatherTools + `}`, cats(harmonyThought, harmonyCall), "",
			harmonyChat{reasoning: "Paris is in France.", contentNull: true, calls: []string{paris}, finish: "tool_calls", kinds: "RRT"}},
		{"tools, answered", withTools, cats(harmonyThought, harmonyFinal), "",
			harmonyChat{reasoning: "Paris is in France.", content: "It is sunny.", finish: "stop", kinds: "RRCC"}},
		{"a call", withTools, cats(harmonyThought, harmonyCall), "",
			harmonyChat{reasoning: "Paris is in France.", contentNull: true, calls: []string{paris}, finish: "tool_calls", kinds: "RRT"}},
		{"recipient in the role", withTools, cats(harmonyThought, []string{"<|start|>", "assistant", " to", "=functions.get_weather", "<|channel|>", "commentary", " json", "<|message|>", `{"city":"Paris"}`}), "",
			harmonyChat{reasoning: "Paris is in France.", contentNull: true, calls: []string{paris}, finish: "tool_calls", kinds: "RRT"}},
		{"recipient first", withTools, []string{" to", "=functions.get_weather", "<|channel|>", "commentary", " json", "<|message|>", `{"city":"Paris"}`}, "",
			harmonyChat{contentNull: true, calls: []string{paris}, finish: "tool_calls", kinds: "T"}},
		{"a preamble, then a call", withTools, cats(harmonyThought, harmonyPreamble, harmonyCall), "",
			harmonyChat{reasoning: "Paris is in France.", content: "Let me check.", calls: []string{paris}, finish: "tool_calls", kinds: "RRCT"}},
		{"tool_choice none drops a call", `{` + userHi + `, ` + describedTools + `, "tool_choice": "none"}`, cats(harmonyThought, harmonyCall), "",
			harmonyChat{reasoning: "Paris is in France.", finish: "stop", kinds: "RR"}},
		{"a call without tools is dropped", user, cats(harmonyThought, harmonyCall), "",
			harmonyChat{reasoning: "Paris is in France.", finish: "stop", kinds: "RR"}},
		{"a malformed call is content", withTools, []string{badCall[:30], badCall[30:]}, "",
			harmonyChat{content: badCall, finish: "stop", kinds: "C"}},
		{"cut in the analysis", user, harmonyThought[:4], messages.FinishLength,
			harmonyChat{reasoning: "Paris", finish: "length", kinds: "R"}},
		{"no channels", user, []string{"It is", " sunny."}, "",
			harmonyChat{content: "It is sunny.", finish: "stop", kinds: "CC"}},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream %v", tc.name, stream), func(t *testing.T) {
				finish := tc.finish
				if finish == "" {
					finish = messages.FinishStop
				}
				s.say(finish, tc.pieces...)
				got := harmonyPost(t, s, tc.body, stream)
				want := tc.want
				if !stream {
					want.kinds = ""
				}
				if got.reasoning != want.reasoning || got.content != want.content || got.contentNull != want.contentNull ||
					!slices.Equal(got.calls, want.calls) || got.finish != want.finish || got.kinds != want.kinds {
					t.Errorf("got  %+v\nwant %+v", got, want)
				}
				if !s.last(t).SpecialText {
					t.Error("SpecialText false: the parser must see the markers")
				}
			})
		}
	}

	// The official client accumulates the streamed call.
	s.say(messages.FinishStop, cats(harmonyThought, harmonyCall)...)
	params, oc := weatherParams(), client(s.fixture)
	acc := accumulate(t, oc, params)
	if m := acc.Choices[0].Message; len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Name != "get_weather" || m.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` ||
		acc.Choices[0].FinishReason != "tool_calls" || m.Content != "" {
		t.Errorf("openai-go accumulated %+v finish %q", m, acc.Choices[0].FinishReason)
	}
}

// TestHarmonyConversation: a tool-calling turn goes back to gpt-oss's
// template as a client sends it (content null or a preamble beside the
// call, the reasoning as reasoning_content or vLLM's reasoning): the
// pending call's analysis renders before it (the template needs the
// content as "", not None), the arguments as a JSON object, the tool's
// answer to the assistant; once a final answer follows, the analysis is
// dropped, as the template says.
func TestHarmonyConversation(t *testing.T) {
	s := newScripted(t, gptOSS, server.Config{})
	s.say(messages.FinishStop, cats(harmonyThought, harmonyFinal)...)
	call := `"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]`
	pending := "<|start|>assistant<|channel|>analysis<|message|>Paris is in France.<|end|>" +
		`<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>` +
		`<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"18 C"<|end|><|start|>assistant`
	for _, tc := range []struct {
		name, assistant string
		want, not       string
	}{
		{"content null", `{"role": "assistant", "content": null, "reasoning_content": "Paris is in France.", ` + call + `}`, pending, ""},
		{"content empty", `{"role": "assistant", "content": "", "reasoning_content": "Paris is in France.", ` + call + `}`, pending, ""},
		{"a preamble beside the reasoning", `{"role": "assistant", "content": "Let me check.", "reasoning_content": "Paris is in France.", ` + call + `}`, pending, "Let me check."},
		{"vLLM's reasoning", `{"role": "assistant", "content": null, "reasoning": "Paris is in France.", ` + call + `}`, pending, ""},
		{"no reasoning", `{"role": "assistant", "content": null, ` + call + `}`,
			`<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>`, "<|channel|>analysis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"messages": [{"role": "user", "content": "Weather in Paris?"}, ` + tc.assistant +
				`, {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}], ` + describedTools + `}`
			resp, b := post(t, s.url+"/v1/chat/completions", body)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			p := s.text(s.last(t).Prompt)
			if !strings.Contains(p, tc.want) || tc.not != "" && strings.Contains(p, tc.not) {
				t.Errorf("the prompt\n%s\nwant it to hold %q and not %q", p, tc.want, tc.not)
			}
		})
	}

	// A final answer after the call: its analysis is dropped.
	body := `{"messages": [{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": null, "reasoning_content": "Paris is in France.", ` + call + `},
		{"role": "tool", "tool_call_id": "call_1", "content": "18 C"},
		{"role": "assistant", "content": "It is 18 C.", "reasoning_content": "Report."},
		{"role": "user", "content": "Thanks"}], ` + describedTools + `}`
	resp, b := post(t, s.url+"/v1/chat/completions", body)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if p := s.text(s.last(t).Prompt); strings.Contains(p, "<|channel|>analysis") || !strings.Contains(p, "<|channel|>final<|message|>It is 18 C.<|end|>") {
		t.Errorf("answered: the prompt\n%s", p)
	}
}

// TestReasoningEffort: reasoning_effort (low, medium or high, as vLLM
// takes it) reaches gpt-oss's template as its variable; any other value,
// or the field on a template without reasoning levels, is a 400 naming it; chat_template_kwargs may set it too, with the same
// value, and alone.
func TestReasoningEffort(t *testing.T) {
	s := newScripted(t, gptOSS, server.Config{})
	s.say(messages.FinishStop, cats(harmonyThought, harmonyFinal)...)
	for _, tc := range []struct {
		fields string
		want   string // in the prompt; "" for a 400
	}{
		{``, "Reasoning: medium"},
		{`"reasoning_effort": "low"`, "Reasoning: low"},
		{`"reasoning_effort": "high"`, "Reasoning: high"},
		{`"reasoning_effort": null`, "Reasoning: medium"},
		{`"chat_template_kwargs": {"reasoning_effort": "low"}`, "Reasoning: low"},
		{`"reasoning_effort": "high", "chat_template_kwargs": {"reasoning_effort": "high"}`, "Reasoning: high"},
		{`"reasoning_effort": "high", "chat_template_kwargs": {"reasoning_effort": "low"}`, ""},
		{`"reasoning_effort": "extreme"`, ""},
		{`"reasoning_effort": "minimal"`, ""},
		{`"reasoning_effort": "High"`, ""},
	} {
		t.Run(tc.fields, func(t *testing.T) {
			body := `{` + userHi
			if tc.fields != "" {
				body += ", " + tc.fields
			}
			resp, b := post(t, s.url+"/v1/chat/completions", body+"}")
			if tc.want == "" {
				var e struct{ Error struct{ Param *string } }
				json.Unmarshal(b, &e)
				if resp.StatusCode != 400 || e.Error.Param == nil || *e.Error.Param != "reasoning_effort" {
					t.Fatalf("%d %s; want a 400 naming reasoning_effort", resp.StatusCode, b)
				}
				return
			}
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if p := s.text(s.last(t).Prompt); !strings.Contains(p, tc.want) {
				t.Errorf("the prompt %q lacks %q", p[:min(len(p), 200)], tc.want)
			}
		})
	}
	// /tokenize renders it the same way.
	resp, b := post(t, s.url+"/tokenize", `{`+userHi+`, "reasoning_effort": "high"}`)
	var tok struct{ Tokens []int32 }
	if json.Unmarshal(b, &tok); resp.StatusCode != 200 || !strings.Contains(s.text(tok.Tokens), "Reasoning: high") {
		t.Errorf("/tokenize: %d %s", resp.StatusCode, b)
	}
	// Another template does not read it: a 400 naming it, never ignored.
	q := newScripted(t, qwen25, server.Config{})
	q.say(messages.FinishStop, "ok")
	if resp, b := post(t, q.url+"/v1/chat/completions", `{`+userHi+`, "reasoning_effort": "low"}`); resp.StatusCode != 400 || !strings.Contains(string(b), `"param":"reasoning_effort"`) {
		t.Errorf("qwen2.5 with reasoning_effort: %d %s; want a 400 naming reasoning_effort", resp.StatusCode, b)
	}
}

// TestHarmonyToolChoice: tool_choice "required" or a named function on
// gpt-oss constrains the output with a grammar of harmony calls (an
// analysis message may come first); the output it allows parses as the
// call.
func TestHarmonyToolChoice(t *testing.T) {
	s := newScripted(t, gptOSS, server.Config{})
	s.say(messages.FinishStop, cats(harmonyThought, harmonyCall)...)
	for _, choice := range []string{`"required"`, `{"type": "function", "function": {"name": "get_weather"}}`} {
		got := harmonyPost(t, s, `{`+userHi+`, `+describedTools+`, "tool_choice": `+choice+`}`, false)
		g := s.last(t).Grammar
		if g == nil || g.Kind != messages.GrammarGBNF ||
			!strings.Contains(g.Source, `"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"`) ||
			!strings.Contains(g.Source, `"<|channel|>analysis<|message|>"`) ||
			strings.Contains(g.Source, "functions.get_time") != (choice == `"required"`) {
			t.Errorf("tool_choice %s: grammar %+v", choice, g)
		}
		if len(got.calls) != 1 || got.finish != "tool_calls" {
			t.Errorf("tool_choice %s: %+v", choice, got)
		}
	}
}

// TestHarmonyOllama: Ollama's /api/chat reads gpt-oss's calls and
// thinking as the OpenAI route does (message.tool_calls with object
// arguments, message.thinking); a past turn's thinking renders as the
// pending call's analysis.
func TestHarmonyOllama(t *testing.T) {
	s := newScripted(t, gptOSS, server.Config{})
	for _, tc := range []struct {
		name   string
		extra  string
		pieces []string
		want   ollamaAnswer
	}{
		{"a call", ", " + describedTools, cats(harmonyThought, harmonyCall),
			ollamaAnswer{thinking: "Paris is in France.", calls: []string{`call_ 0 get_weather {"city":"Paris"}`}}},
		{"a preamble and a call", ", " + describedTools, cats(harmonyThought, harmonyPreamble, harmonyCall),
			ollamaAnswer{thinking: "Paris is in France.", content: "Let me check.", calls: []string{`call_ 0 get_weather {"city":"Paris"}`}}},
		{"no tools: the call is dropped", "", cats(harmonyThought, harmonyCall), ollamaAnswer{thinking: "Paris is in France."}},
		{"think false still splits", `, "think": false`, cats(harmonyThought, harmonyFinal),
			ollamaAnswer{thinking: "Paris is in France.", content: "It is sunny."}},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream %v", tc.name, stream), func(t *testing.T) {
				s.say(messages.FinishStop, tc.pieces...)
				checkAnswer(t, s.url+"/api/chat", ollamaChatBody(fmt.Sprintf(`, "stream": %v%s`, stream, tc.extra)), stream, tc.want)
			})
		}
	}

	s.say(messages.FinishStop, cats(harmonyThought, harmonyFinal)...)
	status, _, objs := ollamaDo(t, "POST", s.url+"/api/chat", `{"model": "stories", "stream": false, `+describedTools+`, "messages": [
		{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": "", "thinking": "Paris is in France.", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
		{"role": "tool", "content": "18 C", "tool_name": "get_weather"}]}`)
	if status != 200 {
		t.Fatalf("history: status %d: %v", status, objs)
	}
	want := "<|start|>assistant<|channel|>analysis<|message|>Paris is in France.<|end|>" +
		`<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>`
	if p := s.text(s.last(t).Prompt); !strings.Contains(p, want) {
		t.Errorf("history: the prompt\n%s\nlacks %q", p, want)
	}
}

// TestHarmonyStructured: a JSON constraint on gpt-oss (response_format,
// guided_json, Ollama's format) lets the model reason first, as
// llama.cpp's and vLLM's gpt-oss serving do: the grammar allows analysis
// messages and the final channel's header before the JSON, which comes
// back as the content. Other constraints, and other templates, constrain
// the output from its first token.
func TestHarmonyStructured(t *testing.T) {
	s := newScripted(t, gptOSS, server.Config{})
	answer := []string{"<|start|>", "assistant", "<|channel|>", "final", "<|message|>", `{"sunny": `, "true}"}
	s.say(messages.FinishStop, cats(harmonyThought, answer)...)
	schema := `{"type": "object", "properties": {"sunny": {"type": "boolean"}}, "required": ["sunny"]}`
	for _, field := range []string{
		`"response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": ` + schema + `}}`,
		`"response_format": {"type": "json_object"}`,
		`"guided_json": ` + schema,
	} {
		for _, stream := range []bool{false, true} {
			got := harmonyPost(t, s, `{`+userHi+`, `+field+`}`, stream)
			if got.reasoning != "Paris is in France." || got.content != `{"sunny": true}` || got.finish != "stop" {
				t.Errorf("%s stream %v: %+v", field, stream, got)
			}
			if g := s.last(t).Grammar; g == nil || g.Kind != messages.GrammarGBNF || !strings.Contains(g.Source, `"<|channel|>final"`) ||
				!strings.Contains(g.Source, `"<|channel|>analysis<|message|>"`) {
				t.Errorf("%s: grammar %+v", field, g)
			}
		}
	}
	// A regex is the whole output.
	s.say(messages.FinishStop, "yes")
	got := harmonyPost(t, s, `{`+userHi+`, "guided_regex": "yes|no"}`, false)
	if g := s.last(t).Grammar; g == nil || g.Kind != messages.GrammarRegex || got.content != "yes" {
		t.Errorf("regex: %+v, grammar %+v", got, g)
	}
	// Ollama's format.
	s.say(messages.FinishStop, cats(harmonyThought, answer)...)
	status, _, objs := ollamaDo(t, "POST", s.url+"/api/chat", ollamaChatBody(`, "stream": false, "format": "json"`))
	if a := readAnswer(t, objs, false); status != 200 || a.thinking != "Paris is in France." || a.content != `{"sunny": true}` {
		t.Errorf("/api/chat format json: %d %+v", status, a)
	}
	if g := s.last(t).Grammar; g == nil || g.Kind != messages.GrammarGBNF {
		t.Errorf("/api/chat format json: grammar %+v", g)
	}
	// Another template keeps its schema.
	q := newScripted(t, qwen3, server.Config{})
	q.say(messages.FinishStop, `{"sunny": true}`)
	harmonyPost(t, q, `{`+userHi+`, "guided_json": `+schema+`}`, false)
	if g := q.last(t).Grammar; g == nil || g.Kind != messages.GrammarJSONSchema {
		t.Errorf("qwen3: grammar %+v", g)
	}
}

// TestDeveloperRole: a developer message is gpt-oss's developer message
// (its template names the role); a template that does not know the role
// renders it as the system message, as llama.cpp maps it.
func TestDeveloperRole(t *testing.T) {
	for _, tc := range []struct{ template, want string }{
		{gptOSS, "<|start|>developer<|message|># Instructions\n\nBe brief.\n\n<|end|>"},
		{qwen25, "<|im_start|>system\nBe brief.<|im_end|>"},
		{qwen3, "<|im_start|>system\nBe brief.<|im_end|>"},
	} {
		s := newScripted(t, tc.template, server.Config{})
		s.say(messages.FinishStop, "ok")
		resp, b := post(t, s.url+"/v1/chat/completions", `{"messages": [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Hi"}]}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.template, resp.StatusCode, b)
		}
		if p := s.text(s.last(t).Prompt); !strings.Contains(p, tc.want) {
			t.Errorf("%s: the prompt\n%s\nlacks %q", tc.template, p, tc.want)
		}
	}
}

// FuzzHarmonyChat: whatever a gpt-oss model writes, in whatever pieces,
// /v1/chat/completions answers 200 with the same reasoning, content and
// calls streamed as whole, with tools or without.
func FuzzHarmonyChat(f *testing.F) {
	f.Add(strings.Join(cats(harmonyThought, harmonyPreamble, harmonyCall), ""), uint8(7), true)
	f.Add(strings.Join(cats(harmonyThought, harmonyFinal), ""), uint8(3), false)
	f.Add("<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>{\"city\": \"<|end|>\"}<|call|>x", uint8(1), true)
	f.Add(" to=functions.get_time<|channel|>commentary<|message|>{}", uint8(2), true)
	f.Add("<|start|>assistant<|channel|>analysis to=python code<|message|>1<|end|><|start|>", uint8(5), false)
	s := newScripted(f, gptOSS, server.Config{})
	f.Fuzz(func(t *testing.T, text string, step uint8, tools bool) {
		if !utf8.ValidString(text) || len(text) > 2000 {
			t.Skip()
		}
		var pieces []string
		for n := 1 + int(step%16); text != ""; {
			k := min(n, len(text))
			for k < len(text) && !utf8.RuneStart(text[k]) {
				k++
			}
			pieces, text = append(pieces, text[:k]), text[k:]
		}
		s.say(messages.FinishStop, pieces...)
		body := `{` + userHi + `}`
		if tools {
			body = `{` + userHi + `, ` + describedTools + `}`
		}
		whole := harmonyPost(t, s, body, false)
		streamed := harmonyPost(t, s, body, true)
		streamed.kinds = ""
		if !reflect.DeepEqual(whole, streamed) {
			t.Fatalf("pieces %q:\nwhole    %+v\nstreamed %+v", pieces, whole, streamed)
		}
	})
}
