package responses

import (
	"encoding/json"
	"time"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// response is the Response object.
type response struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Error              *errorObject    `json:"error"`
	IncompleteDetails  *incomplete     `json:"incomplete_details"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             []outputItem    `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Reasoning          map[string]any  `json:"reasoning"`
	Store              bool            `json:"store"`
	Temperature        *float64        `json:"temperature"`
	Text               map[string]any  `json:"text"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Tools              []tool          `json:"tools"`
	TopP               *float64        `json:"top_p"`
	Truncation         string          `json:"truncation"`
	Usage              *usage          `json:"usage"`
	User               *string         `json:"user"`
	Metadata           map[string]any  `json:"metadata"`
}

type incomplete struct {
	Reason string `json:"reason"`
}

type errorObject struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type usage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// outputItem is an item of the output: a message, a function_call or a
// reasoning item.
type outputItem struct {
	Type      string        `json:"type"`
	ID        string        `json:"id"`
	Status    string        `json:"status,omitempty"`
	Role      string        `json:"role,omitempty"`
	Content   *[]outputPart `json:"content,omitempty"`
	Summary   *[]outputPart `json:"summary,omitempty"`
	CallID    string        `json:"call_id,omitempty"`
	Name      string        `json:"name,omitempty"`
	Arguments *string       `json:"arguments,omitempty"`
}

// outputPart is a content part: output_text or reasoning_text.
type outputPart struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations *[]any `json:"annotations,omitempty"`
	Logprobs    *[]any `json:"logprobs,omitempty"`
}

// newResponse is the response object of req, in progress.
func newResponse(req *request, model string) *response {
	resp := &response{ID: newID("resp_"), Object: "response", CreatedAt: time.Now().Unix(), Status: "in_progress",
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Model: model, Output: []outputItem{},
		ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls, PreviousResponseID: req.PreviousResponseID,
		Reasoning: map[string]any{"effort": nil, "summary": nil}, Store: req.Store == nil || *req.Store,
		Temperature: req.Temperature, Text: map[string]any{"format": map[string]string{"type": "text"}},
		ToolChoice: req.ToolChoice, Tools: req.Tools, TopP: req.TopP, Truncation: "disabled", User: req.User, Metadata: req.Metadata}
	if resp.Model == "" {
		resp.Model = model
	}
	if req.Reasoning != nil && req.Reasoning.Effort != nil {
		resp.Reasoning["effort"] = *req.Reasoning.Effort
	}
	if req.Text != nil && req.Text.Format != nil {
		resp.Text["format"] = req.Text.Format
	}
	if pipeline.IsNull(resp.ToolChoice) {
		resp.ToolChoice = json.RawMessage(`"auto"`)
	}
	if resp.Tools == nil {
		resp.Tools = []tool{}
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]any{}
	}
	return resp
}

// emitter receives the stream's events; nil when not streaming.
type emitter func(name string, fields map[string]any)

// assembler builds the output items from the pipeline's events and, when
// streaming, writes the API's events as it goes.
type assembler struct {
	resp  *response
	emit  emitter
	open  int         // 1 + the index of the item being written; 0: none
	calls map[int]int // call index -> its item
	seq   int         // the next event's sequence_number
}

// event writes one stream event, its type and sequence number added.
func (a *assembler) event(name string, fields map[string]any) {
	if a.emit == nil {
		return
	}
	fields["type"] = name
	fields["sequence_number"] = a.seq
	a.seq++
	a.emit(name, fields)
}

// add takes one pipeline event.
func (a *assembler) add(ev *pipeline.Event) {
	switch ev.Kind {
	case pipeline.TextDelta, pipeline.ReasoningDelta:
		if ev.Text == "" {
			return
		}
		typ, part, delta := "message", "output_text", "response.output_text.delta"
		if ev.Kind == pipeline.ReasoningDelta {
			typ, part, delta = "reasoning", "reasoning_text", "response.reasoning_text.delta"
		}
		if a.open == 0 || a.resp.Output[a.open-1].Type != typ {
			a.startText(typ, part)
		}
		it := &a.resp.Output[a.open-1]
		(*it.Content)[0].Text += ev.Text
		fields := map[string]any{"item_id": it.ID, "output_index": a.open - 1, "content_index": 0, "delta": ev.Text}
		if typ == "message" {
			fields["logprobs"] = []any{}
		}
		a.event(delta, fields)
	case pipeline.CallStart:
		a.closeItem()
		empty := ""
		a.resp.Output = append(a.resp.Output, outputItem{Type: "function_call", ID: newID("fc_"), Status: "in_progress",
			CallID: callID(ev.Call.ID), Name: ev.Call.Name, Arguments: &empty})
		a.open = len(a.resp.Output)
		if a.calls == nil {
			a.calls = map[int]int{}
		}
		a.calls[ev.Call.Index] = a.open - 1
		a.event("response.output_item.added", map[string]any{"output_index": a.open - 1, "item": a.resp.Output[a.open-1]})
	case pipeline.CallArgs:
		k, ok := a.calls[ev.Call.Index]
		if !ok {
			return
		}
		it := &a.resp.Output[k]
		*it.Arguments += ev.Call.Arguments
		a.event("response.function_call_arguments.delta", map[string]any{"item_id": it.ID, "output_index": k, "delta": ev.Call.Arguments})
	case pipeline.Finish:
		a.closeItem()
		a.resp.Status = "completed"
		if ev.Finish == pipeline.FinishLength {
			a.resp.Status, a.resp.IncompleteDetails = "incomplete", &incomplete{Reason: "max_output_tokens"}
		}
	case pipeline.Usage:
		u := &usage{InputTokens: ev.Usage.PromptTokens, OutputTokens: ev.Usage.CompletionTokens,
			TotalTokens: ev.Usage.PromptTokens + ev.Usage.CompletionTokens}
		u.InputTokensDetails.CachedTokens = ev.Usage.CachedTokens
		a.resp.Usage = u
	}
}

// startText opens a message or reasoning item with one empty part.
func (a *assembler) startText(typ, partType string) {
	a.closeItem()
	it := outputItem{Type: typ, Status: "in_progress", Content: &[]outputPart{}}
	if typ == "message" {
		it.ID, it.Role = newID("msg_"), "assistant"
	} else {
		it.ID, it.Summary = newID("rs_"), &[]outputPart{}
	}
	a.resp.Output = append(a.resp.Output, it)
	a.open = len(a.resp.Output)
	idx := a.open - 1
	a.event("response.output_item.added", map[string]any{"output_index": idx, "item": it})
	p := outputPart{Type: partType}
	if typ == "message" {
		p.Annotations, p.Logprobs = &[]any{}, &[]any{}
	}
	*a.resp.Output[idx].Content = []outputPart{p}
	a.event("response.content_part.added", map[string]any{"item_id": it.ID, "output_index": idx, "content_index": 0, "part": p})
}

// closeItem ends the open item with its done events.
func (a *assembler) closeItem() {
	if a.open == 0 {
		return
	}
	idx := a.open - 1
	a.open = 0
	it := &a.resp.Output[idx]
	it.Status = "completed"
	switch it.Type {
	case "message", "reasoning":
		p := (*it.Content)[0]
		done := map[string]any{"item_id": it.ID, "output_index": idx, "content_index": 0, "text": p.Text}
		if it.Type == "message" {
			done["logprobs"] = []any{}
			a.event("response.output_text.done", done)
		} else {
			a.event("response.reasoning_text.done", done)
		}
		a.event("response.content_part.done", map[string]any{"item_id": it.ID, "output_index": idx, "content_index": 0, "part": p})
	case "function_call":
		a.event("response.function_call_arguments.done", map[string]any{"item_id": it.ID, "output_index": idx,
			"name": it.Name, "arguments": *it.Arguments})
	}
	a.event("response.output_item.done", map[string]any{"output_index": idx, "item": *it})
}

// callID is a call's id as this API writes it.
func callID(id string) string {
	if id == "" {
		return newID("call_")
	}
	return id
}

// outputMessages is a response's output as the assistant message a
// later turn sees.
func outputMessages(out []outputItem) []pipeline.Message {
	var m pipeline.Message
	m.Role = pipeline.Assistant
	for _, it := range out {
		switch it.Type {
		case "message":
			for _, p := range *it.Content {
				m.Content += p.Text
			}
		case "reasoning":
			for _, p := range *it.Content {
				m.Reasoning += p.Text
			}
		case "function_call":
			m.ToolCalls = append(m.ToolCalls, pipeline.ToolCall{ID: it.CallID, Name: it.Name, Arguments: *it.Arguments})
		}
	}
	return []pipeline.Message{m}
}
