package server

import (
	"context"
	"crypto/subtle"
	"slices"
	"time"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/pipeline"
	"github.com/troupe-llm/troupe/server/toolcall"
)

// Server implements pipeline.Runner: the dialect packages
// (server/anthropic, server/responses) call it.
var _ pipeline.Runner = (*Server)(nil)

// Model is the served model's name.
func (s *Server) Model() string { return s.cfg.ModelName }

// Serves reports whether name is the served model's name or an alias.
func (s *Server) Serves(name string) bool {
	return name == s.cfg.ModelName || slices.Contains(s.cfg.ModelAliases, name)
}

// Models are the served model's names, its name first.
func (s *Server) Models() []string { return append([]string{s.cfg.ModelName}, s.cfg.ModelAliases...) }

// Authorized reports whether key is the API key, or none is set.
func (s *Server) Authorized(key string) bool {
	return s.cfg.APIKey == "" || subtle.ConstantTimeCompare([]byte(key), []byte(s.cfg.APIKey)) == 1
}

// MaxBodyBytes bounds a request body (Config.MaxBodyBytes).
func (s *Server) MaxBodyBytes() int64 { return s.cfg.MaxBodyBytes }

// Admissible is nil when a request would be admitted now, else the error
// it would get (loading, draining, a full queue).
func (s *Server) Admissible() *pipeline.Error {
	if e := s.admit(); e != nil {
		return toPipelineError(e, nil)
	}
	s.release()
	return nil
}

// Fingerprint is every response's system_fingerprint: the build and the
// model.
func (s *Server) Fingerprint() string { return s.fingerprint }

// Thinks reports whether the chat template reasons apart from its answer.
func (s *Server) Thinks() bool { return s.thinks }

// CountTokens renders and tokenizes req's prompt, as Start would.
func (s *Server) CountTokens(req *pipeline.Request) (int, *pipeline.Error) {
	if _, e := pipelineTools(req); e != nil {
		return 0, toPipelineError(e, req.Names)
	}
	ids, _, e := s.pipelineRender(req)
	if e != nil {
		return 0, toPipelineError(e, req.Names)
	}
	return len(ids), nil
}

// Start admits req and launches it: the one prologue of every generation
// route (render, sampling fields, grammar, tools, reasoning, max tokens,
// the runtime's check).
func (s *Server) Start(ctx context.Context, req *pipeline.Request) (pipeline.Run, *pipeline.Error) {
	start := time.Now()
	if e := s.admit(); e != nil {
		return nil, toPipelineError(e, req.Names)
	}
	run, e := s.prepare(ctx, req, start)
	if e != nil {
		s.release()
		return nil, toPipelineError(e, req.Names)
	}
	return run, nil
}

// prepare is Start once admitted.
func (s *Server) prepare(ctx context.Context, req *pipeline.Request, start time.Time) (*pipelineRun, *apiError) {
	if req.Messages == nil {
		if len(req.Images) > 0 {
			return nil, badRequest(req.Images[0].Field, "%s: images need a conversation (messages)", req.Images[0].Field)
		}
		return s.preparePrompts(ctx, req, start)
	}
	tools, e := pipelineTools(req)
	if e != nil {
		return nil, e
	}
	prompt, text, e := s.pipelineRender(req)
	if e != nil {
		return nil, e
	}
	var images []messages.ImageInput
	if len(req.Images) > 0 { // images.go
		if prompt, images, e = s.imagePrompt(ctx, req, text); e != nil {
			return nil, e
		}
	}
	g := &messages.GenerateRequest{Prompt: s.withContext(req, prompt), Images: images}
	for i := range images { // behind Ollama's context
		images[i].Pos += len(g.Prompt) - len(prompt)
	}
	lp := -1
	if req.WantLogprobs {
		lp = req.Logprobs
	}
	f, e := s.requestSampling(req, g, lp)
	if e != nil {
		return nil, e
	}
	if e := s.reasoningBudget(req, g); e != nil {
		return nil, e
	}
	gen := &generation{g: g, text: text, tools: tools, chat: true, maxTokens: f.MaxTokens, defaultMax: f.defaultMax(req.DefaultMaxTokens),
		maxParam: dialectName(req, "max_tokens"), promptParam: "messages", grammarParam: f.grammarParam, ctxLen: req.ContextLimit}
	if req.Constraint != nil {
		if g.Grammar != nil {
			return nil, badRequest(req.Constraint.Param, "%s and %s both constrain the output; set one of them", f.grammarParam, req.Constraint.Param)
		}
		if g.Grammar, e = pipelineGrammar(req.Constraint); e != nil {
			return nil, e
		}
		gen.grammarParam = req.Constraint.Param
	}
	j, parser, e := s.startGeneration(ctx, gen, start)
	if e != nil {
		return nil, e
	}
	j.grammarParam = gen.grammarParam
	if tools.forced() {
		j.grammarParam = "tools"
	}
	run := &pipelineRun{s: s, j: j, prompt: len(g.Prompt), parser: parser, parallel: tools.parallel, names: req.Names,
		logprobs: req.WantLogprobs}
	if req.WantPromptIDs {
		run.promptIDs = g.Prompt
	}
	return run, nil
}

