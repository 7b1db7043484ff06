package server

import (
	"encoding/json"
	"net/http"
)

// loraAdapter is one adapter in llama-server's /lora-adapters shape.
type loraAdapter struct {
	ID    int     `json:"id"`
	Path  string  `json:"path"`
	Scale float32 `json:"scale"`
}

// loraAdapters serves GET /lora-adapters: the loaded adapters (--lora) and
// the scale a request without a lora field runs them at.
func (s *Server) loraAdapters(w http.ResponseWriter, r *http.Request) {
	out := []loraAdapter{}
	for _, a := range s.rt.LoRAAdapters() {
		out = append(out, loraAdapter{a.ID, a.Path, a.Scale})
	}
	writeJSON(w, http.StatusOK, out)
}

// setLoRAAdapters serves POST /lora-adapters, [{"id", "scale"}]: the new
// default scales (adapters left out: 0), as llama-server's route sets
// them; running requests keep theirs.
func (s *Server) setLoRAAdapters(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if e := s.decodeBudgeted(w, r, &raw); e != nil {
		writeError(w, e)
		return
	}
	refs, e := parseLoRA(raw)
	if e != nil {
		writeError(w, e)
		return
	}
	if err := s.rt.SetLoRAScales(refs); err != nil {
		writeError(w, userError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"success": true})
}
