package ollama

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// Model describes the served model as Ollama's /api/tags, /api/show and
// /api/ps do; the server fills it from what the runtime knows.
type Model struct {
	Name     string    // the served name
	Size     int64     // bytes of the model's file(s)
	Modified time.Time // the file's modification time
	// Digest identifies the model (the server's choice of hash).
	Digest   string
	Details  Details
	Info     map[string]any // model_info: GGUF-style keys of the hyperparameters
	Template string         // the chat template's source
	File     string         // the model file's name, for the Modelfile
	// Tools: the template renders tools and their calls' format is known
	// (Ollama's "tools" capability); Thinking: it reasons apart from its
	// answer ("thinking").
	Tools, Thinking bool
	Vision          bool // a projector is loaded: images are taken ("vision")
	VRAM            bool // loaded on a GPU: /api/ps's size_vram is Size
	ContextLength   int
	// Options are the options a request's own override: the server's
	// sampling defaults (serve's --temp and its kin, a Modelfile's
	// PARAMETERs) under Ollama's names. Where neither gives one, Ollama's
	// defaults apply.
	Options map[string]json.RawMessage
}

// Details are a model's details object.
type Details struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

// summary is the model as /api/tags lists it.
func (m *Model) summary() map[string]any {
	name := Name(m.Name)
	return map[string]any{"name": name, "model": name, "modified_at": m.Modified, "size": m.Size,
		"digest": m.Digest, "details": m.Details}
}

// tags serves GET /api/tags: the one served model.
func (h *Handler) tags(w http.ResponseWriter, r *http.Request) {
	pipeline.WriteJSON(w, http.StatusOK, map[string]any{"models": []any{h.model.summary()}})
}

// ps serves GET /api/ps: the served model, loaded for as long as the
// server runs.
func (h *Handler) ps(w http.ResponseWriter, r *http.Request) {
	m := h.model
	p := m.summary()
	delete(p, "modified_at")
	vram := int64(0)
	if m.VRAM {
		vram = m.Size
	}
	p["expires_at"] = forever
	p["size_vram"] = vram
	p["context_length"] = m.ContextLength
	pipeline.WriteJSON(w, http.StatusOK, map[string]any{"models": []any{p}})
}

// forever is the expires_at of a model that is never unloaded.
var forever = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

type showRequest struct {
	Model   string `json:"model"`
	Name    string `json:"name"` // the field's older name
	Verbose bool   `json:"verbose"`
}

func (r *showRequest) model() string {
	if r.Model == "" {
		return r.Name
	}
	return r.Model
}

// show serves POST /api/show.
func (h *Handler) show(w http.ResponseWriter, r *http.Request) {
	var req showRequest
	if !h.readModel(w, r, &req) {
		return
	}
	m := h.model
	var params strings.Builder
	fmt.Fprintf(&params, "num_ctx %d", m.ContextLength)
	modelfile := fmt.Sprintf("# Modelfile of the model troupe serves\nFROM %s\nPARAMETER %s\n", m.File, params.String())
	pipeline.WriteJSON(w, http.StatusOK, map[string]any{
		"modelfile":    modelfile,
		"parameters":   params.String(),
		"license":      "",
		"template":     m.Template,
		"modified_at":  m.Modified,
		"details":      m.Details,
		"model_info":   m.Info,
		"capabilities": m.capabilities(),
	})
}

// capabilities are the model's, named as Ollama names them.
func (m *Model) capabilities() []string {
	caps := []string{"completion"}
	if m.Tools {
		caps = append(caps, "tools")
	}
	if m.Thinking {
		caps = append(caps, "thinking")
	}
	if m.Vision {
		caps = append(caps, "vision")
	}
	return caps
}

// version serves GET and HEAD /api/version.
func (h *Handler) version(w http.ResponseWriter, r *http.Request) {
	pipeline.WriteJSON(w, http.StatusOK, map[string]string{"version": Version})
}
