package server

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/troupe-llm/troupe/actors"
)

// Ollama's embedding routes: /api/embed (normalized vectors, a string or a
// list of strings) and the older /api/embeddings (one prompt, the vector
// as the model gives it). Errors are Ollama's {"error": "..."}.

// ollamaInputField is /api/embed's input: a string or a list of strings.
type ollamaInputField struct {
	texts []string
	set   bool
}

func (p *ollamaInputField) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		p.texts, p.set = []string{one}, true
		return nil
	}
	if json.Unmarshal(b, &p.texts) == nil {
		p.set = true
		return nil
	}
	return &fieldError{"input", "expected a string or a list of strings"}
}

type ollamaEmbedRequest struct {
	Model      string           `json:"model"`
	Input      ollamaInputField `json:"input"`
	Truncate   *bool            `json:"truncate"`
	Dimensions *int             `json:"dimensions"`
	KeepAlive  any              `json:"keep_alive"`
	Options    map[string]any   `json:"options"`
}

func (r *ollamaEmbedRequest) model() string { return r.Model }

type ollamaEmbedResponse struct {
	Model           string      `json:"model"`
	Embeddings      [][]float32 `json:"embeddings"`
	TotalDuration   int64       `json:"total_duration"`
	LoadDuration    int64       `json:"load_duration"`
	PromptEvalCount int         `json:"prompt_eval_count"`
}

type ollamaEmbeddingsRequest struct {
	Model     string         `json:"model"`
	Prompt    string         `json:"prompt"`
	KeepAlive any            `json:"keep_alive"`
	Options   map[string]any `json:"options"`
}

func (r *ollamaEmbeddingsRequest) model() string { return r.Model }

// ollamaEmbed serves POST /api/embed.
func (s *Server) ollamaEmbed(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req ollamaEmbedRequest
	if !s.readOllama(w, r, &req) {
		return
	}
	if !req.Input.set {
		writeOllamaError(w, badRequest("input", "input is required"))
		return
	}
	if dim := s.rt.Model().Config.Dim; req.Dimensions != nil && *req.Dimensions != dim {
		writeOllamaError(w, badRequest("dimensions", "this model's embeddings have %d dimensions and cannot be shortened (dimensions %d)", dim, *req.Dimensions))
		return
	}
	inputs, e := s.embedInputs(req.Input.texts, nil, "input")
	if e == nil {
		e = s.truncate(inputs, req.Truncate == nil || *req.Truncate)
	}
	var vecs [][]float32
	var tokens int
	if e == nil && len(inputs) > 0 {
		vecs, tokens, e = s.embed(r.Context(), inputs, actors.EmbedOptions{})
	}
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	if vecs == nil {
		vecs = [][]float32{}
	}
	writeJSON(w, http.StatusOK, ollamaEmbedResponse{Model: s.ollamaModelName(req.Model), Embeddings: vecs,
		TotalDuration: time.Since(start).Nanoseconds(), PromptEvalCount: tokens})
}

// truncate cuts inputs longer than the context to fit it (Ollama's
// truncate, the default), or refuses them.
func (s *Server) truncate(inputs [][]int32, truncate bool) *apiError {
	limit := s.rt.MaxModelLen()
	for i, in := range inputs {
		if len(in) <= limit {
			continue
		}
		if !truncate {
			return badRequest("input", "input %d has %d tokens, more than the context length (%d); set truncate to cut it", i, len(in), limit)
		}
		inputs[i] = in[:limit]
	}
	return nil
}

// ollamaEmbeddings serves POST /api/embeddings, Ollama's older route: one
// prompt, its vector not normalized; an empty prompt gives an empty vector.
func (s *Server) ollamaEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req ollamaEmbeddingsRequest
	if !s.readOllama(w, r, &req) {
		return
	}
	if req.Prompt == "" {
		writeJSON(w, http.StatusOK, map[string][]float32{"embedding": {}})
		return
	}
	inputs, e := s.embedInputs([]string{req.Prompt}, nil, "prompt")
	if e == nil {
		e = s.truncate(inputs, true)
	}
	var vecs [][]float32
	if e == nil {
		vecs, _, e = s.embed(r.Context(), inputs, actors.EmbedOptions{Raw: true})
	}
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string][]float32{"embedding": vecs[0]})
}

// ollamaModelName is the name an /api response gives the model: the one the
// client asked for, else the served name.
func (s *Server) ollamaModelName(asked string) string {
	if asked != "" {
		return asked
	}
	return s.cfg.ModelName
}
