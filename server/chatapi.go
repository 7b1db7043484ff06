package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/chat"
	"github.com/troupe-llm/troupe/server/toolcall"
)

type chatMessage struct {
	Role       string          `json:"role"`
	Content    contentField    `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	// An assistant's reasoning (reasoning.go: messageReasoning).
	ReasoningContent string `json:"reasoning_content"`
	Reasoning        string `json:"reasoning"`
	// stringContent: an empty content is "", not None, beside tool calls
	// (Ollama's messages).
	stringContent bool
}

type chatRequest struct {
	samplingFields
	Messages            []chatMessage     `json:"messages"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Logprobs            bool              `json:"logprobs"`
	TopLogprobs         *int              `json:"top_logprobs"`
	Tools               []json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls"`
	AddGenerationPrompt *bool             `json:"add_generation_prompt"`
	// ContinueFinalMessage (vLLM's) leaves the last message open for the
	// model to continue (an assistant prefill); add_generation_prompt
	// is then false.
	ContinueFinalMessage bool                       `json:"continue_final_message"`
	ChatTemplateKwargs   map[string]json.RawMessage `json:"chat_template_kwargs"`
	ReasoningEffort      *string                    `json:"reasoning_effort"` // the template's reasoning_effort (reasoning.go)
}

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
	text             string         // the output before it is parsed
}

type chatResponse struct {
	responseHead
	Choices []chatChoice `json:"choices"`
	Usage   *usageJSON   `json:"usage"`
}

// chatCompletions serves POST /v1/chat/completions.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req chatRequest
	if !s.read(w, r, &req) {
		return
	}
	lp := -1
	if req.Logprobs {
		lp = 0
		if req.TopLogprobs != nil {
			lp = *req.TopLogprobs
		}
		if lp < 0 || lp > 20 {
			writeError(w, badRequest("top_logprobs", "top_logprobs %d is outside [0, 20]", lp))
			return
		}
	} else if req.TopLogprobs != nil {
		writeError(w, badRequest("top_logprobs", "top_logprobs needs logprobs: true"))
		return
	}
	tools, e := readTools(&req)
	if e != nil {
		writeError(w, e)
		return
	}
	prompt, text, e := s.renderChat(&req)
	if e != nil {
		writeError(w, e)
		return
	}
	g := &messages.GenerateRequest{Prompt: prompt}
	if e := req.toRequest(g, lp); e != nil {
		writeError(w, e)
		return
	}
	limit, param := req.MaxCompletionTokens, "max_completion_tokens"
	if limit == nil {
		limit, param = req.MaxTokens, "max_tokens"
	}
	j, parser, e := s.startGeneration(r.Context(), &generation{g: g, text: text, grammarParam: req.grammarParam, tools: tools, chat: true,
		maxTokens: limit, maxParam: param, promptParam: "messages"}, start)
	if e != nil {
		writeError(w, e)
		return
	}
	j.grammarParam = req.grammarParam
	if tools.forced() {
		j.grammarParam = "tools"
	}
	resp := &chatResponse{responseHead: s.head("chatcmpl-", start)}
	if req.Stream {
		resp.Object = "chat.completion.chunk"
		s.streamChat(w, j, resp, lp >= 0, req.StreamOptions, req.TimingsPerToken, parser, tools.parallel)
		return
	}
	resp.Object = "chat.completion"
	choices := make([]chatChoice, j.n)
	for i := range choices {
		choices[i] = chatChoice{Index: i, Message: &chatResult{Role: "assistant"}}
		if lp >= 0 {
			choices[i].Logprobs = &chatLogprobs{Content: []chatTokenLogprob{}}
		}
	}
	failed := j.drain(func(i int, c *messages.OutputChunk) {
		ch := &choices[i]
		ch.Message.text += c.Text
		if ch.Logprobs != nil {
			s.addChat(ch.Logprobs, c.Tokens)
		}
		if c.FinishReason != "" {
			f := c.FinishReason
			ch.FinishReason = &f
		}
	})
	if failed != nil {
		writeError(w, failed)
		return
	}
	if r.Context().Err() != nil {
		return
	}
	for i := range choices {
		m := choices[i].Message
		if parser == nil {
			m.Content = &m.text
			continue
		}
		m.Content, m.ReasoningContent, m.ToolCalls = toolResult(parser, m.text, tools.parallel)
		if f := choices[i].FinishReason; f != nil {
			*f = toolFinish(*f, len(m.ToolCalls) > 0)
		}
	}
	resp.Choices, resp.Usage = choices, toUsage(j.usage)
	if req.TimingsPerToken {
		resp.Timings = j.timings()
	}
	writeJSON(w, http.StatusOK, resp)
}

