package server

import (
	"context"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/pipeline"
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
	prompts, texts, e := s.completionPrompts(ps, req.Suffix)
	if e != nil {
		return nil, e
	}
	lp := -1
	if req.WantLogprobs {
		lp = req.Logprobs
	}
	f := s.pipelineSampling(&req.Sampling)
	maxParam := dialectName(req, "max_tokens")
	var reqs []*messages.GenerateRequest
	total := 0
	for _, p := range prompts {
		g := &messages.GenerateRequest{Prompt: p}
		if e := f.toRequest(g, lp); e != nil {
			return nil, e
		}
		if len(reqs) == 0 {
			if g.Grammar == nil && req.Constraint != nil {
				if g.Grammar, e = pipelineGrammar(req.Constraint); e != nil {
					return nil, e
				}
				f.grammarParam = req.Constraint.Param
			}
			if e := s.checkGrammar(ctx, g.Grammar, f.grammarParam); e != nil {
				return nil, e
			}
		} else {
			g.Grammar = reqs[0].Grammar
		}
		if g.MaxTokens, e = maxTokens(f.MaxTokens, maxParam, "prompt", f.defaultMax(req.DefaultMaxTokens), len(p), s.rt.MaxModelLen()); e != nil {
			return nil, e
		}
		if err := s.rt.Check(g); err != nil {
			return nil, userError(err)
		}
		reqs = append(reqs, g)
		total += len(p)
		if len(reqs)*g.N > actors.MaxN {
			return nil, badRequest("n", "%d prompts times n %d is more than %d choices", len(prompts), g.N, actors.MaxN)
		}
	}
	j, e := s.launch(ctx, reqs, start)
	if e != nil {
		return nil, e
	}
	j.grammarParam = f.grammarParam
	run := &pipelineRun{s: s, j: j, prompt: total, names: req.Names, logprobs: req.WantLogprobs}
	if req.Echo {
		run.echo = texts
	}
	return run, nil
}

// completionPrompts tokenizes prompts: each text with BOS added as the
// vocabulary asks and special tokens parsed, or token ids as given; it
// returns them with their texts.
//
// With a suffix, each text prompt is the prefix of a fill-in-the-middle
// prompt whose suffix it is, as llama-server's /infill builds one.
func (s *Server) completionPrompts(ps []pipeline.Prompt, suffix *string) ([][]int32, []string, *apiError) {
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
		ids, err := s.tokenizeText(p.Text, true)
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
