package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
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

// loadLoRARoute serves vLLM's POST /v1/load_lora_adapter {lora_name,
// lora_path}: the adapter becomes a model name that runs its base model
// (the one served, or base_model_name) with it. The base model is loaded
// with it now, so a bad adapter is this request's 400.
func (m *Manager) loadLoRARoute(w http.ResponseWriter, r *http.Request) {
	var b struct {
		LoRAName  string `json:"lora_name"`
		LoRAPath  string `json:"lora_path"`
		BaseModel string `json:"base_model_name"`
	}
	if !m.runtimeLoRA(w) || !m.decode(w, r, &b, writeError) {
		return
	}
	if e := checkNames("lora_name", b.LoRAName, "lora_path", b.LoRAPath); e != nil {
		writeError(w, e)
		return
	}
	entries, err := m.entries()
	if err != nil {
		writeError(w, internal(err))
		return
	}
	base := b.BaseModel
	if base == "" {
		if len(entries) != 1 {
			writeError(w, badRequest("base_model_name", "base_model_name is required: this server serves %s", quoteList(sortedKeys(entries))))
			return
		}
		base = sortedKeys(entries)[0]
	}
	if _, err := os.Stat(b.LoRAPath); err != nil {
		writeError(w, badRequest("lora_path", "lora_path: %v", err))
		return
	}
	m.mu.Lock()
	r2, ok, _ := m.resolve(base)
	_, adapterTaken := m.adapters[b.LoRAName]
	_, modelTaken := entries[canonical(b.LoRAName)]
	switch {
	case !ok || r2.adapter != "":
		m.mu.Unlock()
		writeError(w, notFound("model_not_found", "base_model_name: the model %q does not exist", base))
		return
	case adapterTaken || modelTaken:
		m.mu.Unlock()
		writeError(w, badRequest("lora_name", "The lora adapter '%s' has already been loaded.", b.LoRAName))
		return
	}
	m.adapters[b.LoRAName] = runtimeAdapter{Name: b.LoRAName, Base: r2.entry.Name, Path: b.LoRAPath}
	m.mu.Unlock()
	in, _, e := m.acquire(r.Context(), b.LoRAName, true)
	if e != nil {
		m.mu.Lock()
		delete(m.adapters, b.LoRAName)
		m.mu.Unlock()
		if e.Status == http.StatusInternalServerError { // the load failed: the adapter is at fault
			e = badRequest("lora_path", "%s", e.Message)
		}
		writeError(w, e)
		return
	}
	m.release(in, nil)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", b.LoRAName)
}

// unloadLoRARoute serves vLLM's POST /v1/unload_lora_adapter {lora_name}:
// the name goes (its base model keeps the adapter at scale 0 until it
// reloads).
func (m *Manager) unloadLoRARoute(w http.ResponseWriter, r *http.Request) {
	var b struct {
		LoRAName string `json:"lora_name"`
		LoRAInt  *int   `json:"lora_int_id"`
	}
	if !m.runtimeLoRA(w) || !m.decode(w, r, &b, writeError) {
		return
	}
	m.mu.Lock()
	_, ok := m.adapters[b.LoRAName]
	delete(m.adapters, b.LoRAName)
	m.mu.Unlock()
	if !ok {
		writeError(w, notFound("model_not_found", "The lora adapter '%s' cannot be found.", b.LoRAName))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "Success: LoRA adapter '%s' removed successfully.", b.LoRAName)
}

// runtimeLoRA refuses the runtime LoRA routes unless they are enabled.
func (m *Manager) runtimeLoRA(w http.ResponseWriter) bool {
	if !m.cfg.RuntimeLoRA {
		writeError(w, notFound("", "loading LoRA adapters at runtime is off: start the server with --enable-lora-runtime (vLLM's VLLM_ALLOW_RUNTIME_LORA_UPDATING)"))
		return false
	}
	return true
}
