package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/server/chat"
	"github.com/troupe-llm/troupe/server/toolcall"
)

// ollamaModel describes the served model as Ollama's /api/tags, /api/show
// and /api/ps do, from what the runtime knows of it (the server reads no
// model file itself).
type ollamaModel struct {
	s        *Server
	size     int64     // bytes of the model's file(s)
	modified time.Time // the file's modification time
	// digest identifies the model: a SHA-256 over its path, size and
	// modification time, not over its bytes (hashing gigabytes at start-up
	// is not worth what clients do with it: show it).
	digest  string
	details ollamaDetails
	info    map[string]any // model_info: GGUF-style keys of the hyperparameters
	tmpl    string         // the chat template's source
	// tools: the template renders tools and troupe knows its calls'
	// format (Ollama's "tools" capability); thinking: it reasons apart
	// from its answer ("thinking").
	tools, thinking bool
}

type ollamaDetails struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

func newOllamaModel(s *Server) *ollamaModel {
	m := s.rt.Model()
	c := m.Config
	om := &ollamaModel{s: s, tmpl: s.cfg.ChatTemplate, thinking: s.thinks}
	om.tools = s.CallsTools()
	if om.tmpl == "" {
		om.tmpl = s.rt.ChatTemplate()
	}
	format := "gguf"
	if st, err := os.Stat(m.Path); err == nil {
		om.modified = st.ModTime().UTC()
		om.size = st.Size()
		if st.IsDir() { // a safetensors checkpoint
			format, om.size = "safetensors", dirSize(m.Path)
		}
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", m.Path, om.size, om.modified.UnixNano()))
	om.digest = hex.EncodeToString(sum[:])
	// Parameters of the dense transformer the Config describes (biases
	// and norms aside from the per-layer ones): embeddings, attention,
	// feed-forward, norms, and the output unless tied.
	q, kv := c.Heads*c.HeadDim, c.KVDim()
	params := int64(c.VocabSize*c.Dim) + int64(c.Layers)*int64(2*c.Dim*q+2*c.Dim*kv+3*c.Dim*c.FFNDim+2*c.Dim) + int64(c.Dim)
	if !c.TiedOutput {
		params += int64(c.VocabSize * c.Dim)
	}
	quant := ""
	if w := m.Weights; w != nil && len(w.Layers) > 0 && w.Layers[0].Q != nil {
		quant = fmt.Sprint(w.Layers[0].Q.Type)
	}
	om.details = ollamaDetails{Format: format, Family: c.Arch, Families: []string{c.Arch},
		ParameterSize: humanCount(params), QuantizationLevel: quant}
	a := c.Arch + "."
	om.info = map[string]any{
		"general.architecture":                 c.Arch,
		"general.parameter_count":              params,
		a + "context_length":                   c.ContextLen,
		a + "embedding_length":                 c.Dim,
		a + "block_count":                      c.Layers,
		a + "feed_forward_length":              c.FFNDim,
		a + "attention.head_count":             c.Heads,
		a + "attention.head_count_kv":          c.KVHeads,
		a + "attention.key_length":             c.HeadDim,
		a + "attention.value_length":           c.HeadDim,
		a + "attention.layer_norm_rms_epsilon": c.NormEps,
		a + "rope.dimension_count":             c.RopeDim,
		a + "rope.freq_base":                   c.RopeBase,
		a + "vocab_size":                       c.VocabSize,
	}
	return om
}

// dirSize is the bytes of the files directly in dir.
func dirSize(dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n
}

// humanCount writes a parameter count as Ollama does: 7.6B, 135M, 260K.
func humanCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0fK", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// summary is the model as /api/tags lists it.
func (m *ollamaModel) summary() map[string]any {
	name := m.s.ollamaName()
	return map[string]any{"name": name, "model": name, "modified_at": m.modified, "size": m.size,
		"digest": m.digest, "details": m.details}
}

// tags serves GET /api/tags: the one served model.
func (m *ollamaModel) tags(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"models": []any{m.summary()}})
}

// ps serves GET /api/ps: the served model, loaded for as long as the
// server runs.
func (m *ollamaModel) ps(w http.ResponseWriter, r *http.Request) {
	p := m.summary()
	delete(p, "modified_at")
	vram := int64(0)
	if m.s.rt.Device() == "cuda" {
		vram = m.size
	}
	p["expires_at"] = ollamaForever
	p["size_vram"] = vram
	p["context_length"] = m.s.rt.MaxModelLen()
	writeJSON(w, http.StatusOK, map[string]any{"models": []any{p}})
}

// ollamaForever is the expires_at of a model that is never unloaded.
var ollamaForever = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

type ollamaShowRequest struct {
	Model   string `json:"model"`
	Name    string `json:"name"` // the field's older name
	Verbose bool   `json:"verbose"`
}

func (r *ollamaShowRequest) model() string {
	if r.Model == "" {
		return r.Name
	}
	return r.Model
}

// show serves POST /api/show.
func (m *ollamaModel) show(w http.ResponseWriter, r *http.Request) {
	var req ollamaShowRequest
	if !m.s.readOllama(w, r, &req) {
		return
	}
	var params strings.Builder
	fmt.Fprintf(&params, "num_ctx %d", m.s.rt.MaxModelLen())
	modelfile := fmt.Sprintf("# Modelfile of the model troupe serves\nFROM %s\nPARAMETER %s\n", filepath.Base(m.s.rt.Model().Path), params.String())
	writeJSON(w, http.StatusOK, map[string]any{
		"modelfile":    modelfile,
		"parameters":   params.String(),
		"license":      "",
		"template":     m.tmpl,
		"modified_at":  m.modified,
		"details":      m.details,
		"model_info":   m.info,
		"capabilities": m.capabilities(),
	})
}

// capabilities are the model's, named as Ollama names them.
func (m *ollamaModel) capabilities() []string {
	caps := []string{"completion"}
	if m.tools {
		caps = append(caps, "tools")
	}
	if m.thinking {
		caps = append(caps, "thinking")
	}
	return caps
}

// rendersTools reports whether the chat template shows the model the
// tools it is offered: a conversation renders with a tool, and otherwise
// than without one (some tool-use templates fail without tools).
func (s *Server) rendersTools() bool {
	if s.template == nil {
		return false
	}
	bos, eos := s.rt.SpecialTokens()
	render := func(tools []json.RawMessage) (string, error) {
		o := chat.Options{AddGenerationPrompt: true, BOSToken: bos, EOSToken: eos}
		for _, t := range tools {
			o.Tools = append(o.Tools, t)
		}
		s.toolVariables(&o, tools)
		return s.template.Render([]chat.Message{{Role: "user", Content: "Hello"}}, o)
	}
	plain, errPlain := render(nil)
	with, err := render([]json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
		"parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city"}}, "required": ["city"]}}}`)})
	return err == nil && (errPlain != nil || with != plain)
}

// CallsTools reports whether the chat template renders tools and troupe
// knows its calls' format (Ollama's "tools" capability).
func (s *Server) CallsTools() bool { return s.toolFormat != toolcall.None && s.rendersTools() }

// HasTemplate reports whether the model has a usable chat template.
func (s *Server) HasTemplate() bool { return s.template != nil }
