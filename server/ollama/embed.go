package ollama

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// Ollama's embedding routes: /api/embed (normalized vectors, a string or a
// list of strings) and the older /api/embeddings (one prompt, the vector
// as the model gives it).

// inputField is /api/embed's input: a string or a list of strings.
type inputField struct {
	texts []string
	set   bool
}

func (p *inputField) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		p.texts, p.set = []string{one}, true
		return nil
	}
	if json.Unmarshal(b, &p.texts) == nil {
		p.set = true
		return nil
	}
	return &pipeline.FieldError{Field: "input", Msg: "expected a string or a list of strings"}
}

type embedRequest struct {
	Model      string         `json:"model"`
	Input      inputField     `json:"input"`
	Truncate   *bool          `json:"truncate"`
	Dimensions *int           `json:"dimensions"`
	KeepAlive  any            `json:"keep_alive"`
	Options    map[string]any `json:"options"`
}

// model is the model a body names.
func (r *embedRequest) model() string { return r.Model }

type embeddingsRequest struct {
	Model     string         `json:"model"`
	Prompt    string         `json:"prompt"`
	KeepAlive any            `json:"keep_alive"`
	Options   map[string]any `json:"options"`
}

func (r *embeddingsRequest) model() string { return r.Model }

type embedResponse struct {
	Model           string      `json:"model"`
	Embeddings      [][]float32 `json:"embeddings"`
	TotalDuration   int64       `json:"total_duration"`
	LoadDuration    int64       `json:"load_duration"`
	PromptEvalCount int         `json:"prompt_eval_count"`
}

// embed serves POST /api/embed.
func (h *Handler) embed(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req embedRequest
	if !h.readModel(w, r, &req) {
		return
	}
	if !req.Input.set {
		WriteError(w, pipeline.Errorf("input", "input is required"))
		return
	}
	in := &pipeline.Embedding{Param: "input", Dimensions: req.Dimensions, Truncate: req.Truncate == nil || *req.Truncate}
	for _, t := range req.Input.texts {
		in.Inputs = append(in.Inputs, pipeline.Prompt{Text: t})
	}
	vecs, tokens, e := h.run.Embed(r.Context(), in)
	if e != nil {
		WriteError(w, e)
		return
	}
	pipeline.WriteJSON(w, http.StatusOK, embedResponse{Model: req.Model, Embeddings: vecs,
		TotalDuration: time.Since(start).Nanoseconds(), PromptEvalCount: tokens})
}

// embeddings serves POST /api/embeddings, Ollama's older route: one
// prompt, its vector not normalized; an empty prompt gives an empty vector.
func (h *Handler) embeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingsRequest
	if !h.readModel(w, r, &req) {
		return
	}
	if req.Prompt == "" {
		pipeline.WriteJSON(w, http.StatusOK, map[string][]float32{"embedding": {}})
		return
	}
	vecs, _, e := h.run.Embed(r.Context(), &pipeline.Embedding{Inputs: []pipeline.Prompt{{Text: req.Prompt}}, Param: "prompt", Truncate: true, Raw: true})
	if e != nil {
		WriteError(w, e)
		return
	}
	pipeline.WriteJSON(w, http.StatusOK, map[string][]float32{"embedding": vecs[0]})
}
