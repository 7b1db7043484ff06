package troupe

import (
	"strconv"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// chatRequest is the pipeline's request for req.
func chatRequest(req *ChatRequest) (*pipeline.Request, error) {
	if req == nil {
		return nil, &Error{Kind: ErrInvalid, Message: "a nil request"}
	}
	if len(req.Messages) == 0 {
		return nil, &Error{Kind: ErrInvalid, Field: "Messages", Message: "at least one message is required"}
	}
	pr := &pipeline.Request{
		Messages:          make([]pipeline.Message, len(req.Messages)),
		ContinueFinal:     req.ContinueFinal,
		ToolChoice:        pipeline.ToolChoice{Mode: pipeline.ToolMode(req.ToolChoice.Mode), Name: req.ToolChoice.Name},
		ParallelToolCalls: req.ParallelToolCalls,
		Constraint:        constraint(req.JSON),
		Sampling:          sampling(&req.Sampling),
		Reasoning:         pipeline.Reasoning{Effort: req.Reasoning.Effort, Think: req.Reasoning.Think},
		Names:             fieldNames,
	}
	for i, m := range req.Messages {
		pm := pipeline.Message{Role: pipeline.Role(m.Role), Content: m.Content, Reasoning: m.Reasoning,
			ToolCallID: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			pm.ToolCalls = append(pm.ToolCalls, pipeline.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		pr.Messages[i] = pm
	}
	for _, t := range req.Tools {
		pr.Tools = append(pr.Tools, pipeline.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return pr, nil
}

// sampling is the pipeline's sampling part of s.
func sampling(s *Sampling) pipeline.Sampling {
	p := pipeline.Sampling{MaxTokens: s.MaxTokens, Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK,
		MinP: s.MinP, Stop: s.Stop, Seed: s.Seed, PresencePenalty: s.PresencePenalty, FrequencyPenalty: s.FrequencyPenalty,
		RepetitionPenalty: s.RepetitionPenalty, IgnoreEOS: s.IgnoreEOS}
	if s.LogitBias != nil {
		p.LogitBias = make(map[string]float64, len(s.LogitBias))
		for id, b := range s.LogitBias {
			p.LogitBias[strconv.Itoa(int(id))] = b
		}
	}
	p.LlamaSampling = pipeline.LlamaSampling{MinTokens: s.MinTokens, TypicalP: s.TypicalP,
		DryMultiplier: s.DryMultiplier, DryBase: s.DryBase, DryAllowedLen: s.DryAllowedLength, DryLastN: s.DryLastN,
		DryBreakers: s.DryBreakers, XTCProbability: s.XTCProbability, XTCThreshold: s.XTCThreshold,
		Mirostat: s.Mirostat, MirostatTau: s.MirostatTau, MirostatEta: s.MirostatEta}
	return p
}

// constraint is the pipeline's JSON constraint for f (nil: none).
func constraint(f *JSONFormat) *pipeline.Constraint {
	switch {
	case f == nil:
		return nil
	case len(f.Schema) == 0:
		return &pipeline.Constraint{Kind: pipeline.JSONObject, Param: "JSON"}
	}
	return &pipeline.Constraint{Kind: pipeline.JSONSchema, Schema: f.Schema, Param: "JSON.Schema"}
}