// renderChat renders the conversation with the chat template and tokenizes
// it, returning the ids and the text. BOS is added only when the template
// did not write it.
func (s *Server) renderChat(req *chatRequest) ([]int32, string, *apiError) {
	if s.template == nil {
		return nil, "", s.noTemplate()
	}
	msgs := make([]chat.Message, len(req.Messages))
	for i, m := range req.Messages {
		if e := checkRole(i, m.Role); e != nil {
			return nil, "", e
		}
		msgs[i] = chat.Message{Role: m.Role, Content: m.Content.text, Name: m.Name, ToolCallID: m.ToolCallID,
			StringContent: m.stringContent, Reasoning: m.messageReasoning()}
		calls, err := readToolCalls(m.ToolCalls)
		if err != nil {
			return nil, "", badRequest("messages", "messages[%d].tool_calls: %v", i, err)
		}
		msgs[i].ToolCalls = calls
	}
	in := renderInput{msgs: msgs, tools: req.Tools, kwargs: req.ChatTemplateKwargs, effort: req.ReasoningEffort,
		addGenerationPrompt: req.AddGenerationPrompt, continueFinal: req.ContinueFinalMessage}
	return s.render(&in)
}

// checkRole refuses a role the chat routes do not know.
func checkRole(i int, role string) *apiError {
	switch role {
	case "system", "user", "assistant", "tool", "developer":
		return nil
	}
	return badRequest("messages", "messages[%d].role %q is not one of system, user, assistant, tool", i, role)
}

// noTemplate is the error of a chat request to a model without a usable
// chat template.
func (s *Server) noTemplate() *apiError {
	if errors.Is(s.tmplErr, chat.ErrNoTemplate) {
		return badRequest("messages", "this model has no chat template; start the server with --chat-template FILE, or use /v1/completions")
	}
	return badRequest("messages", "%v", s.tmplErr)
}

// renderInput is what a conversation is rendered from, whatever API it
// came in: the messages (their roles as the API has them), the tools as
// OpenAI's JSON, the template variables and generation-prompt switches.
type renderInput struct {
	msgs                []chat.Message
	tools               []json.RawMessage
	kwargs              map[string]json.RawMessage
	effort              *string
	addGenerationPrompt *bool
	continueFinal       bool
}

// render renders in with the chat template and tokenizes the text.
func (s *Server) render(in *renderInput) ([]int32, string, *apiError) {
	if s.template == nil {
		return nil, "", s.noTemplate()
	}
	if len(in.msgs) == 0 {
		return nil, "", badRequest("messages", "messages must not be empty")
	}
	msgs := make([]chat.Message, len(in.msgs))
	for i, m := range in.msgs {
		m.Role = s.templateRole(m.Role)
		m.StringContent = m.StringContent || s.template.NeedsStringContent()
		s.harmonyMessage(&m)
		msgs[i] = m
	}
	bos, eos := s.rt.SpecialTokens()
	o := chat.Options{AddGenerationPrompt: true, BOSToken: bos, EOSToken: eos, ToolDescriptions: s.template.NeedsToolDescription()}
	for _, tool := range in.tools { // raw, so tojson keeps the client's key order
		o.Tools = append(o.Tools, tool)
	}
	if len(in.kwargs) > 0 {
		o.Extra = make(map[string]any, len(in.kwargs))
		for k, v := range in.kwargs {
			o.Extra[k] = v
		}
	}
	s.toolVariables(&o, in.tools)
	if e := s.setReasoningEffort(&o, in.effort); e != nil {
		return nil, "", e
	}
	if in.addGenerationPrompt != nil {
		o.AddGenerationPrompt = *in.addGenerationPrompt
	}
	if in.continueFinal {
		if in.addGenerationPrompt != nil && *in.addGenerationPrompt {
			return nil, "", badRequest("continue_final_message", "continue_final_message and add_generation_prompt cannot both be true")
		}
		o.AddGenerationPrompt, o.ContinueFinalMessage = false, true
	}
	text, err := s.template.Render(msgs, o)
	var budget *chat.BudgetError
	switch {
	case errors.As(err, &budget):
		// The model file's template is at fault, not the request.
		s.cfg.Log.Error().Str("resource", budget.Resource).Int64("limit", budget.Limit).
			Msg("the model's chat template exceeded its render budget: the template in the model file (or --chat-template) is broken or hostile")
		return nil, "", internal(fmt.Errorf("the model's chat template exceeded its %s budget rendering this conversation; the template in the model file is at fault, not the request", budget.Resource))
	case err != nil:
		return nil, "", badRequest("messages", "chat template: %v", err)
	}
	ids, err := s.tokenizeText(text, bos == "" || !strings.HasPrefix(text, bos))
	if err != nil {
		return nil, "", tokenizeError("messages", "tokenizing the conversation", err)
	}
	if len(ids) == 0 {
		return nil, "", badRequest("messages", "the rendered conversation is empty")
	}
	return ids, text, nil
}

