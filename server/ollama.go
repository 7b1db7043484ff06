package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/chat"
	"github.com/troupe-llm/troupe/server/openai"
	"github.com/troupe-llm/troupe/server/pipeline"
)

// Ollama's API (github.com/ollama/ollama, docs/api.md) beside OpenAI's, on
// the same port: /api/generate and /api/chat run through the same
// admission, runtime requests, cancellation, limits and metrics as
// /v1/completions and /v1/chat/completions; /api/tags, /api/show, /api/ps
// and /api/version describe the one served model. Errors have Ollama's
// shape, {"error": "..."} (writeOllamaError), written by the routes
// themselves from the typed errors of the machinery they share.

// ollamaVersion is the Ollama release whose API these routes follow, what
// /api/version answers (clients compare it against the features they use).
const ollamaVersion = "0.24.0"

// ollamaRoutes adds the /api routes.
func (s *Server) ollamaRoutes() {
	m := newOllamaModel(s)
	for _, r := range []struct {
		pattern string
		h       http.HandlerFunc
	}{
		{"POST /api/generate", s.admittedAs(writeOllamaError, s.ollamaGenerate)},
		{"POST /api/chat", s.admittedAs(writeOllamaError, func(w http.ResponseWriter, r *http.Request) { s.ollamaChat(w, r, m) })},
		{"GET /api/tags", m.tags},
		{"POST /api/show", m.show},
		{"GET /api/ps", m.ps},
		{"GET /api/version", s.ollamaVersion},
		{"POST /api/embed", s.admittedAs(writeOllamaError, s.ollamaEmbed)}, // embed_ollama.go
		{"POST /api/embeddings", s.admittedAs(writeOllamaError, s.ollamaEmbeddings)},
		{"HEAD /api/version", s.ollamaVersion},
	} {
		s.mux.HandleFunc(r.pattern, s.authAs(writeOllamaError, r.h))
	}
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeOllamaError(w, notFound("", "no route %s %s", r.Method, r.URL.Path))
	})
}

