package ollama

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// metrics are the counters and durations (nanoseconds) of the final
// object.
type metrics struct {
	TotalDuration      int64 `json:"total_duration"`
	LoadDuration       int64 `json:"load_duration"`
	PromptEvalCount    int   `json:"prompt_eval_count"`
	PromptEvalDuration int64 `json:"prompt_eval_duration"`
	EvalCount          int   `json:"eval_count"`
	EvalDuration       int64 `json:"eval_duration"`
}

// final is the last object: the response, done, and the metrics.
type final struct {
	response
	metrics
}

// part is a piece of a streamed answer: content, thinking, or calls.
type part struct {
	content, thinking string
	calls             []toolCall
}

// answerer answers one request from its Run's events: a stream of NDJSON
// lines (the default), or one object with stream false. The final object
// carries done_reason, the counters and the durations; a failure
// mid-stream is a {"error": "..."} line, as Ollama's. A stream sends each
// call whole, in an object of its own.
type answerer struct {
	req               *request
	chat, logprobs    bool
	out               *ndjson // nil: not streaming
	parts             []part  // the current runtime chunk's
	open              *toolCall
	ncalls            int
	content, thinking strings.Builder // the whole answer, when not streaming
	calls             []toolCall
	parsed            bool
	lp                []pipeline.TokenLogprobJSON
	generated, prompt []int32
	first, last       time.Time
	finish            string
	usage             pipeline.Event
}

// answer reads run to its end and answers.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, req *request, run pipeline.Run, start time.Time, chat bool) {
	launched := time.Now()
	a := &answerer{req: req, chat: chat, logprobs: req.Logprobs}
	if req.Stream == nil || *req.Stream {
		a.out = newNDJSON(w)
	}
	failed := run.Each(a.add)
	if r.Context().Err() != nil {
		return // the client is gone
	}
	if failed != nil {
		if a.out == nil {
			WriteError(w, failed)
		}
		return
	}
	end := time.Now()
	f := &final{response: a.object(part{})}
	if a.out == nil {
		f.response = a.object(a.whole())
		f.Logprobs = a.lp
	}
	f.Done, f.DoneReason = true, a.finish
	if !chat && !req.Raw {
		f.Context = append(append([]int32{}, a.usage.Prompt...), a.generated...)
	}
	m := &f.metrics
	queue := time.Duration(0)
	if t := a.usage.Timings; t != nil {
		queue = time.Duration(t.QueueMs * float64(time.Millisecond))
	}
	m.TotalDuration = end.Sub(start).Nanoseconds()
	m.LoadDuration = (launched.Sub(start) + queue).Nanoseconds()
	m.PromptEvalCount, m.EvalCount = a.usage.Usage.PromptTokens, a.usage.Usage.CompletionTokens
	prefilled := end // no token: the prompt took until the end
	if !a.first.IsZero() {
		prefilled = a.first
		m.EvalDuration = a.last.Sub(a.first).Nanoseconds()
	}
	m.PromptEvalDuration = max(prefilled.Sub(launched)-queue, 0).Nanoseconds()
	if a.out != nil {
		a.out.send(f)
		return
	}
	pipeline.WriteJSON(w, http.StatusOK, f)
}

// object is an answer object holding p.
func (a *answerer) object(p part) response {
	o := response{Model: a.req.Model, CreatedAt: time.Now().UTC()}
	if a.chat {
		o.Message = &reply{Role: "assistant", Content: p.content, Thinking: p.thinking, ToolCalls: p.calls}
	} else {
		o.Response, o.Thinking = &p.content, p.thinking
	}
	return o
}

// add takes one event.
func (a *answerer) add(ev *pipeline.Event) {
	switch ev.Kind {
	case pipeline.Failed:
		if a.out != nil {
			a.out.send(map[string]string{"error": ev.Text})
		}
	case pipeline.TextDelta:
		a.content.WriteString(ev.Text)
		a.addPart(part{content: ev.Text})
	case pipeline.ReasoningDelta:
		a.thinking.WriteString(ev.Text)
		a.addPart(part{thinking: ev.Text})
	case pipeline.CallStart:
		a.open = &toolCall{ID: ev.Call.ID}
		a.open.Function.Name = ev.Call.Name
	case pipeline.CallArgs:
		if a.open != nil {
			c := *a.open
			a.open = nil
			c.Function.Index = a.ncalls
			a.ncalls++
			c.Function.Arguments = jsonArguments(ev.Call.Arguments)
			a.calls = append(a.calls, c)
			a.addPart(part{calls: []toolCall{c}})
		}
	case pipeline.Chunk:
		a.chunk(ev)
	case pipeline.Finish:
		a.finish, a.parsed = string(ev.Finish), ev.Parsed
		if ev.Finish == pipeline.FinishToolCall { // Ollama's done_reason is the model's: it stopped
			a.finish = string(pipeline.FinishStop)
		}
	case pipeline.Usage:
		a.usage = *ev
	}
}

// addPart adds p to the chunk's parts: a run of content or of thinking is
// one part; calls that come together are one part.
func (a *answerer) addPart(p part) {
	if a.out == nil || p.content == "" && p.thinking == "" && p.calls == nil {
		return
	}
	if n := len(a.parts); n > 0 {
		last := &a.parts[n-1]
		switch {
		case p.calls != nil && last.calls != nil:
			last.calls = append(last.calls, p.calls...)
			return
		case p.thinking != "" && last.calls == nil && last.content == "":
			last.thinking += p.thinking
			return
		case p.content != "" && last.calls == nil && last.thinking == "":
			last.content += p.content
			return
		}
	}
	a.parts = append(a.parts, p)
}

// chunk closes a runtime chunk: its tokens counted and timed, its parts
// sent (its logprobs on the last).
func (a *answerer) chunk(ev *pipeline.Event) {
	if len(ev.Tokens) > 0 {
		now := time.Now()
		if a.first.IsZero() {
			a.first = now
		}
		a.last = now
	}
	for _, t := range ev.Tokens {
		a.generated = append(a.generated, t.ID)
	}
	if a.out == nil {
		if a.logprobs {
			a.lp = pipeline.AppendLogprobs(a.lp, ev.Logprobs)
		}
		return
	}
	ps := a.parts
	a.parts = nil
	if len(ps) == 0 && a.logprobs && len(ev.Tokens) > 0 {
		ps = []part{{}} // the logprobs of text held back
	}
	for i, p := range ps {
		o := a.object(p)
		if i == len(ps)-1 && a.logprobs {
			o.Logprobs = pipeline.AppendLogprobs(nil, ev.Logprobs)
		}
		a.out.send(&o)
	}
}

// whole is the answer as one part: a parsed output's content and
// thinking trimmed, as the parser trims a whole answer.
func (a *answerer) whole() part {
	p := part{content: a.content.String(), thinking: a.thinking.String(), calls: a.calls}
	if a.parsed {
		p.content, p.thinking = strings.TrimSpace(p.content), strings.TrimSpace(p.thinking)
	}
	return p
}

// jsonArguments is a call's arguments as a JSON object; the parsers write
// JSON, and text that is not is sent as a string to keep the answer valid.
func jsonArguments(args string) json.RawMessage {
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(args)
	return b
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
// later lines are dropped; the caller keeps reading its Run, which the
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
