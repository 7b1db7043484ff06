package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/openai"
	"github.com/troupe-llm/troupe/server/pipeline"
)

// infillRequest is llama-server's POST /infill body: the FIM inputs, the
// shared sampling fields, and the fields editor clients (llama.vim) send.
type infillRequest struct {
	samplingFields
	InputPrefix *string       `json:"input_prefix"`
	InputSuffix *string       `json:"input_suffix"`
	InputExtra  []infillChunk `json:"input_extra"`
	Prompt      string        `json:"prompt"`
	// CachePrompt is inert: troupe always reuses cached prefixes, and the
	// output does not depend on it.
	CachePrompt *bool `json:"cache_prompt"`
	// TMaxPromptMS is inert, as in llama-server b10573, which reads it but
	// has its use commented out.
	TMaxPromptMS   *int     `json:"t_max_prompt_ms"`
	NIndent        *int     `json:"n_indent"`
	Samplers       []string `json:"samplers"`
	ResponseFields []string `json:"response_fields"`
}

// infillResponse is llama-server's completion object (its /infill and
// /completion answer), streamed as one object per piece of text.
type infillResponse struct {
	Index           int          `json:"index"`
	Content         string       `json:"content"`
	Tokens          []int32      `json:"tokens"`
	Stop            bool         `json:"stop"`
	Model           string       `json:"model"`
	TokensPredicted int          `json:"tokens_predicted"`
	TokensEvaluated int          `json:"tokens_evaluated"`
	TokensCached    int          `json:"tokens_cached"`
	Truncated       bool         `json:"truncated"`
	HasNewLine      bool         `json:"has_new_line"`
	StopType        string       `json:"stop_type,omitempty"` // "eos", "limit"; on the last object
	StoppingWord    string       `json:"stopping_word"`
	Timings         *timingsJSON `json:"timings,omitempty"`
}

// infill serves POST /infill, llama-server's fill-in-the-middle route.
func (s *Server) infill(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req infillRequest
	if !s.read(w, r, &req) {
		return
	}
	g, e := s.infillGenerate(&req)
	if e != nil {
		writeError(w, e)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	j, e := s.launch(ctx, []*messages.GenerateRequest{g}, start)
	if e != nil {
		writeError(w, e)
		return
	}
	indent := indentStop{min: deref(req.NIndent)}
	var out *pipeline.SSE
	if req.Stream {
		out = pipeline.NewSSE(w)
	}
	resp := infillResponse{Model: s.cfg.ModelName, Tokens: []int32{}}
	failed := j.drain(func(_ int, c *messages.OutputChunk) {
		if c.FinishReason == messages.FinishError {
			if out != nil {
				out.Event("", openai.ErrorEvent(c.Err))
			}
			return
		}
		text, cut := indent.add(c.Text, c.FinishReason != "")
		resp.Content += text
		resp.TokensPredicted += len(c.Tokens)
		resp.HasNewLine = resp.HasNewLine || strings.Contains(text, "\n")
		switch {
		case cut:
			resp.StopType = "limit"
			cancel()
		case c.FinishReason == messages.FinishLength:
			resp.StopType = "limit"
		case c.FinishReason != "" && resp.StopType == "":
			resp.StopType = "eos"
		}
		if out != nil && text != "" {
			out.Event("", infillResponse{Content: text, Tokens: []int32{}, Model: s.cfg.ModelName, TokensPredicted: resp.TokensPredicted})
		}
	})
	if failed != nil && out == nil {
		writeError(w, failed)
		return
	}
	resp.Stop, resp.TokensEvaluated, resp.TokensCached = true, j.usage.PromptTokens, j.usage.CachedTokens
	resp.Timings = j.timings()
	final := selectFields(resp, req.ResponseFields)
	if out != nil {
		out.Event("", final)
		return
	}
	writeJSON(w, http.StatusOK, final)
}

// infillGenerate checks an /infill request and makes its generation.
func (s *Server) infillGenerate(req *infillRequest) (*messages.GenerateRequest, *apiError) {
	switch {
	case req.InputPrefix == nil:
		return nil, badRequest("input_prefix", "\"input_prefix\" is required")
	case req.InputSuffix == nil:
		return nil, badRequest("input_suffix", "\"input_suffix\" is required")
	case req.NIndent != nil && *req.NIndent < 0:
		return nil, badRequest("n_indent", "n_indent %d is negative", *req.NIndent)
	case req.N != nil && *req.N != 1:
		return nil, badRequest("n", "/infill makes one completion; n must be 1")
	}
	prompt, e := s.infillPrompt("input_prefix", infillInput{prefix: *req.InputPrefix, suffix: *req.InputSuffix,
		extra: req.InputExtra, prompt: req.Prompt})
	if e != nil {
		return nil, e
	}
	g := &messages.GenerateRequest{Prompt: prompt}
	if e := req.toRequest(g, -1); e != nil {
		return nil, e
	}
	if e := applySamplers(req.Samplers, &g.Sampling); e != nil {
		return nil, e
	}
	if g.MaxTokens, e = maxTokens(req.MaxTokens, "n_predict", "input_prefix", 0, len(prompt), s.rt.MaxModelLen()); e != nil {
		return nil, e
	}
	if err := s.rt.Check(g); err != nil {
		return nil, userError(err)
	}
	return g, nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// selectFields is llama-server's response_fields: only the named fields,
// each under its path ("timings/prompt_n" for a nested one). None: all.
func selectFields(v any, paths []string) any {
	if len(paths) == 0 {
		return v
	}
	b, _ := json.Marshal(v)
	var all map[string]any
	_ = json.Unmarshal(b, &all)
	out := map[string]any{}
	for _, p := range paths {
		var cur any = all
		for _, k := range strings.Split(p, "/") {
			m, ok := cur.(map[string]any)
			if !ok {
				cur = nil
				break
			}
			cur = m[k]
		}
		if cur != nil {
			out[p] = cur
		}
	}
	return out
}
