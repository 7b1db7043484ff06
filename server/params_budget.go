package server

import (
	"encoding/json"
	"fmt"

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
	{"lora", func(f *samplingFields, req *messages.GenerateRequest) *apiError {
		if len(f.LoRA) == 0 || string(f.LoRA) == "null" {
			return nil
		}
		refs, e := parseLoRA(f.LoRA)
		if e != nil {
			return e
		}
		req.LoRA = refs // the runtime checks ids and scales, naming lora[i]
		return nil
	}},
	// Read with "speculative" above.
	{"speculative.n_max", func(*samplingFields, *messages.GenerateRequest) *apiError { return nil }},
	{"speculative.n_min", func(*samplingFields, *messages.GenerateRequest) *apiError { return nil }},
	{"speculative.p_min", func(*samplingFields, *messages.GenerateRequest) *apiError { return nil }},
}

// parseLoRA reads llama-server's lora list: [{"id": int, "scale": number}],
// a missing scale 0. The result is never nil: [] is the base model.
func parseLoRA(raw json.RawMessage) ([]messages.LoRARef, *apiError) {
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("lora", `lora: want a list of {"id": integer, "scale": number}`)
	}
	refs := make([]messages.LoRARef, 0, len(list))
	for i, item := range list {
		var ref messages.LoRARef
		for k, v := range item {
			var err error
			switch k {
			case "id":
				err = json.Unmarshal(v, &ref.ID)
			case "scale":
				err = json.Unmarshal(v, &ref.Scale)
			default:
				return nil, badRequest(fmt.Sprintf("lora[%d].%s", i, k), "lora[%d]: unknown field %q (want id and scale)", i, k)
			}
			if err != nil {
				return nil, badRequest(fmt.Sprintf("lora[%d].%s", i, k), "lora[%d].%s: want a number (id an integer)", i, k)
			}
		}
		if _, ok := item["id"]; !ok {
			return nil, badRequest(fmt.Sprintf("lora[%d].id", i), "lora[%d]: id is required", i)
		}
		refs = append(refs, ref)
	}
	return refs, nil
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
