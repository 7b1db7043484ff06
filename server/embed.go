package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/troupe-llm/troupe/actors"
)

// maxEmbedInputs bounds the inputs of one embeddings request (OpenAI's
// limit is 2048).
const maxEmbedInputs = 2048

// embedInputField is OpenAI's embeddings input: a string, a list of
// strings, a list of token ids, or a list of such lists. Each entry is one
// input.
type embedInputField struct {
	texts []string
	ids   [][]int32
	set   bool
}

func (p *embedInputField) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		p.texts, p.set = []string{one}, true
		return nil
	}
	var texts []string
	if json.Unmarshal(b, &texts) == nil && len(texts) > 0 {
		p.texts, p.set = texts, true
		return nil
	}
	var ids []int32
	if json.Unmarshal(b, &ids) == nil && len(ids) > 0 {
		p.ids, p.set = [][]int32{ids}, true
		return nil
	}
	var lists [][]int32
	if json.Unmarshal(b, &lists) == nil && len(lists) > 0 {
		p.ids, p.set = lists, true
		return nil
	}
	return &fieldError{"input", "expected a string, a list of strings, a list of token ids, or a list of such lists, not empty"}
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

// embeddings serves POST /v1/embeddings (OpenAI's shape).
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingsRequest
	if !s.read(w, r, &req) {
		return
	}
	if !req.Input.set {
		writeError(w, badRequest("input", "input is required"))
		return
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		writeError(w, badRequest("encoding_format", "encoding_format %q: expected \"float\" or \"base64\"", req.EncodingFormat))
		return
	}
	if dim := s.rt.Model().Config.Dim; req.Dimensions != nil && *req.Dimensions != dim {
		writeError(w, badRequest("dimensions", "this model's embeddings have %d dimensions and cannot be shortened (dimensions %d)", dim, *req.Dimensions))
		return
	}
	inputs, e := s.embedInputs(req.Input.texts, req.Input.ids, "input")
	if e != nil {
		writeError(w, e)
		return
	}
	vecs, tokens, e := s.embed(r.Context(), inputs, actors.EmbedOptions{})
	if e != nil {
		writeError(w, e)
		return
	}
	resp := embeddingsResponse{Object: "list", Model: s.cfg.ModelName, Data: make([]embeddingData, len(vecs)),
		Usage: embeddingsUsage{PromptTokens: tokens, TotalTokens: tokens}}
	for i, v := range vecs {
		d := embeddingData{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			d.Embedding = base64Floats(v)
		}
		resp.Data[i] = d
	}
	writeJSON(w, http.StatusOK, resp)
}

// embedInputs tokenizes texts (special tokens added and parsed, as
// llama-embedding does) and checks token-id inputs' count.
func (s *Server) embedInputs(texts []string, ids [][]int32, param string) ([][]int32, *apiError) {
	if n := len(texts) + len(ids); n > maxEmbedInputs {
		return nil, badRequest(param, "at most %d inputs per request (got %d)", maxEmbedInputs, n)
	}
	out := make([][]int32, 0, len(texts)+len(ids))
	for i, t := range texts {
		if t == "" {
			return nil, badRequest(param, "input %d is an empty string", i)
		}
		toks, err := s.rt.TokenizeText(t, true, true)
		if err != nil {
			return nil, badRequest(param, "tokenizing input %d: %v", i, err)
		}
		out = append(out, toks)
	}
	return append(out, ids...), nil
}

// embed runs the inputs through the runtime within the request timeout and
// returns the vectors and the tokens they took.
func (s *Server) embed(ctx context.Context, inputs [][]int32, opts actors.EmbedOptions) ([][]float32, int, *apiError) {
	if s.cfg.RequestTimeout > 0 {
		var stop func() bool
		ctx, stop = withDeadline(ctx, s.cfg.RequestTimeout)
		defer stop()
	}
	start := time.Now()
	vecs, usage, err := s.rt.Embed(ctx, inputs, opts)
	switch {
	case err == nil:
	case errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return nil, 0, &apiError{Status: http.StatusRequestTimeout, Type: "timeout_error", Code: strp("request_timeout"),
			Message: fmt.Sprintf("the request ran past the server's limit of %v (--request-timeout)", s.cfg.RequestTimeout)}
	case errors.Is(err, actors.ErrNoEmbeddings):
		return nil, 0, badRequest("", "%v", err)
	default:
		return nil, 0, userError(err)
	}
	s.metrics.promptTokens.Add(float64(usage.PromptTokens))
	s.metrics.e2e.Observe(time.Since(start).Seconds())
	return vecs, usage.PromptTokens, nil
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

// generation refuses a generation route with a 400 when the served model is
// an encoder (embeddings only).
func (s *Server) generation(next http.HandlerFunc) http.HandlerFunc {
	c := &s.rt.Model().Config
	if !c.Encoder {
		return next
	}
	use := "computes embeddings only; use /v1/embeddings or /api/embed"
	if s.rt.Reranker() == nil {
		use = "reranks only; use /v1/rerank" // rerank.go
	}
	return func(w http.ResponseWriter, r *http.Request) {
		writeError(w, badRequest("model", "the served model %q (%s) %s", s.cfg.ModelName, c.Arch, use))
	}
}
