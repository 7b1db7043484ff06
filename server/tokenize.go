package server

import (
	"encoding/json"
	"net/http"

	"github.com/troupe-llm/troupe/server/openai"
	"github.com/troupe-llm/troupe/server/pipeline"
)

// tokenizeRequest is vLLM's: a prompt, or messages rendered with the chat
// template as /v1/chat/completions renders them.
type tokenizeRequest struct {
	Model               string                     `json:"model"`
	Prompt              *string                    `json:"prompt"`
	AddSpecialTokens    *bool                      `json:"add_special_tokens"`
	Messages            openai.Messages            `json:"messages"`
	AddGenerationPrompt *bool                      `json:"add_generation_prompt"`
	Tools               []json.RawMessage          `json:"tools"`
	ChatTemplateKwargs  map[string]json.RawMessage `json:"chat_template_kwargs"`
	ReasoningEffort     *string                    `json:"reasoning_effort"`
}

func (r *tokenizeRequest) model() string { return r.Model }

// tokenize serves POST /tokenize (vLLM's shape).
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if !s.read(w, r, &req) {
		return
	}
	var ids []int32
	switch {
	case req.Prompt != nil && req.Messages != nil:
		writeError(w, badRequest("messages", "give prompt or messages, not both"))
		return
	case req.Messages != nil:
		var e *apiError
		if ids, e = s.renderMessages(&req); e != nil {
			writeError(w, e)
			return
		}
	case req.Prompt != nil:
		add := req.AddSpecialTokens == nil || *req.AddSpecialTokens
		var err error
		if ids, err = s.tokenizeText(*req.Prompt, add); err != nil {
			writeError(w, tokenizeError("prompt", "tokenizing the prompt", err))
			return
		}
	default:
		writeError(w, badRequest("prompt", "prompt (a string) or messages (a conversation) is required"))
		return
	}
	if ids == nil {
		ids = []int32{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": ids, "count": len(ids), "max_model_len": s.rt.MaxModelLen()})
}

// renderMessages renders and tokenizes a /tokenize body's conversation as
// the chat route renders it.
func (s *Server) renderMessages(req *tokenizeRequest) ([]int32, *apiError) {
	if s.template == nil {
		return nil, s.noTemplate()
	}
	msgs, pe := req.Messages.ToPipeline()
	if pe != nil {
		return nil, badRequest(pe.Param, "%s", pe.Message)
	}
	p := &pipeline.Request{Messages: msgs, AddGenerationPrompt: req.AddGenerationPrompt, TemplateVars: req.ChatTemplateKwargs}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, pipeline.Tool{Raw: t})
	}
	if req.ReasoningEffort != nil {
		if *req.ReasoningEffort == "" {
			return nil, badRequest("reasoning_effort", `reasoning_effort "": want "low", "medium" or "high"`)
		}
		p.Reasoning.Effort = *req.ReasoningEffort
	}
	ids, _, e := s.pipelineRender(p)
	return ids, e
}

type detokenizeRequest struct {
	Model  string  `json:"model"`
	Tokens []int32 `json:"tokens"`
}

func (r *detokenizeRequest) model() string { return r.Model }

// detokenize serves POST /detokenize.
func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req detokenizeRequest
	if !s.read(w, r, &req) {
		return
	}
	text, err := s.rt.Detokenize(req.Tokens)
	if err != nil {
		writeError(w, userError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"prompt": text})
}
