package server

import (
	"net/http"
)

type tokenizeRequest struct {
	Model            string `json:"model"`
	Prompt           string `json:"prompt"`
	AddSpecialTokens *bool  `json:"add_special_tokens"`
}

func (r *tokenizeRequest) model() string { return r.Model }

// tokenize serves POST /tokenize (vLLM's shape).
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if !s.read(w, r, &req) {
		return
	}
	add := req.AddSpecialTokens == nil || *req.AddSpecialTokens
	ids, err := s.rt.TokenizeText(req.Prompt, add, true)
	if err != nil {
		writeError(w, badRequest("prompt", "tokenizing: %v", err))
		return
	}
	if ids == nil {
		ids = []int32{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": ids, "count": len(ids), "max_model_len": s.rt.MaxModelLen()})
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