// dialectName is the dialect's name of the pipeline's param (Request.Names).
func dialectName(req *pipeline.Request, param string) string {
	if n, ok := req.Names[param]; ok {
		return n
	}
	return param
}

// pipelineRun is a pipeline.Run: a job and the parser of its output.
type pipelineRun struct {
	s         *Server
	j         *job
	prompt    int
	parser    *toolcall.Parser // nil: the output is all text
	parallel  bool
	logprobs  bool     // the Chunk events carry Logprobs
	echo      []string // (prompts) the prompts' texts, sent first as Echo events
	promptIDs []int32  // the Usage event's Prompt
	names     map[string]string
}

func (r *pipelineRun) PromptTokens() int { return r.prompt }

// Each reads the job to its end, turning each choice's chunks into events
// through its own toolcall.Stream, then reports the usage, and releases
// the request's admission.
func (r *pipelineRun) Each(fn func(*pipeline.Event)) *pipeline.Error {
	defer r.s.release()
	for i := range len(r.echo) * r.j.n {
		fn(&pipeline.Event{Kind: pipeline.Echo, Choice: i, Text: r.echo[i/r.j.n]})
	}
	var streams []*toolcall.Stream
	failed := r.j.drain(func(i int, c *messages.OutputChunk) {
		switch c.FinishReason {
		case messages.FinishError:
			fn(&pipeline.Event{Kind: pipeline.Failed, Choice: i, Err: toPipelineError(r.j.failed, r.names), Text: c.Err})
			return
		case messages.FinishCancelled: // the client is gone
			return
		}
		if r.parser == nil {
			if c.Text != "" || len(c.Tokens) > 0 {
				fn(&pipeline.Event{Kind: pipeline.TextDelta, Choice: i, Text: c.Text, Tokens: c.Tokens})
			}
		} else {
			for len(streams) <= i {
				streams = append(streams, r.parser.NewStream())
			}
			ds := streams[i].Write(c.Text)
			if c.FinishReason != "" {
				ds = append(ds, streams[i].Close()...)
			}
			r.events(i, ds, fn)
		}
		chunk := &pipeline.Event{Kind: pipeline.Chunk, Choice: i, Tokens: c.Tokens}
		if r.logprobs {
			chunk.Logprobs = r.s.tokenLogprobs(c.Tokens)
		}
		fn(chunk)
		if c.FinishReason != "" {
			reason := pipeline.FinishReason(c.FinishReason)
			if r.parser != nil {
				reason = pipeline.FinishReason(toolFinish(c.FinishReason, streams[i].Finished()))
			}
			fn(&pipeline.Event{Kind: pipeline.Finish, Choice: i, Finish: reason, Stop: c.StopString, Parsed: r.parser != nil})
		}
	})
	if failed != nil {
		return toPipelineError(failed, r.names)
	}
	fn(&pipeline.Event{Kind: pipeline.Usage, Usage: r.j.usage, Timings: r.j.timings(), Prompt: r.promptIDs})
	return nil
}

// tokenLogprobs are toks with their texts, as a Chunk event carries them.
func (s *Server) tokenLogprobs(toks []messages.Token) []pipeline.TokenLogprob {
	out := make([]pipeline.TokenLogprob, len(toks))
	for i, t := range toks {
		out[i] = pipeline.TokenLogprob{Bytes: s.rt.TokenBytes(t.ID), Logprob: t.Logprob, Top: make([]pipeline.TokenLogprob, len(t.Top))}
		out[i].Text = string(out[i].Bytes)
		for k, a := range t.Top {
			b := s.rt.TokenBytes(a.ID)
			out[i].Top[k] = pipeline.TokenLogprob{Text: string(b), Bytes: b, Logprob: a.Logprob}
		}
	}
	return out
}

// events passes a stream's deltas on as events; without parallel calls,
// calls after the first are dropped.
func (r *pipelineRun) events(i int, ds []toolcall.Delta, fn func(*pipeline.Event)) {
	for _, d := range ds {
		switch {
		case d.Call != nil:
			if !r.parallel && d.Call.Index > 0 {
				continue
			}
			cd := &pipeline.CallDelta{Index: d.Call.Index, ID: d.Call.ID, Name: d.Call.Name, Arguments: d.Call.Arguments}
			kind := pipeline.CallArgs
			if d.Call.Name != "" {
				kind = pipeline.CallStart
			}
			fn(&pipeline.Event{Kind: kind, Choice: i, Call: cd})
		case d.Reasoning != "":
			fn(&pipeline.Event{Kind: pipeline.ReasoningDelta, Choice: i, Text: d.Reasoning})
		case d.Content != "":
			fn(&pipeline.Event{Kind: pipeline.TextDelta, Choice: i, Text: d.Content})
		}
	}
}
