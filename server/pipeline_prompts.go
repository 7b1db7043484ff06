package server

import (
	"context"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/pipeline"
	"github.com/troupe-llm/troupe/server/toolcall"
)

// preparePrompts is Start for a request of prompts (Prompt or Prompts):
// each prompt tokenized (or, with a suffix, made a fill-in-the-middle
// prompt) and made a runtime request with the same sampling fields,
// checked by the runtime, and all launched as one job.
func (s *Server) preparePrompts(ctx context.Context, req *pipeline.Request, start time.Time) (*pipelineRun, *apiError) {
	if len(req.Tools) > 0 {
		return nil, badRequest("tools", "tools need messages, not a prompt")
	}
	ps := req.Prompts
	if req.Prompt != nil {
		if len(ps) > 0 {
			return nil, badRequest("prompt", "give Prompt or Prompts, not both")
		}
		ps = []pipeline.Prompt{*req.Prompt}
	}
	if len(req.Context) > 0 && (len(ps) != 1 || ps[0].IDs != nil || req.Suffix != nil) {
		return nil, badRequest("context", "context continues one text prompt")
	}
	prompts, texts, e := s.completionPrompts(ps, req.Suffix, len(req.Context) == 0)
	if e != nil {
		return nil, e
	}
	if len(req.Context) > 0 {
		prompts[0] = append(append([]int32(nil), req.Context...), prompts[0]...)
	}
	var reqs []*messages.GenerateRequest
	grammarParam, total := "", 0
	for _, p := range prompts {
		g, param, e := s.promptRequest(ctx, req, p, reqs)
		if e != nil {
			return nil, e
		}
		if len(reqs) == 0 {
			grammarParam = param
		}
		reqs = append(reqs, g)
		total += len(p)
		if len(reqs)*g.N > actors.MaxN {
			return nil, badRequest("n", "%d prompts times n %d is more than %d choices", len(prompts), g.N, actors.MaxN)
		}
	}
	var parser *toolcall.Parser
	if req.ParseReasoning && len(reqs) == 1 {
		parser = s.reasoningParser(reqs[0], texts[0])
	}
	j, e := s.launch(ctx, reqs, start)
	if e != nil {
		return nil, e
	}
	j.grammarParam = grammarParam
	run := &pipelineRun{s: s, j: j, prompt: total, names: req.Names, logprobs: req.WantLogprobs, parser: parser, parallel: true}
	if req.WantPromptIDs {
		run.promptIDs = reqs[0].Prompt
	}
	if req.Echo {
		run.echo = texts
	}
	return run, nil
}

// promptRequest is the runtime request of one of req's prompts, checked;
// the grammar is compiled with the first (before: those made already),
// and the others share it. It returns the field the grammar came from.
func (s *Server) promptRequest(ctx context.Context, req *pipeline.Request, p []int32, before []*messages.GenerateRequest) (*messages.GenerateRequest, string, *apiError) {
	lp := -1
	if req.WantLogprobs {
		lp = req.Logprobs
	}
	g := &messages.GenerateRequest{Prompt: p}
	f, e := s.requestSampling(req, g, lp)
	if e != nil {
		return nil, "", e
	}
	if g.ReasoningBudget != nil || req.Reasoning.BudgetTokens != nil {
		name := dialectName(req, "reasoning_budget_tokens")
		return nil, "", badRequest(name, "%s: a reasoning budget needs a chat request (messages), whose template opens the reasoning section", name)
	}
	if len(before) > 0 {
		g.Grammar = before[0].Grammar
	} else {
		if g.Grammar == nil && req.Constraint != nil {
			if g.Grammar, e = pipelineGrammar(req.Constraint); e != nil {
				return nil, "", e
			}
			f.grammarParam = req.Constraint.Param
		}
		if e := s.checkGrammar(ctx, g.Grammar, f.grammarParam); e != nil {
			return nil, "", e
		}
	}
	ctxLen := s.rt.MaxModelLen()
	if req.ContextLimit > 0 {
		ctxLen = req.ContextLimit
	}
	if g.MaxTokens, e = maxTokens(f.MaxTokens, dialectName(req, "max_tokens"), "prompt", f.defaultMax(req.DefaultMaxTokens), len(p), ctxLen); e != nil {
		return nil, "", e
	}
	if err := s.rt.Check(g); err != nil {
		return nil, "", userError(err)
	}
	return g, f.grammarParam, nil
}

// completionPrompts tokenizes prompts: each text with BOS added as the
// vocabulary asks and special tokens parsed, or token ids as given; it
// returns them with their texts.
//
// With a suffix, each text prompt is the prefix of a fill-in-the-middle
// prompt whose suffix it is, as llama-server's /infill builds one.
func (s *Server) completionPrompts(ps []pipeline.Prompt, suffix *string, bos bool) ([][]int32, []string, *apiError) {
	if len(ps) == 0 {
		return nil, nil, badRequest("prompt", "prompt is required")
	}
	if suffix != nil {
		return s.suffixPrompts(ps, *suffix)
	}
	if len(ps) > maxPromptsPerReq {
		return nil, nil, badRequest("prompt", "at most %d prompts per request", maxPromptsPerReq)
	}
	out := make([][]int32, len(ps))
	texts := make([]string, len(ps))
	for i, p := range ps {
		if p.IDs != nil {
			text, err := s.rt.Detokenize(p.IDs)
			if err != nil {
				return nil, nil, badRequest("prompt", "%v", userError(err).Message)
			}
			out[i], texts[i] = p.IDs, text
			continue
		}
		ids, err := s.tokenizeText(p.Text, bos)
		if err != nil {
			return nil, nil, tokenizeError("prompt", "tokenizing the prompt", err)
		}
		if len(ids) == 0 {
			return nil, nil, badRequest("prompt", "the prompt is empty")
		}
		out[i], texts[i] = ids, p.Text
	}
	return out, texts, nil
}
