package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/troupe-llm/troupe/server/chat"
	"github.com/troupe-llm/troupe/server/ollama"
	"github.com/troupe-llm/troupe/server/toolcall"
)

// newOllamaModel describes the served model for Ollama's /api/tags,
// /api/show and /api/ps, from what the runtime knows of it (the server
// reads no model file itself).
func newOllamaModel(s *Server) *ollama.Model {
	c := s.rt.Info()
	om := &ollama.Model{Name: s.cfg.ModelName, Template: s.cfg.ChatTemplate, Thinking: s.thinks, File: filepath.Base(c.Path),
		ContextLength: s.rt.MaxModelLen(), VRAM: s.rt.Device() == "cuda"}
	om.Tools = s.toolFormat != toolcall.None && s.rendersTools()
	om.Vision = s.rt.HasImageEncoder()
	om.Options = s.cfg.Defaults.ollamaOptions()
	if om.Template == "" {
		om.Template = s.rt.ChatTemplate()
	}
	format := "gguf"
	if st, err := os.Stat(c.Path); err == nil {
		om.Modified = st.ModTime().UTC()
		om.Size = st.Size()
		if st.IsDir() { // a safetensors checkpoint
			format, om.Size = "safetensors", dirSize(c.Path)
		}
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", c.Path, om.Size, om.Modified.UnixNano()))
	om.Digest = hex.EncodeToString(sum[:])
	om.Details = ollama.Details{Format: format, Family: c.Arch, Families: []string{c.Arch},
		ParameterSize: humanCount(c.Params), QuantizationLevel: c.WeightType}
	a := c.Arch + "."
	om.Info = map[string]any{
		"general.architecture":                 c.Arch,
		"general.parameter_count":              c.Params,
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

// HasTemplate reports whether the model has a usable chat template.
func (s *Server) HasTemplate() bool { return s.template != nil }