// ollamaRequest is the body of /api/generate and /api/chat; each reads its
// own fields. Unknown fields are ignored (truncate and shift among them:
// troupe never truncates a prompt nor shifts the context; a prompt past the
// context is a 400).
type ollamaRequest struct {
	Model string `json:"model"`
	// /api/generate
	Prompt   string          `json:"prompt"`
	Suffix   string          `json:"suffix"`
	System   string          `json:"system"`
	Template string          `json:"template"`
	Context  []int32         `json:"context"` // deprecated by Ollama; the tokens of an earlier exchange
	Raw      bool            `json:"raw"`
	Images   json.RawMessage `json:"images"`
	// /api/chat
	Messages []ollamaMessage   `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
	// both
	Format      json.RawMessage            `json:"format"`
	Options     map[string]json.RawMessage `json:"options"`
	Stream      *bool                      `json:"stream"` // default true
	Think       json.RawMessage            `json:"think"`
	KeepAlive   json.RawMessage            `json:"keep_alive"` // accepted: troupe keeps its one model loaded
	Logprobs    bool                       `json:"logprobs"`
	TopLogprobs int                        `json:"top_logprobs"`
}

func (r *ollamaRequest) model() string { return r.Model }

// ollamaMessage is a chat message in Ollama's shape.
type ollamaMessage struct {
	Role       string           `json:"role"`
	Content    string           `json:"content"`
	Thinking   string           `json:"thinking"` // an assistant's reasoning: rendered as chat's reasoning_content
	Images     json.RawMessage  `json:"images"`
	ToolCalls  []ollamaToolCall `json:"tool_calls"`
	ToolName   string           `json:"tool_name"`
	ToolCallID string           `json:"tool_call_id"`
}

// ollamaToolCall is a call, an assistant's or the model's: its arguments
// are a JSON object (OpenAI's are the object's text). Answers carry the
// id and index as Ollama's do (api.ToolCall); its docs/api.md shows the
// function's name and arguments.
type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Index     int             `json:"index"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// ollamaResponse is an object of a stream, or the whole answer: response
// is set for /api/generate, message for /api/chat.
type ollamaResponse struct {
	Model      string                    `json:"model"`
	CreatedAt  time.Time                 `json:"created_at"`
	Response   *string                   `json:"response,omitempty"`
	Thinking   string                    `json:"thinking,omitempty"` // /api/generate's
	Message    *ollamaReply              `json:"message,omitempty"`
	Done       bool                      `json:"done"`
	DoneReason string                    `json:"done_reason,omitempty"`
	Context    []int32                   `json:"context,omitempty"`
	Logprobs   []openai.TokenLogprobJSON `json:"logprobs,omitempty"`
}

// ollamaReply is the assistant's message, or a piece of it in a stream:
// content, thinking, or whole tool calls.
type ollamaReply struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	Thinking  string           `json:"thinking,omitempty"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
}

// ollamaMetrics are the counters and durations (nanoseconds) of the final
// object.
type ollamaMetrics struct {
	TotalDuration      int64 `json:"total_duration"`
	LoadDuration       int64 `json:"load_duration"`
	PromptEvalCount    int   `json:"prompt_eval_count"`
	PromptEvalDuration int64 `json:"prompt_eval_duration"`
	EvalCount          int   `json:"eval_count"`
	EvalDuration       int64 `json:"eval_duration"`
}

// ollamaFinal is the last object: the response, done, and the metrics.
type ollamaFinal struct {
	ollamaResponse
	ollamaMetrics
}

// ollamaGenerate serves POST /api/generate.
func (s *Server) ollamaGenerate(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req ollamaRequest
	if !s.readOllama(w, r, &req) {
		return
	}
	if e := req.checkGenerate(); e != nil {
		writeOllamaError(w, e)
		return
	}
	if req.Prompt == "" { // Ollama loads the model and answers at once
		empty := ""
		writeJSON(w, http.StatusOK, &ollamaResponse{Model: req.Model, CreatedAt: time.Now().UTC(), Response: &empty, Done: true, DoneReason: "load"})
		return
	}
	kwargs, e := s.thinkKwargs(&req)
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	var prompt []int32
	text := req.Prompt
	switch {
	case req.Suffix != "": // fill in the middle (infill.go)
		if prompt, e = s.infillPrompt("suffix", infillInput{prefix: req.Prompt, suffix: req.Suffix}); e != nil {
			e.Message = fmt.Sprintf("%q does not support insert: %s", req.Model, e.Message) // Ollama's words
			writeOllamaError(w, e)
			return
		}
	case req.Raw || s.template == nil && req.System == "": // Ollama's default template is the prompt alone
		ids, err := s.tokenizeText(req.Prompt, len(req.Context) == 0)
		if err != nil {
			writeOllamaError(w, tokenizeError("prompt", "tokenizing the prompt", err))
			return
		}
		prompt = ids
	default:
		var msgs []chat.Message
		if req.System != "" {
			msgs = append(msgs, chat.Message{Role: "system", Content: req.System})
		}
		msgs = append(msgs, chat.Message{Role: "user", Content: req.Prompt})
		if prompt, text, e = s.render(&renderInput{msgs: msgs, kwargs: kwargs}); e != nil {
			writeOllamaError(w, e)
			return
		}
		if len(req.Context) > 0 && prompt[0] == s.rt.Model().Tokenizer.BOS() {
			prompt = prompt[1:] // the context starts the sequence
		}
	}
	prompt = append(append([]int32(nil), req.Context...), prompt...)
	g, e := s.ollamaGenerateRequest(r.Context(), &req, prompt)
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	parser, e := s.ollamaParser(nil, g, text)
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	s.ollamaRun(w, r, &req, g, parser, start, false)
}

// checkGenerate refuses what /api/generate cannot do.
func (req *ollamaRequest) checkGenerate() *apiError {
	switch {
	case hasValue(req.Images):
		return badRequest("images", "images are not supported: troupe serves text-only models")
	case req.Suffix != "" && (req.Raw || req.System != "" || len(req.Context) > 0):
		return badRequest("suffix", "suffix (fill in the middle) does not go with raw, system or context")
	case req.Template != "":
		return badRequest("template", "template is not supported: troupe renders the model's own chat template (Jinja), or the prompt as given with raw: true")
	case req.Raw && (req.System != "" || len(req.Context) > 0):
		return badRequest("raw", "raw mode does not support template, system, or context")
	}
	return nil
}

// ollamaChat serves POST /api/chat. The conversation is rendered with the
// chat template as /v1/chat/completions renders it; with tools, the
// model's calls come back in message.tool_calls (Ollama has no
// tool_choice: it is "auto").
func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request, om *ollamaModel) {
	start := time.Now()
	var req ollamaRequest
	if !s.readOllama(w, r, &req) {
		return
	}
	if len(req.Messages) == 0 { // Ollama loads the model and answers at once
		writeJSON(w, http.StatusOK, &ollamaResponse{Model: req.Model, CreatedAt: time.Now().UTC(),
			Message: &ollamaReply{Role: "assistant"}, Done: true, DoneReason: "load"})
		return
	}
	kwargs, e := s.thinkKwargs(&req)
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	msgs, e := ollamaMessages(req.Messages)
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	tools, e := pipelineTools(rawTools(req.Tools))
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	if len(tools.tools) > 0 && !om.tools {
		writeOllamaError(w, badRequest("tools", "%q does not support tools", req.Model))
		return
	}
	prompt, text, e := s.render(&renderInput{msgs: msgs, tools: req.Tools, kwargs: kwargs})
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	g, e := s.ollamaGenerateRequest(r.Context(), &req, prompt)
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	parser, e := s.ollamaParser(tools, g, text)
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	s.ollamaRun(w, r, &req, g, parser, start, true)
}

// rawTools is a request of OpenAI-shaped tools, for pipelineTools.
func rawTools(tools []json.RawMessage) *pipeline.Request {
	p := &pipeline.Request{ParallelToolCalls: true}
	for _, t := range tools {
		p.Tools = append(p.Tools, pipeline.Tool{Raw: t})
	}
	return p
}

// ollamaMessages are Ollama's messages as the chat template's: a call's
// arguments (an object) as its JSON text, the content always a string.
func ollamaMessages(in []ollamaMessage) ([]chat.Message, *apiError) {
	msgs := make([]chat.Message, len(in))
	for i, m := range in {
		if hasValue(m.Images) {
			return nil, badRequest("messages", "messages[%d].images: images are not supported: troupe serves text-only models", i)
		}
		if e := checkRole(i, m.Role); e != nil {
			return nil, e
		}
		cm := chat.Message{Role: m.Role, Content: m.Content, Name: m.ToolName, ToolCallID: m.ToolCallID, Reasoning: m.Thinking, StringContent: true}
		for _, c := range m.ToolCalls {
			args := "{}"
			if hasValue(c.Function.Arguments) {
				args = string(c.Function.Arguments)
			}
			cm.ToolCalls = append(cm.ToolCalls, chat.ToolCall{ID: c.ID, Type: "function", Function: chat.FunctionCall{Name: c.Function.Name, Arguments: args}})
		}
		msgs[i] = cm
	}
	return msgs, nil
}

// readOllama decodes the body and checks that it names the served model;
// on failure it has written the error and returns false.
func (s *Server) readOllama(w http.ResponseWriter, r *http.Request, req modelRequest) bool {
	e := decodeBody(w, r, s.cfg.MaxBodyBytes, req)
	if e == nil {
		e = s.ollamaCheckModel(req.model())
	}
	if e != nil {
		writeOllamaError(w, e)
		return false
	}
	return true
}

// ollamaName is the served model's name as Ollama lists it: with a tag,
// ":latest" when the served name has none.
func (s *Server) ollamaName() string {
	name := s.cfg.ModelName
	if !strings.Contains(name[strings.LastIndex(name, "/")+1:], ":") {
		name += ":latest"
	}
	return name
}

// ollamaCheckModel accepts the served model's name, with or without its
// ":latest" tag; any other is Ollama's 404.
func (s *Server) ollamaCheckModel(name string) *apiError {
	switch name {
	case "":
		return badRequest("model", "model is required")
	case s.cfg.ModelName, s.ollamaName():
		return nil
	}
	return notFound("model_not_found", "model '%s' not found", name)
}

// ollamaGenerateRequest makes the runtime request for a prompt: the
// options, format and logprobs, checked by the runtime.
func (s *Server) ollamaGenerateRequest(ctx context.Context, req *ollamaRequest, prompt []int32) (*messages.GenerateRequest, *apiError) {
	g := &messages.GenerateRequest{Prompt: prompt, N: 1}
	limits, ignored, e := applyOllamaOptions(req.Options, g)
	if e != nil {
		return nil, e
	}
	if len(ignored) > 0 {
		s.cfg.Log.Warn().Strs("options", ignored).Msg("ollama: options ignored (unknown, or not applied by troupe)")
	}
	ctxLen := s.rt.MaxModelLen()
	if limits.numCtx > ctxLen {
		return nil, badRequest("num_ctx", "option \"num_ctx\" %d exceeds the served context of %d tokens (troupe serve --max-model-len)", limits.numCtx, ctxLen)
	}
	if limits.numCtx > 0 {
		ctxLen = limits.numCtx
	}
	if g.MaxTokens, e = maxTokens(nil, "num_predict", "prompt", 0, len(prompt), ctxLen); e != nil {
		return nil, e
	}
	if limits.numPredict > 0 { // more than the context holds: until it is full, as Ollama's
		g.MaxTokens = min(g.MaxTokens, limits.numPredict)
	}
	if g.Grammar, e = ollamaFormat(req.Format); e != nil {
		return nil, e
	}
	if g.Grammar != nil {
		if err := s.rt.CompileGrammarContext(ctx, g.Grammar); err != nil {
			e := userError(err)
			e.Param = strp("format")
			return nil, e
		}
	}
	if !req.Raw {
		if e := s.harmonyAnswer(ctx, g, "format"); e != nil {
			return nil, e
		}
	}
	if req.Logprobs {
		if req.TopLogprobs < 0 || req.TopLogprobs > 20 {
			return nil, badRequest("top_logprobs", "top_logprobs must be between 0 and 20")
		}
		g.Sampling.WantLogprob, g.Sampling.Logprobs = true, req.TopLogprobs
	}
	if err := s.rt.Check(g); err != nil {
		return nil, userError(err)
	}
	return g, nil
}

func (s *Server) ollamaVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": ollamaVersion})
}

// hasValue reports whether a raw field holds something other than null or
// an empty list.
func hasValue(v json.RawMessage) bool {
	switch strings.TrimSpace(string(v)) {
	case "", "null", "[]":
		return false
	}
	return true
}
