package openai

import (
	"encoding/json"
	"net/http"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// completionRequest is the body of /v1/completions.
type completionRequest struct {
	Common
	Prompt   promptField `json:"prompt"`
	Logprobs *int        `json:"logprobs"`
	Echo     bool        `json:"echo"`
	// Suffix is the text after the completion (OpenAI's legacy insert): the
	// prompt becomes a fill-in-the-middle prompt.
	Suffix *string `json:"suffix"`
}

type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

type completionResponse struct {
	responseHead
	Choices []completionChoice `json:"choices"`
	Usage   *usageJSON         `json:"usage,omitempty"`
}

// toPipeline is the request in the pipeline's terms: its prompts, each
// with n choices, 16 tokens each unless it says otherwise.
func (req *completionRequest) toPipeline() (*pipeline.Request, *pipeline.Error) {
	p := &pipeline.Request{Prompts: req.Prompt, Suffix: req.Suffix, Echo: req.Echo, Sampling: req.Sampling, DefaultMaxTokens: 16}
	if req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > 20 {
			return nil, pipeline.Errorf("logprobs", "logprobs %d is outside [0, 20]", *req.Logprobs)
		}
		if req.Echo {
			return nil, pipeline.Errorf("echo", "echo with logprobs is not supported: troupe does not score prompt tokens")
		}
		p.WantLogprobs, p.Logprobs = true, *req.Logprobs
	}
	if len(p.Prompts) == 0 {
		return nil, pipeline.Errorf("prompt", "prompt is required")
	}
	return p, nil
}

// completions serves POST /v1/completions.
func (h *Handler) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	p, run, head, ok := h.start(w, r, &req, "cmpl-")
	if !ok {
		return
	}
	resp := &completionResponse{responseHead: head}
	resp.Object = "text_completion"
	n := req.choices()
	choices := make([]completionChoice, len(p.Prompts)*n)
	for i := range choices {
		choices[i].Index = i
		if p.WantLogprobs {
			choices[i].Logprobs = &completionLogprobs{}
		}
	}
	if req.Stream {
		streamCompletions(w, run, resp, choices, req.StreamOptions, req.TimingsPerToken)
		return
	}
	var u usage
	marks := make([]int, len(choices)) // each choice's text length at its last chunk
	failed := run.Each(func(ev *pipeline.Event) {
		u.add(ev)
		if ev.Choice >= len(choices) {
			return
		}
		ch := &choices[ev.Choice]
		switch ev.Kind {
		case pipeline.Echo, pipeline.TextDelta:
			ch.Text += ev.Text
		case pipeline.Chunk:
			if ch.Logprobs != nil {
				ch.Logprobs.add(ev.Logprobs, marks[ev.Choice])
			}
			marks[ev.Choice] = len(ch.Text)
		case pipeline.Finish:
			f := string(ev.Finish)
			ch.FinishReason = &f
		case pipeline.Failed:
			f := string(pipeline.FinishError)
			ch.FinishReason = &f
		}
	})
	if failed != nil {
		WriteError(w, failed)
		return
	}
	if r.Context().Err() != nil {
		return // the client is gone
	}
	resp.Choices, resp.Usage = choices, toUsage(u.counts)
	if req.TimingsPerToken {
		resp.Timings = u.timings
	}
	pipeline.WriteJSON(w, http.StatusOK, resp)
}

// streamCompletions streams each runtime chunk's text (and logprobs) as a
// chunk of its own, the echoed prompts first.
func streamCompletions(w http.ResponseWriter, run pipeline.Run, resp *completionResponse, choices []completionChoice, so *streamOptions, timings bool) {
	out := newSSE(w)
	chunk := func(c completionChoice) *completionResponse {
		r := *resp
		r.Choices = []completionChoice{c}
		return &r
	}
	offsets := make([]int, len(choices))
	pending := make([]string, len(choices))
	var u usage
	run.Each(func(ev *pipeline.Event) {
		u.add(ev)
		i := ev.Choice
		if i >= len(choices) {
			return
		}
		switch ev.Kind {
		case pipeline.Echo:
			out.send(chunk(completionChoice{Index: i, Text: ev.Text}))
		case pipeline.Failed:
			out.send(ErrorEvent(ev.Text))
		case pipeline.TextDelta:
			pending[i] += ev.Text
		case pipeline.Chunk:
			ch := completionChoice{Index: i, Text: pending[i]}
			pending[i] = ""
			if choices[i].Logprobs != nil {
				ch.Logprobs = &completionLogprobs{}
				offsets[i] = ch.Logprobs.add(ev.Logprobs, offsets[i])
			}
			if ch.Text != "" || ch.Logprobs != nil {
				out.send(chunk(ch))
			}
		case pipeline.Finish: // OpenAI's order: the last token, then finish_reason in a chunk of its own
			f := string(ev.Finish)
			out.send(chunk(completionChoice{Index: i, FinishReason: &f}))
		}
	})
	r := *resp
	r.Choices = []completionChoice{}
	out.end(finalChunk(&r, &r.responseHead, &r.Usage, &u, so, timings))
}

// completionLogprobs is the completions API's logprobs object.
type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// add appends a chunk's tokens; offset is the text length before them.
func (lp *completionLogprobs) add(toks []pipeline.TokenLogprob, offset int) int {
	for _, t := range toks {
		lp.Tokens = append(lp.Tokens, t.Text)
		lp.TokenLogprobs = append(lp.TokenLogprobs, pipeline.FiniteLogprob(t.Logprob))
		top := make(map[string]float64, len(t.Top))
		for _, a := range t.Top {
			top[a.Text] = pipeline.FiniteLogprob(a.Logprob)
		}
		lp.TopLogprobs = append(lp.TopLogprobs, top)
		lp.TextOffset = append(lp.TextOffset, offset)
		offset += len(t.Text)
	}
	return offset
}

// promptField is the completions prompt: a string, a list of strings, a
// list of token ids, or a list of such lists. Each entry is one prompt.
type promptField []pipeline.Prompt

func (p *promptField) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*p = promptField{{Text: one}}
		return nil
	}
	var texts []string
	if json.Unmarshal(b, &texts) == nil && len(texts) > 0 {
		for _, t := range texts {
			*p = append(*p, pipeline.Prompt{Text: t})
		}
		return nil
	}
	var ids []int32
	if json.Unmarshal(b, &ids) == nil && len(ids) > 0 {
		*p = promptField{{IDs: ids}}
		return nil
	}
	var lists [][]int32
	if json.Unmarshal(b, &lists) == nil && len(lists) > 0 {
		for _, l := range lists {
			if l == nil {
				l = []int32{}
			}
			*p = append(*p, pipeline.Prompt{IDs: l})
		}
		return nil
	}
	return &pipeline.FieldError{Field: "prompt", Msg: "expected a non-empty string, list of strings, list of token ids, or list of such lists"}
}
