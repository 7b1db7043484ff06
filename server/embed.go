package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/server/pipeline"
)

// maxEmbedInputs bounds the inputs of one embeddings request (OpenAI's
// limit is 2048).
const maxEmbedInputs = 2048

// Embed is the pipeline's embeddings call: admitted, its inputs
// tokenized and embedded within the request timeout.
func (s *Server) Embed(ctx context.Context, req *pipeline.Embedding) ([][]float32, int, *pipeline.Error) {
	if e := s.admit(); e != nil {
		return nil, 0, toPipelineError(e, nil)
	}
	defer s.release()
	if dim := s.rt.Info().Dim; req.Dimensions != nil && *req.Dimensions != dim {
		return nil, 0, pipeline.Errorf("dimensions", "this model's embeddings have %d dimensions and cannot be shortened (dimensions %d)", dim, *req.Dimensions)
	}
	var texts []string
	var ids [][]int32
	for _, p := range req.Inputs {
		if p.IDs != nil {
			ids = append(ids, p.IDs)
		} else {
			texts = append(texts, p.Text)
		}
	}
	inputs, e := s.embedInputs(texts, ids, req.Param)
	if e == nil {
		e = s.truncate(inputs, req.Truncate)
	}
	if e != nil {
		return nil, 0, toPipelineError(e, nil)
	}
	if len(inputs) == 0 {
		return [][]float32{}, 0, nil
	}
	vecs, tokens, e := s.embed(ctx, inputs, actors.EmbedOptions{Raw: req.Raw})
	return vecs, tokens, toPipelineError(e, nil)
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

// MaxModelLen is the served context, in tokens.
func (s *Server) MaxModelLen() int { return s.rt.MaxModelLen() }

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

// generation refuses a generation route with a 400 when the served model is
// an encoder (embeddings only).
func (s *Server) generation(next http.HandlerFunc) http.HandlerFunc {
	c := s.rt.Info()
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
