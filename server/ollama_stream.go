package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/openai"
	"github.com/troupe-llm/troupe/server/toolcall"
)

// ollamaRun launches g and answers with Ollama's objects: a stream of
// NDJSON lines (the default), or one object with stream false. The final
// object carries done_reason, the counters and the durations; a failure
// mid-stream is a {"error": "..."} line, as Ollama's. With a parser the
// output is split into content, thinking and tool calls; a stream sends
// each call whole, in an object of its own.
func (s *Server) ollamaRun(w http.ResponseWriter, r *http.Request, req *ollamaRequest, g *messages.GenerateRequest, parser *toolcall.Parser, start time.Time, isChat bool) {
	launched := time.Now()
	j, e := s.launch(r.Context(), []*messages.GenerateRequest{g}, start)
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	j.grammarParam = "format"
	object := func(p ollamaPart) ollamaResponse {
		o := ollamaResponse{Model: req.Model, CreatedAt: time.Now().UTC()}
		if isChat {
			o.Message = &ollamaReply{Role: "assistant", Content: p.content, Thinking: p.thinking, ToolCalls: p.calls}
		} else {
			o.Response, o.Thinking = &p.content, p.thinking
		}
		return o
	}
	stream := req.Stream == nil || *req.Stream
	var (
		out         *ndjson
		parts       *toolcall.Stream
		ncalls      int
		text        bytes.Buffer // the whole answer, when not streaming
		lp          []openai.TokenLogprobJSON
		generated   []int32
		queue       time.Duration
		first, last time.Time
		finish      string
	)
	if stream {
		out = newNDJSON(w)
		if parser != nil {
			parts = parser.NewStream()
		}
	}
	failed := j.drain(func(_ int, c *messages.OutputChunk) {
		now := time.Now()
		if c.QueueNanos > 0 {
			queue = time.Duration(c.QueueNanos)
		}
		if len(c.Tokens) > 0 {
			if first.IsZero() {
				first = now
			}
			last = now
		}
		for _, t := range c.Tokens {
			generated = append(generated, t.ID)
		}
		switch c.FinishReason {
		case messages.FinishError:
			if out != nil {
				out.send(map[string]string{"error": c.Err})
			}
			return
		case messages.FinishCancelled: // the client is gone
			return
		case "":
		default:
			finish = c.FinishReason
		}
		if !stream {
			text.WriteString(c.Text)
			if g.Sampling.WantLogprob {
				lp = openai.AppendLogprobs(lp, s.tokenLogprobs(c.Tokens))
			}
			return
		}
		var ps []ollamaPart
		switch {
		case parts != nil:
			ds := parts.Write(c.Text)
			if c.FinishReason != "" {
				ds = append(ds, parts.Close()...)
			}
			ps = ollamaParts(ds, &ncalls)
		case c.Text != "":
			ps = []ollamaPart{{content: c.Text}}
		}
		if len(ps) == 0 && g.Sampling.WantLogprob && len(c.Tokens) > 0 {
			ps = []ollamaPart{{}} // the logprobs of text held back
		}
		for i, p := range ps {
			o := object(p)
			if i == len(ps)-1 && g.Sampling.WantLogprob {
				o.Logprobs = openai.AppendLogprobs(nil, s.tokenLogprobs(c.Tokens))
			}
			out.send(&o)
		}
	})
	if r.Context().Err() != nil {
		return // the client is gone
	}
	if failed != nil {
		if !stream {
			writeOllamaError(w, failed)
		}
		return
	}
	end := time.Now()
	f := &ollamaFinal{ollamaResponse: object(ollamaPart{})}
	if !stream {
		whole := ollamaPart{content: text.String()}
		if parser != nil {
			res := parser.Parse(whole.content)
			whole = ollamaPart{content: res.Content, thinking: res.Reasoning}
			if len(res.Calls) > 0 {
				whole.calls = ollamaCalls(res.Calls, 0)
			}
		}
		f.ollamaResponse = object(whole)
		f.Logprobs = lp
	}
	f.Done, f.DoneReason = true, finish
	if !isChat && !req.Raw {
		f.Context = append(append([]int32{}, g.Prompt...), generated...)
	}
	m := &f.ollamaMetrics
	m.TotalDuration = end.Sub(start).Nanoseconds()
	m.LoadDuration = (launched.Sub(start) + queue).Nanoseconds()
	m.PromptEvalCount, m.EvalCount = j.usage.PromptTokens, j.usage.CompletionTokens
	prefilled := end // no token: the prompt took until the end
	if !first.IsZero() {
		prefilled = first
		m.EvalDuration = last.Sub(first).Nanoseconds()
	}
	m.PromptEvalDuration = max(prefilled.Sub(launched)-queue, 0).Nanoseconds()
	if stream {
		out.send(f)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// ndjson writes one JSON object per line, flushed at once (Ollama's
// streams, application/x-ndjson).
type ndjson struct {
	w       http.ResponseWriter
	f       http.Flusher
	started bool
	gone    bool // a write failed: the client went away
}

func newNDJSON(w http.ResponseWriter) *ndjson {
	f, _ := w.(http.Flusher)
	return &ndjson{w: w, f: f}
}

// send writes v as one line. Once a write fails the client is gone and
// later lines are dropped; the caller keeps draining its job, which the
// runtime cancels through the request's context.
func (n *ndjson) send(v any) {
	if n.gone {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	if !n.started {
		n.started = true
		n.w.Header().Set("Content-Type", "application/x-ndjson")
		n.w.Header().Set("X-Accel-Buffering", "no")
		n.w.WriteHeader(http.StatusOK)
	}
	if _, err := n.w.Write(append(b, '\n')); err != nil {
		n.gone = true
		return
	}
	if n.f != nil {
		n.f.Flush()
	}
}

// writeOllamaError writes e in Ollama's shape, {"error": "message"}, with
// its status and Retry-After.
func writeOllamaError(w http.ResponseWriter, e *apiError) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(e.RetryAfter))
	}
	writeJSON(w, e.Status, map[string]string{"error": e.Message})
}
