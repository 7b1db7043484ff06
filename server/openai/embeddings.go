package openai

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// embedInputField is OpenAI's embeddings input: a string, a list of
// strings, a list of token ids, or a list of such lists. Each entry is one
// input.
type embedInputField struct {
	inputs []pipeline.Prompt
	set    bool
}

func (p *embedInputField) UnmarshalJSON(b []byte) error {
	var pf promptField
	if err := pf.UnmarshalJSON(b); err != nil {
		return &pipeline.FieldError{Field: "input", Msg: "expected a string, a list of strings, a list of token ids, or a list of such lists, not empty"}
	}
	p.inputs, p.set = pf, true
	return nil
}

type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          embedInputField `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
}

func (r *embeddingsRequest) model() string { return r.Model }

type embeddingData struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string of little-endian float32s
}

type embeddingsUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type embeddingsResponse struct {
	Object string          `json:"object"`
	Data   []embeddingData `json:"data"`
	Model  string          `json:"model"`
	Usage  embeddingsUsage `json:"usage"`
}

// embeddings serves POST /v1/embeddings.
func (h *Handler) embeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingsRequest
	if !h.read(w, r, &req) {
		return
	}
	if !req.Input.set {
		WriteError(w, pipeline.Errorf("input", "input is required"))
		return
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		WriteError(w, pipeline.Errorf("encoding_format", "encoding_format %q: expected \"float\" or \"base64\"", req.EncodingFormat))
		return
	}
	vecs, tokens, e := h.run.Embed(r.Context(), &pipeline.Embedding{Inputs: req.Input.inputs, Param: "input", Dimensions: req.Dimensions})
	if e != nil {
		WriteError(w, e)
		return
	}
	resp := embeddingsResponse{Object: "list", Model: h.run.Model(), Data: make([]embeddingData, len(vecs)),
		Usage: embeddingsUsage{PromptTokens: tokens, TotalTokens: tokens}}
	for i, v := range vecs {
		d := embeddingData{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			d.Embedding = base64Floats(v)
		}
		resp.Data[i] = d
	}
	pipeline.WriteJSON(w, http.StatusOK, resp)
}

// base64Floats is v as little-endian float32 bytes in base64 (OpenAI's
// encoding_format "base64").
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}