// readToolCalls reads an assistant message's tool_calls; a call's
// arguments may be JSON text (OpenAI's) or an object.
func readToolCalls(raw json.RawMessage) ([]chat.ToolCall, error) {
	if isNull(raw) {
		return nil, nil
	}
	var calls []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &calls); err != nil {
		return nil, errors.New("expected a list of tool calls")
	}
	out := make([]chat.ToolCall, len(calls))
	for i, c := range calls {
		args := string(c.Function.Arguments)
		if isNull(c.Function.Arguments) {
			args = "{}"
		} else if err := json.Unmarshal(c.Function.Arguments, &args); err != nil && c.Function.Arguments[0] != '{' {
			return nil, fmt.Errorf("call %d: arguments must be JSON text or an object", i)
		}
		out[i] = chat.ToolCall{ID: c.ID, Type: c.Type, Function: chat.FunctionCall{Name: c.Function.Name, Arguments: args}}
	}
	return out, nil
}

// streamChat streams the choices' deltas. With a tool-call parser each
// choice's text goes through its own toolcall.Stream: content, reasoning,
// and each call as its id and name, then its arguments.
func (s *Server) streamChat(w http.ResponseWriter, j *job, resp *chatResponse, logprobs bool, so *streamOptions, timings bool, parser *toolcall.Parser, parallel bool) {
	out := newSSE(w)
	chunk := func(c chatChoice) *chatResponse {
		r := *resp
		r.Choices = []chatChoice{c}
		return &r
	}
	empty := ""
	var streams []*toolcall.Stream
	for i := range j.n {
		out.send(chunk(chatChoice{Index: i, Delta: &chatDelta{Role: "assistant", Content: &empty}}))
	}
	j.drain(func(i int, c *messages.OutputChunk) {
		if c.FinishReason == messages.FinishError {
			out.send(errorEvent(c.Err))
			return
		}
		var deltas []*chatDelta
		switch {
		case parser != nil:
			for len(streams) <= i {
				streams = append(streams, parser.NewStream())
			}
			ds := streams[i].Write(c.Text)
			if c.FinishReason != "" {
				ds = append(ds, streams[i].Close()...)
			}
			deltas = toolDeltas(ds, parallel)
		case c.Text != "":
			text := c.Text
			deltas = []*chatDelta{{Content: &text}}
		}
		last := chatChoice{Index: i, Delta: &chatDelta{}}
		if n := len(deltas); n > 0 {
			for _, d := range deltas[:n-1] {
				out.send(chunk(chatChoice{Index: i, Delta: d}))
			}
			last.Delta = deltas[n-1]
		}
		if logprobs && len(c.Tokens) > 0 {
			last.Logprobs = &chatLogprobs{}
			s.addChat(last.Logprobs, c.Tokens)
		}
		if len(deltas) > 0 || last.Logprobs != nil {
			out.send(chunk(last))
		}
		if c.FinishReason != "" { // OpenAI's order: the last token, then finish_reason in a chunk of its own
			f := c.FinishReason
			if parser != nil {
				f = toolFinish(f, streams[i].Finished())
			}
			out.send(chunk(chatChoice{Index: i, Delta: &chatDelta{}, FinishReason: &f}))
		}
	})
	r := *resp
	r.Choices = []chatChoice{}
	out.end(finalChunk(&r, &r.responseHead, &r.Usage, j, so, timings))
}
