package server

import (
	"net/http"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
)

type completionRequest struct {
	samplingFields
	Prompt   promptField `json:"prompt"`
	Logprobs *int        `json:"logprobs"`
	Echo     bool        `json:"echo"`
	// Suffix is the text after the completion (OpenAI's legacy insert): the
	// prompt becomes a fill-in-the-middle prompt (infill.go).
	Suffix *string `json:"suffix"`
}

type usageJSON struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	// Preemptions (troupe's extension) is the times the request's choices
	// lost their KV blocks to other sequences and waited to be resumed.
	Preemptions int `json:"preemptions,omitempty"`
}

func toUsage(u messages.Usage) *usageJSON {
	j := &usageJSON{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens,
		Preemptions: u.Preemptions}
	j.PromptTokensDetails.CachedTokens = u.CachedTokens
	return j
}

type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

// responseHead is what every completion object and chunk starts with.
type responseHead struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	// SystemFingerprint names the build and model that made the response.
	SystemFingerprint string `json:"system_fingerprint"`
	// Timings (llama-server's, asked for by timings_per_token) is on the
	// response, or on the stream's last chunk.
	Timings *timingsJSON `json:"timings,omitempty"`
}

type completionResponse struct {
	responseHead
	Choices []completionChoice `json:"choices"`
	Usage   *usageJSON         `json:"usage,omitempty"`
}

// completions serves POST /v1/completions.
func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req completionRequest
	if !s.read(w, r, &req) {
		return
	}
	lp := -1
	if req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > 20 {
			writeError(w, badRequest("logprobs", "logprobs %d is outside [0, 20]", *req.Logprobs))
			return
		}
		if req.Echo {
			writeError(w, badRequest("echo", "echo with logprobs is not supported: troupe does not score prompt tokens"))
			return
		}
		lp = *req.Logprobs
	}
	prompts, texts, e := s.completionPrompts(&req.Prompt, req.Suffix)
	if e != nil {
		writeError(w, e)
		return
	}
	var reqs []*messages.GenerateRequest
	for _, p := range prompts {
		g := &messages.GenerateRequest{Prompt: p}
		if e := req.toRequest(g, lp); e != nil {
			writeError(w, e)
			return
		}
		if len(reqs) == 0 {
			if e := s.checkGrammar(r.Context(), g.Grammar, req.grammarParam); e != nil {
				writeError(w, e)
				return
			}
		}
		if g.MaxTokens, e = maxTokens(req.MaxTokens, "max_tokens", "prompt", req.defaultMax(16), len(p), s.rt.MaxModelLen()); e != nil {
			writeError(w, e)
			return
		}
		if err := s.rt.Check(g); err != nil {
			writeError(w, userError(err))
			return
		}
		reqs = append(reqs, g)
		if len(reqs)*g.N > actors.MaxN {
			writeError(w, badRequest("n", "%d prompts times n %d is more than %d choices", len(prompts), g.N, actors.MaxN))
			return
		}
	}
	j, e := s.launch(r.Context(), reqs, start)
	if e != nil {
		writeError(w, e)
		return
	}
	j.grammarParam = req.grammarParam
	resp := &completionResponse{responseHead: s.head("cmpl-", start)}
	resp.Object = "text_completion"
	choices := make([]completionChoice, len(reqs)*j.n)
	for i := range choices {
		choices[i].Index = i
		if req.Echo {
			choices[i].Text = texts[i/j.n]
		}
		if lp >= 0 {
			choices[i].Logprobs = &completionLogprobs{}
		}
	}
	if req.Stream {
		s.streamCompletions(w, j, resp, choices, req.Echo, req.StreamOptions, req.TimingsPerToken)
		return
	}
	failed := j.drain(func(i int, c *messages.OutputChunk) {
		ch := &choices[i]
		if ch.Logprobs != nil {
			s.addCompletion(ch.Logprobs, c.Tokens, len(ch.Text))
		}
		ch.Text += c.Text
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
		return // the client is gone
	}
	resp.Choices, resp.Usage = choices, toUsage(j.usage)
	if req.TimingsPerToken {
		resp.Timings = j.timings()
	}
	writeJSON(w, http.StatusOK, resp)
}

// completionPrompts tokenizes the prompt field: each text with BOS added as
// the vocabulary asks and special tokens parsed, or token ids as given.
//
// With a suffix, each text prompt is the prefix of a fill-in-the-middle
// prompt whose suffix it is, as llama-server's /infill builds one.
func (s *Server) completionPrompts(p *promptField, suffix *string) ([][]int32, []string, *apiError) {
	if len(p.texts)+len(p.ids) == 0 {
		return nil, nil, badRequest("prompt", "prompt is required")
	}
	if suffix != nil {
		return s.suffixPrompts(p, *suffix)
	}
	if len(p.texts)+len(p.ids) > maxPromptsPerReq {
		return nil, nil, badRequest("prompt", "at most %d prompts per request", maxPromptsPerReq)
	}
	var out [][]int32
	texts := p.texts
	for _, t := range p.texts {
		ids, err := s.tokenizeText(t, true)
		if err != nil {
			return nil, nil, tokenizeError("prompt", "tokenizing the prompt", err)
		}
		if len(ids) == 0 {
			return nil, nil, badRequest("prompt", "the prompt is empty")
		}
		out = append(out, ids)
	}
	for _, ids := range p.ids {
		text, err := s.rt.Detokenize(ids)
		if err != nil {
			return nil, nil, badRequest("prompt", "%v", userError(err).Message)
		}
		texts = append(texts, text)
		out = append(out, ids)
	}
	return out, texts, nil
}

func (s *Server) streamCompletions(w http.ResponseWriter, j *job, resp *completionResponse, choices []completionChoice, echo bool, so *streamOptions, timings bool) {
	out := newSSE(w)
	chunk := func(c completionChoice) *completionResponse {
		r := *resp
		r.Choices = []completionChoice{c}
		return &r
	}
	if echo {
		for _, c := range choices {
			out.send(chunk(completionChoice{Index: c.Index, Text: c.Text}))
		}
	}
	offsets := make([]int, len(choices))
	j.drain(func(i int, c *messages.OutputChunk) {
		if c.FinishReason == messages.FinishError {
			out.send(errorEvent(c.Err))
			return
		}
		ch := completionChoice{Index: i, Text: c.Text}
		if choices[i].Logprobs != nil {
			ch.Logprobs = &completionLogprobs{}
			offsets[i] = s.addCompletion(ch.Logprobs, c.Tokens, offsets[i])
		}
		if ch.Text != "" || ch.Logprobs != nil {
			out.send(chunk(ch))
		}
		if c.FinishReason != "" { // OpenAI's order: the last token, then finish_reason in a chunk of its own
			f := c.FinishReason
			out.send(chunk(completionChoice{Index: i, FinishReason: &f}))
		}
	})
	r := *resp
	r.Choices = []completionChoice{}
	out.end(finalChunk(&r, &r.responseHead, &r.Usage, j, so, timings))
}
