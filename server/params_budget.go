package server

import (
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/pipeline"
	"github.com/troupe-llm/troupe/server/toolcall"
)

// budgetParams are llama-server's reasoning-budget and speculative-decoding
// fields, in the params table. The budget's markers are the chat
// template's, filled in by reasoningBudget once the route knows it renders
// one (chat); the prompt routes refuse a budget.
var budgetParams = []param{
	{"reasoning_budget_tokens", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		return setBudget(req, "reasoning_budget_tokens", f.ReasoningBudgetTokens)
	}},
	{"thinking_budget_tokens", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if f.ReasoningBudgetTokens != nil && f.ThinkingBudgetTokens != nil {
			return badRequest("thinking_budget_tokens", "thinking_budget_tokens is reasoning_budget_tokens' other name: set one of them")
		}
		return setBudget(req, "thinking_budget_tokens", f.ThinkingBudgetTokens)
	}},
	{"reasoning_budget_message", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if f.ReasoningBudgetMessage != nil && req.ReasoningBudget != nil {
			req.ReasoningBudget.Message = *f.ReasoningBudgetMessage
		}
		return nil
	}},
	{"speculative", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if f.Speculative == nil && f.SpecNMax == nil && f.SpecNMin == nil && f.SpecPMin == nil {
			return nil
		}
		sp := &messages.SpeculativeParams{Off: f.Speculative != nil && !*f.Speculative}
		if f.SpecNMax != nil {
			sp.NMax = *f.SpecNMax
		}
		if f.SpecNMin != nil {
			sp.NMin = *f.SpecNMin
		}
		if f.SpecPMin != nil {
			sp.PMin = float32(*f.SpecPMin)
		}
		req.Speculative = sp // the runtime checks the ranges, naming the field
		return nil
	}},
	// Read with "speculative" above.
	{"speculative.n_max", func(*samplingFields, *messages.GenerateRequest) *apiError { return nil }},
	{"speculative.n_min", func(*samplingFields, *messages.GenerateRequest) *apiError { return nil }},
	{"speculative.p_min", func(*samplingFields, *messages.GenerateRequest) *apiError { return nil }},
}

// setBudget sets req's reasoning budget to n tokens (-1: none).
func setBudget(req *messages.GenerateRequest, name string, n *int) *apiError {
	switch {
	case n == nil || *n == -1:
	case *n < -1:
		return badRequest(name, "%s %d: want -1 (no budget) or a number of tokens", name, *n)
	default:
		req.ReasoningBudget = &messages.ReasoningBudget{Tokens: *n}
	}
	return nil
}

// reasoningBudget completes g's reasoning budget (from the request's
// fields, or the dialect's Reasoning.BudgetTokens) with the markers of the
// chat template's reasoning section: a template that does not reason in
// such a section cannot honour a budget, a 400.
func (s *Server) reasoningBudget(req *pipeline.Request, g *messages.GenerateRequest) *apiError {
	if n := req.Reasoning.BudgetTokens; n != nil {
		g.ReasoningBudget = &messages.ReasoningBudget{Tokens: *n, Message: req.Reasoning.BudgetMessage}
	}
	if g.ReasoningBudget == nil {
		return nil
	}
	start, end, ok := toolcall.ReasoningMarkers(s.toolFormat)
	if !s.thinks || !ok {
		return badRequest(dialectName(req, "reasoning_budget_tokens"), "%s: this model's chat template has no reasoning section to bound", dialectName(req, "reasoning_budget_tokens"))
	}
	g.ReasoningBudget.Start, g.ReasoningBudget.End = start, end
	return nil
}
