package openai

import (
	"net/http"
	"strings"

	"github.com/troupe-llm/troupe/server/pipeline"
)

type chatDelta struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallJSON `json:"tool_calls,omitempty"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      *chatResult   `json:"message,omitempty"`
	Delta        *chatDelta    `json:"delta,omitempty"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatResult struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"` // null when the message is only tool calls
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallJSON `json:"tool_calls,omitempty"`
}

type chatResponse struct {
	responseHead
	Choices []chatChoice `json:"choices"`
	Usage   *usageJSON   `json:"usage"`
}

// toolCallJSON is a tool call in a message, or a piece of one in a stream
// delta (Index set: the first piece has the id, type and name, later ones
// argument fragments).
type toolCallJSON struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function functionJSON `json:"function"`
}

type functionJSON struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// chat serves POST /v1/chat/completions.
func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	p, run, head, ok := h.start(w, r, &req, "chatcmpl-")
	if !ok {
		return
	}
	n := req.choices()
	resp := &chatResponse{responseHead: head}
	if req.Stream {
		resp.Object = "chat.completion.chunk"
		streamChat(w, run, resp, n, p.WantLogprobs, req.StreamOptions, req.TimingsPerToken)
		return
	}
	resp.Object = "chat.completion"
	answers := make([]answer, n)
	for i := range answers {
		answers[i].choice = chatChoice{Index: i, Message: &chatResult{Role: "assistant"}}
		if p.WantLogprobs {
			answers[i].choice.Logprobs = &chatLogprobs{Content: []chatTokenLogprob{}}
		}
	}
	var u usage
	failed := run.Each(func(ev *pipeline.Event) {
		u.add(ev)
		if ev.Choice < n {
			answers[ev.Choice].add(ev)
		}
	})
	if failed != nil {
		WriteError(w, failed)
		return
	}
	if r.Context().Err() != nil {
		return // the client is gone
	}
	resp.Choices = make([]chatChoice, n)
	for i := range answers {
		resp.Choices[i] = answers[i].done()
	}
	resp.Usage = toUsage(u.counts)
	if req.TimingsPerToken {
		resp.Timings = u.timings
	}
	pipeline.WriteJSON(w, http.StatusOK, resp)
}

// answer collects a choice's events into its message.
type answer struct {
	choice             chatChoice
	content, reasoning strings.Builder
	calls              []toolCallJSON
	parsed             bool
}

func (a *answer) add(ev *pipeline.Event) {
	switch ev.Kind {
	case pipeline.TextDelta:
		a.content.WriteString(ev.Text)
	case pipeline.ReasoningDelta:
		a.reasoning.WriteString(ev.Text)
	case pipeline.CallStart:
		a.calls = append(a.calls, toolCallJSON{ID: ev.Call.ID, Type: "function", Function: functionJSON{Name: ev.Call.Name, Arguments: ev.Call.Arguments}})
	case pipeline.CallArgs:
		if k := ev.Call.Index; k < len(a.calls) {
			a.calls[k].Function.Arguments += ev.Call.Arguments
		}
	case pipeline.Chunk:
		if a.choice.Logprobs != nil {
			a.choice.Logprobs.add(ev.Logprobs)
		}
	case pipeline.Finish, pipeline.Failed:
		f := string(ev.Finish)
		if ev.Kind == pipeline.Failed {
			f = string(pipeline.FinishError)
		}
		a.choice.FinishReason, a.parsed = &f, ev.Parsed
	}
}

// done is the choice as the response shows it: a parsed output's content
// and reasoning trimmed, its content null when there are calls and no
// text.
func (a *answer) done() chatChoice {
	m := a.choice.Message
	content := a.content.String()
	if !a.parsed {
		m.Content = &content
		return a.choice
	}
	content = strings.TrimSpace(content)
	if content != "" || len(a.calls) == 0 {
		m.Content = &content
	}
	m.ReasoningContent, m.ToolCalls = strings.TrimSpace(a.reasoning.String()), a.calls
	return a.choice
}

// streamChat streams the choices' deltas: content, reasoning, and each
// call as its id and name, then its arguments; a chunk's logprobs ride
// on its last delta.
func streamChat(w http.ResponseWriter, run pipeline.Run, resp *chatResponse, n int, logprobs bool, so *streamOptions, timings bool) {
	out := newSSE(w)
	chunk := func(c chatChoice) *chatResponse {
		r := *resp
		r.Choices = []chatChoice{c}
		return &r
	}
	empty := ""
	for i := range n {
		out.send(chunk(chatChoice{Index: i, Delta: &chatDelta{Role: "assistant", Content: &empty}}))
	}
	pending := make([][]*chatDelta, n)
	var u usage
	run.Each(func(ev *pipeline.Event) {
		u.add(ev)
		i := ev.Choice
		if i >= n {
			return
		}
		switch ev.Kind {
		case pipeline.Failed:
			out.send(ErrorEvent(ev.Text))
		case pipeline.Chunk: // the runtime chunk's deltas, its logprobs on the last
			deltas := pending[i]
			pending[i] = deltas[:0]
			last := chatChoice{Index: i, Delta: &chatDelta{}}
			if k := len(deltas); k > 0 {
				for _, d := range deltas[:k-1] {
					out.send(chunk(chatChoice{Index: i, Delta: d}))
				}
				last.Delta = deltas[k-1]
			}
			if logprobs && len(ev.Tokens) > 0 {
				last.Logprobs = &chatLogprobs{}
				last.Logprobs.add(ev.Logprobs)
			}
			if len(deltas) > 0 || last.Logprobs != nil {
				out.send(chunk(last))
			}
		case pipeline.Finish: // OpenAI's order: the last token, then finish_reason in a chunk of its own
			f := string(ev.Finish)
			out.send(chunk(chatChoice{Index: i, Delta: &chatDelta{}, FinishReason: &f}))
		default:
			if d := delta(ev); d != nil {
				pending[i] = append(pending[i], d)
			}
		}
	})
	r := *resp
	r.Choices = []chatChoice{}
	out.end(finalChunk(&r, &r.responseHead, &r.Usage, &u, so, timings))
}

// delta is a text, reasoning or call event as a chat delta; nil for
// others.
func delta(ev *pipeline.Event) *chatDelta {
	switch ev.Kind {
	case pipeline.TextDelta:
		if ev.Text == "" {
			return nil
		}
		t := ev.Text
		return &chatDelta{Content: &t}
	case pipeline.ReasoningDelta:
		t := ev.Text
		return &chatDelta{ReasoningContent: &t}
	case pipeline.CallStart, pipeline.CallArgs:
		k := ev.Call.Index
		tc := toolCallJSON{Index: &k, Function: functionJSON{Name: ev.Call.Name, Arguments: ev.Call.Arguments}}
		if ev.Call.ID != "" {
			tc.ID, tc.Type = ev.Call.ID, "function"
		}
		return &chatDelta{ToolCalls: []toolCallJSON{tc}}
	}
	return nil
}
