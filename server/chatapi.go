package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/chat"
)

type chatMessage struct {
	Role       string          `json:"role"`
	Content    contentField    `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type chatRequest struct {
	samplingFields
	Messages            []chatMessage              `json:"messages"`
	MaxCompletionTokens *int                       `json:"max_completion_tokens"`
	Logprobs            bool                       `json:"logprobs"`
	TopLogprobs         *int                       `json:"top_logprobs"`
	Tools               []json.RawMessage          `json:"tools"`
	ToolChoice          json.RawMessage            `json:"tool_choice"`
	AddGenerationPrompt *bool                      `json:"add_generation_prompt"`
	ChatTemplateKwargs  map[string]json.RawMessage `json:"chat_template_kwargs"`
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      *chatResult   `json:"message,omitempty"`
	Delta        *chatDelta    `json:"delta,omitempty"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatResult struct {
	Role    string `json:"role"`
	Content string `json:"content"`
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
	if e := checkToolChoice(req.ToolChoice); e != nil {
		writeError(w, e)
		return
	}
	prompt, e := s.renderChat(&req)
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
	if g.MaxTokens, e = maxTokens(limit, param, "messages", 0, len(prompt), s.rt.MaxModelLen()); e != nil {
		writeError(w, e)
		return
	}
	if err := s.rt.Check(g); err != nil {
		writeError(w, userError(err))
		return
	}
	j, e := s.launch(r.Context(), []*messages.GenerateRequest{g}, start)
	if e != nil {
		writeError(w, e)
		return
	}
	resp := &chatResponse{responseHead: s.head("chatcmpl-", start)}
	if req.Stream {
		resp.Object = "chat.completion.chunk"
		s.streamChat(w, j, resp, lp >= 0, req.StreamOptions, req.TimingsPerToken)
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
		ch.Message.Content += c.Text
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
	resp.Choices, resp.Usage = choices, toUsage(j.usage)
	if req.TimingsPerToken {
		resp.Timings = j.timings()
	}
	writeJSON(w, http.StatusOK, resp)
}

// renderChat renders the conversation with the chat template and tokenizes
// it. BOS is added only when the template did not write it.
func (s *Server) renderChat(req *chatRequest) ([]int32, *apiError) {
	if s.template == nil {
		if errors.Is(s.tmplErr, chat.ErrNoTemplate) {
			return nil, badRequest("messages", "this model has no chat template; start the server with --chat-template FILE, or use /v1/completions")
		}
		return nil, badRequest("messages", "%v", s.tmplErr)
	}
	if len(req.Messages) == 0 {
		return nil, badRequest("messages", "messages must not be empty")
	}
	msgs := make([]chat.Message, len(req.Messages))
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "user", "assistant", "tool", "developer":
		default:
			return nil, badRequest("messages", "messages[%d].role %q is not one of system, user, assistant, tool", i, m.Role)
		}
		msgs[i] = chat.Message{Role: m.Role, Content: m.Content.text, Name: m.Name, ToolCallID: m.ToolCallID}
		if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
			if err := json.Unmarshal(m.ToolCalls, &msgs[i].ToolCalls); err != nil {
				return nil, badRequest("messages", "messages[%d].tool_calls: expected a list of tool calls", i)
			}
		}
	}
	bos, eos := s.rt.SpecialTokens()
	o := chat.Options{AddGenerationPrompt: true, BOSToken: bos, EOSToken: eos}
	for _, tool := range req.Tools { // raw, so tojson keeps the client's key order
		o.Tools = append(o.Tools, tool)
	}
	if len(req.ChatTemplateKwargs) > 0 {
		o.Extra = make(map[string]any, len(req.ChatTemplateKwargs))
		for k, v := range req.ChatTemplateKwargs {
			o.Extra[k] = v
		}
	}
	if req.AddGenerationPrompt != nil {
		o.AddGenerationPrompt = *req.AddGenerationPrompt
	}
	text, err := s.template.Render(msgs, o)
	if err != nil {
		return nil, badRequest("messages", "chat template: %v", err)
	}
	ids, err := s.rt.TokenizeText(text, bos == "" || !strings.HasPrefix(text, bos), true)
	if err != nil {
		return nil, badRequest("messages", "tokenizing the conversation: %v", err)
	}
	if len(ids) == 0 {
		return nil, badRequest("messages", "the rendered conversation is empty")
	}
	return ids, nil
}

func (s *Server) streamChat(w http.ResponseWriter, j *job, resp *chatResponse, logprobs bool, so *streamOptions, timings bool) {
	out := newSSE(w)
	chunk := func(c chatChoice) *chatResponse {
		r := *resp
		r.Choices = []chatChoice{c}
		return &r
	}
	empty := ""
	for i := range j.n {
		out.send(chunk(chatChoice{Index: i, Delta: &chatDelta{Role: "assistant", Content: &empty}}))
	}
	j.drain(func(i int, c *messages.OutputChunk) {
		if c.FinishReason == messages.FinishError {
			out.send(errorEvent(c.Err))
			return
		}
		ch := chatChoice{Index: i, Delta: &chatDelta{}}
		if c.Text != "" {
			text := c.Text
			ch.Delta.Content = &text
		}
		if logprobs && len(c.Tokens) > 0 {
			ch.Logprobs = &chatLogprobs{}
			s.addChat(ch.Logprobs, c.Tokens)
		}
		if ch.Delta.Content != nil || ch.Logprobs != nil {
			out.send(chunk(ch))
		}
		if c.FinishReason != "" { // OpenAI's order: the last token, then finish_reason in a chunk of its own
			f := c.FinishReason
			out.send(chunk(chatChoice{Index: i, Delta: &chatDelta{}, FinishReason: &f}))
		}
	})
	r := *resp
	r.Choices = []chatChoice{}
	out.end(finalChunk(&r, &r.responseHead, &r.Usage, j, so, timings))
}
